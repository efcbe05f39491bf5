// The connections of `hogwild serve` up to the moment a request is whole (docs/SERVER.md
// "Limits"). cpp-httplib 0.11 gives every connection a pool thread that blocks while the client
// sends its request, so a few hundred slow or idle clients hold every thread (and /health with
// them); its listen backlog is 5, it binds with SO_REUSEPORT (a second server on the same port
// starts and takes half the traffic), and it reads chunked bodies whole whatever their size. The
// reception replaces its accept path:
//
//   - one thread accepts (backlog SOMAXCONN) and reads every connection, non-blocking (epoll),
//     until its request is whole: the head within head_timeout_s of its first byte (or of the
//     connection), the body within body_timeout_s of the head; idle keep-alive connections close
//     after keep_alive_s. Slow clients cost a buffer, never a thread.
//   - it answers at once, in the API's JSON error shape, and closes: 400 for a malformed head or
//     Content-Length, 413 as soon as a body (Content-Length or the chunks read so far) passes
//     max_body_bytes, 408 past a deadline, 431 for a head over 64 KiB, 501 for a transfer coding
//     other than chunked, 503 when the bodies being received hold max_buffered_bytes. At
//     max_connections, the connections that waited longest without sending a whole head are
//     closed to make room (503 only when every connection has a request).
//   - a whole request (a chunked body decoded, its length then given as Content-Length) goes to
//     one of `threads` worker threads, which hands it to the handler; a keep-alive connection then
//     comes back to be read again.
//
// The request framing is http_parse.h's; the stream a worker hands the handler, conn_stream.h's.
// Linux only (epoll, eventfd).
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "server/http_parse.h"

namespace hogwild::server {

struct ReceptionOptions {
  size_t max_body_bytes = 4u << 20;  // decoded body bytes; more is 413
  int head_timeout_s = 10;           // request line and headers, from the first byte
  int body_timeout_s = 30;           // the body, from the end of the head
  int keep_alive_s = 5;              // an idle connection between requests closes after this
  int write_timeout_s = 30;          // a client must take response bytes within this
  size_t threads = 64;               // worker threads: requests handled at once
  size_t max_connections = 0;        // open connections; 0 = from the open-file limit
  size_t max_buffered_bytes = 0;     // bytes of requests being received; 0 = max(256 MiB, 8 bodies)
  size_t max_requests_per_connection = 1000;
};

/// What the reception refused itself (for the request log and the error counters).
struct Refusal {
  std::string remote_addr, method, path;  // method and path "" when the head was not read
  int status = 0;
};

class Reception {
 public:
  /// handle(stream, close_connection, connection_closed): serves the one whole request that
  /// `stream` yields (httplib::Server::process_request); sets connection_closed when the
  /// connection must not be reused; returns false when writing the response failed.
  using Handler =
      std::function<bool(httplib::Stream&, bool close_connection, bool& connection_closed)>;
  Reception(ReceptionOptions o, Handler handle, std::function<void(const Refusal&)> on_refusal);
  ~Reception();
  Reception(const Reception&) = delete;
  Reception& operator=(const Reception&) = delete;

  /// Binds host:port (port 0: any free port) and listens, without SO_REUSEPORT: a port where
  /// another socket listens is refused. Returns the bound port. Throws hogwild::Error naming the
  /// cause ("port in use", an address that does not resolve or cannot be bound).
  int bind(const std::string& host, int port);
  /// Starts the reception thread and the workers. PRECONDITION: bind() succeeded.
  void start();
  /// Stops accepting, closes the connections not being handled, lets the workers finish the
  /// requests they handle, and joins every thread. Idempotent.
  void stop();
  bool running() const { return running_.load(); }

  /// The socket of the request the calling thread handles (a worker inside the handler), else -1.
  static int current_socket();
  /// When the request the calling thread handles was read whole (before it waited for a worker),
  /// else the epoch.
  static std::chrono::steady_clock::time_point current_request_whole();

  /// Connections open now (being received, waiting for a worker, or handled).
  size_t open_connections() const { return open_.load(); }

 private:
  struct Conn;
  void loop();  // the reception thread: accepts, reads, parses, refuses, hands over
  void work();  // a worker thread: handles whole requests
  void wake();  // wakes the reception thread (a connection came back)

  // The reception thread's steps (reception.cpp says what each does).
  void accept_connections();
  void resume_accepting();
  void take_back();
  void receive(Conn* c);
  void progress(Conn* c);
  Framing parse(Conn* c);
  Framing read_head(Conn* c);
  Framing read_length_body(Conn* c);
  Framing read_chunked_body(Conn* c);
  void answer(Conn* c, const HttpRefusal& refusal, bool linger);
  void expire(int64_t now);
  void evict(Conn* keep);
  void arm(Conn* c, bool fresh);
  Conn* own(std::unique_ptr<Conn> c);
  void hand_over(Conn* c);
  void drop(Conn* c);

  ReceptionOptions opt_;
  Handler handle_;
  std::function<void(const Refusal&)> on_refusal_;
  int listen_fd_ = -1, epoll_fd_ = -1, wake_fd_ = -1;
  std::atomic<bool> running_{false}, stopping_{false};
  std::atomic<size_t> open_{0};
  // Reception thread only: the connections being read (owned here until handed to a worker),
  // the bytes their requests hold, and accepting paused (out of descriptors) until accept_resume_.
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  size_t buffered_ = 0;
  bool accept_paused_ = false;
  int64_t accept_resume_ = 0;  // ms (steady clock)

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Conn>> ready_;     // whole requests waiting for a worker
  std::deque<std::unique_ptr<Conn>> returned_;  // keep-alive connections back from workers
  std::thread thread_;
  std::vector<std::thread> workers_;
};

}  // namespace hogwild::server
