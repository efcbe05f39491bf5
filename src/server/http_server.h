// `hogwild serve`'s HTTP layer on cpp-httplib (docs/SERVER.md): routes, API key, limits, the
// request log, /health, /v1/models, /metrics, the completion endpoints (streaming and not), live
// steering and the embedded web page. It answers 503 until set_ready() (the model loads in the
// meantime) and again once draining.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "server/prompting.h"
#include "server/reception.h"
#include "server/request.h"
#include "server/scheduler.h"

namespace hogwild::server {

struct ServerOptions {
  std::string host = "127.0.0.1";    // loopback unless asked
  int port = 8080;                   // 0 = any free port (bound_port() tells which)
  std::string api_key;               // "" = no key required
  size_t max_body_bytes = 4u << 20;  // larger request bodies get 413
  size_t threads = 64;               // HTTP worker threads; each open stream holds one
  int head_timeout_s = 10;           // request line and headers must arrive within this
  int body_timeout_s = 30;           // the body must arrive within this of the head
  int write_timeout_s = 30;          // a client must take the response's bytes within this
  int keep_alive_s = 5;              // idle keep-alive connections close after this
  size_t max_connections = 0;        // open connections; 0 = from the open-file limit
  RequestLimits limits;
  bool log_requests = true;  // one line per request on stderr
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions o);
  ~HttpServer();

  /// Binds host:port (never sharing it: a port where another socket listens is refused).
  /// Throws hogwild::Error saying why it cannot ("port in use", an address that does not resolve).
  void bind();
  int bound_port() const { return port_; }
  /// Serves on background threads (the reception and the workers) until stop().
  void start();
  /// The model is loaded: /health answers 200 and the API works. PRECONDITION: model and
  /// scheduler outlive the server.
  void set_ready(const ServedModel* model, Scheduler* scheduler);
  /// Shutting down: /health and new completions answer 503.
  void set_draining();
  void stop();

 private:
  /// Installs every handler: the API key check, error and exception pages, the request log,
  /// then api_routes and page_and_method_routes.
  void routes();
  /// /health, /metrics, /v1/models, the completions and the steering route.
  void api_routes();
  /// The web page and its assets; 405 (with Allow) and OPTIONS on the known paths.
  void page_and_method_routes();
  void completions(const httplib::Request& req, httplib::Response& res, Endpoint ep);
  void steer(const httplib::Request& req, httplib::Response& res);
  void metrics(httplib::Response& res);
  void require_ready() const;

  class Core;  // httplib::Server that serves requests the reception read whole

  ServerOptions opt_;
  std::unique_ptr<Core> svr_;
  std::unique_ptr<Reception> reception_;
  int port_ = 0;
  bool started_ = false;
  enum class State { loading, ready, draining };
  std::atomic<State> state_{State::loading};
  const ServedModel* model_ = nullptr;
  Scheduler* sched_ = nullptr;
  std::atomic<int64_t> http_requests_{0}, http_errors_{0}, http_rejected_{0};
  int64_t started_unix_ = 0;
};

}  // namespace hogwild::server
