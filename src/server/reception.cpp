#include "server/reception.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "server/conn_stream.h"

namespace hogwild::server {

namespace {

constexpr size_t kReadSlice = 64u << 10;   // bytes read per recv
constexpr size_t kReadPerWake = 1u << 20;  // bytes read from one connection per wake-up
constexpr int64_t kLingerMs = 2000;        // reading (and dropping) after an error answer
constexpr int64_t kTickMs = 100;           // deadline checks

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

thread_local int t_socket = -1;  // the connection a worker handles now
thread_local std::chrono::steady_clock::time_point t_whole{};  // when its request was whole

}  // namespace

int Reception::current_socket() { return t_socket; }

std::chrono::steady_clock::time_point Reception::current_request_whole() { return t_whole; }

struct Reception::Conn {
  int fd = -1;
  std::string remote;
  enum class St { head, body_length, body_chunked, closing } st = St::head;
  bool idle = true;      // no byte of the current request yet
  int64_t deadline = 0;  // ms (steady clock)
  int64_t since = 0;     // when it began waiting for its current request (ms)
  std::string in;        // received, not yet consumed
  RequestHead head;      // of the current request (method and path also for the log)
  ChunkedBody chunks;    // its body when chunked
  std::chrono::steady_clock::time_point whole{};  // when the request was read whole
  size_t reserved = 0;                            // bytes counted in Reception::buffered_
  size_t requests = 0;                            // requests handled on this connection
  std::string request;                            // the whole request handed to the handler
  bool eof = false;                               // the client shut down its sending side
};

Reception::Reception(ReceptionOptions o, Handler handle,
                     std::function<void(const Refusal&)> on_refusal)
    : opt_(std::move(o)), handle_(std::move(handle)), on_refusal_(std::move(on_refusal)) {
  if (opt_.max_buffered_bytes == 0)
    opt_.max_buffered_bytes = std::max<size_t>(256u << 20, 8 * opt_.max_body_bytes);
  opt_.threads = std::max<size_t>(opt_.threads, 1);
}

Reception::~Reception() {
  stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

int Reception::bind(const std::string& host, int port) {
  // Connections take descriptors: raise the soft limit towards the hard one (at most 65536),
  // keep a margin for the model's files and the process's own.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    const rlim_t want = std::min<rlim_t>(rl.rlim_max, 65536);
    if (rl.rlim_cur < want) {
      rlimit up = rl;
      up.rlim_cur = want;
      if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
    }
    if (opt_.max_connections == 0) {
      const size_t fds = rl.rlim_cur == RLIM_INFINITY ? 1u << 20 : static_cast<size_t>(rl.rlim_cur);
      opt_.max_connections = std::min<size_t>(fds > 1024 ? fds - 512 : fds / 2, 100000);
    }
  }
  if (opt_.max_connections == 0) opt_.max_connections = 512;

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res); rc != 0)
    fail("cannot listen on {}:{}: the address does not resolve ({}); check --host", host, port,
         gai_strerror(rc));
  int last_errno = 0;
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      last_errno = errno;
      continue;
    }
    // SO_REUSEADDR only (a restart may bind beside connections in TIME_WAIT); never
    // SO_REUSEPORT, with which a second server would bind the same port and share its traffic.
    int yes = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, SOMAXCONN) == 0) {
      listen_fd_ = fd;
      break;
    }
    last_errno = errno;
    ::close(fd);
  }
  freeaddrinfo(res);
  if (listen_fd_ < 0) {
    if (last_errno == EADDRINUSE)
      fail(
          "cannot listen on {}:{}: port in use (another process listens there); stop it or choose "
          "another port with --port",
          host, port);
    if (last_errno == EACCES)
      fail(
          "cannot listen on {}:{}: permission denied (ports below 1024 need privileges); choose "
          "another port with --port",
          host, port);
    fail("cannot listen on {}:{}: {}; check --host and --port", host, port,
         std::strerror(last_errno));
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  std::string addr;
  int bound = port;
  numeric_addr(ss, addr, bound);
  return bound;
}

void Reception::start() {
  if (listen_fd_ < 0) fail("Reception::start: bind() first");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) fail("cannot start the server: {}", std::strerror(errno));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // the listening socket
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.ptr = &wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  running_ = true;
  for (size_t i = 0; i < opt_.threads; ++i) workers_.emplace_back([this] { work(); });
  thread_ = std::thread([this] { loop(); });
}

void Reception::stop() {
  if (!running_.exchange(false)) return;
  stopping_ = true;
  wake();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard<std::mutex> l(m_);
    cv_.notify_all();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  for (auto* q : {&ready_, &returned_})
    for (auto& c : *q) {
      ::close(c->fd);
      open_ -= 1;
    }
  ready_.clear();
  returned_.clear();
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  epoll_fd_ = wake_fd_ = -1;
}

void Reception::wake() {
  if (wake_fd_ < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void Reception::loop() {
  std::vector<epoll_event> evs(256);
  int64_t last_tick = now_ms();
  while (!stopping_) {
    if (accept_paused_ && now_ms() >= accept_resume_) resume_accepting();
    const int n = epoll_wait(epoll_fd_, evs.data(), static_cast<int>(evs.size()), kTickMs);
    for (int i = 0; i < n && !stopping_; ++i) {
      void* tag = evs[i].data.ptr;
      if (tag == nullptr) {  // new connections
        accept_connections();
      } else if (tag == &wake_fd_) {
        take_back();
      } else {
        Conn* c = static_cast<Conn*>(tag);
        if (conns_.count(c)) receive(c);
      }
    }
    const int64_t now = now_ms();
    if (now - last_tick >= kTickMs) {
      last_tick = now;
      expire(now);
    }
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::vector<Conn*> all;
  for (auto& [p, c] : conns_) all.push_back(p);
  for (Conn* c : all) drop(c);
}

// Accepts every connection waiting. Out of descriptors (or memory), stops listening for kTickMs
// (resume_accepting); at max_connections, evicts (evict) or answers the new one 503.
void Reception::accept_connections() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    const int fd =
        accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        epoll_event ev{};
        ev.events = 0;
        ev.data.ptr = nullptr;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
        accept_paused_ = true;
        accept_resume_ = now_ms() + kTickMs;
      }
      return;
    }
    int yes = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    int port = 0;
    numeric_addr(ss, c->remote, port);
    open_ += 1;
    Conn* p = own(std::move(c));
    arm(p, true);
    if (open_.load() > opt_.max_connections) evict(p);
    if (open_.load() > opt_.max_connections)
      answer(p,
             {503,
              fmt::format("the server has {} connections open, its limit, none of them idle; "
                          "retry in a moment",
                          opt_.max_connections),
              "too_many_connections"},
             false);
  }
}

// Listens again after accept_connections paused.
void Reception::resume_accepting() {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
  accept_paused_ = false;
}

// Takes back the keep-alive connections the workers returned, to read their next request.
void Reception::take_back() {
  uint64_t v;
  while (::read(wake_fd_, &v, sizeof v) > 0) {
  }
  std::deque<std::unique_ptr<Conn>> back;
  {
    std::lock_guard<std::mutex> l(m_);
    back.swap(returned_);
  }
  for (auto& c : back) {
    Conn* p = own(std::move(c));
    arm(p, false);
    if (!p->in.empty()) progress(p);  // a pipelined request already here
  }
}

// Reads what the socket holds (at most kReadPerWake bytes, so that one client cannot hold the
// thread), then parses it. A connection answered and closing drops what it reads.
void Reception::receive(Conn* c) {
  size_t got = 0;
  bool closed = false;
  char buf[kReadSlice];
  while (got < kReadPerWake) {
    const ssize_t r = ::recv(c->fd, buf, sizeof buf, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
      if (c->st != Conn::St::closing) c->in.append(buf, static_cast<size_t>(r));
      continue;
    }
    if (r == 0) closed = true;
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) closed = true;
    break;
  }
  if (c->st == Conn::St::closing) {
    if (closed) drop(c);
    return;
  }
  if (closed) c->eof = true;
  if (got > 0 && c->idle) {
    c->idle = false;
    c->deadline = now_ms() + int64_t{opt_.head_timeout_s} * 1000;
  }
  if (c->in.empty() && closed) return drop(c);
  progress(c);
}

// Hands a whole request over; drops a connection whose client shut down before its request was
// whole.
void Reception::progress(Conn* c) {
  const Framing r = parse(c);
  if (r == Framing::whole) return hand_over(c);
  if (r == Framing::more && c->eof) return drop(c);
}

// Parses what arrived: whole when the request is (c->request holds it), more when more is
// needed, refused when the connection was answered.
Framing Reception::parse(Conn* c) {
  if (c->st == Conn::St::head) {
    const Framing f = read_head(c);
    if (f != Framing::whole) return f;
  }
  if (c->st == Conn::St::body_length) return read_length_body(c);
  return read_chunked_body(c);
}

// The head (parse_head); once whole, reserves the body's bytes (503 past max_buffered_bytes),
// answers Expect: 100-continue and starts the body's deadline.
Framing Reception::read_head(Conn* c) {
  HttpRefusal refusal;
  const Framing f = parse_head(c->in, opt_.max_body_bytes, c->head, refusal);
  if (f == Framing::refused) answer(c, refusal, true);
  if (f != Framing::whole) return f;
  if (c->head.length > 0 || c->head.chunked) {
    const size_t want = c->head.chunked ? 0 : c->head.length;
    if (buffered_ + want > opt_.max_buffered_bytes) {
      answer(c, server_busy(), true);
      return Framing::refused;
    }
    buffered_ += want;
    c->reserved = want;
    if (c->head.expect_continue) {
      static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
      [[maybe_unused]] const ssize_t n =
          ::send(c->fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
    }
    c->deadline = now_ms() + int64_t{opt_.body_timeout_s} * 1000;
  }
  c->chunks.reset();
  c->st = c->head.chunked ? Conn::St::body_chunked : Conn::St::body_length;
  return Framing::whole;
}

// A body of Content-Length bytes (0 without a body): whole once they are all here.
Framing Reception::read_length_body(Conn* c) {
  if (c->in.size() < c->head.length) return Framing::more;
  c->request = whole_request(c->head.text, std::string_view(c->in).substr(0, c->head.length));
  c->in.erase(0, c->head.length);
  return Framing::whole;
}

// Chunked: decoded as it arrives (ChunkedBody), each chunk's bytes reserved as it is announced.
Framing Reception::read_chunked_body(Conn* c) {
  HttpRefusal refusal;
  const Framing f = c->chunks.feed(
      c->in, opt_.max_body_bytes,
      [&](size_t n) {
        if (buffered_ + n > opt_.max_buffered_bytes) return false;
        buffered_ += n;
        c->reserved += n;
        return true;
      },
      refusal);
  if (f == Framing::refused) answer(c, refusal, true);
  if (f == Framing::whole) {
    c->request = whole_request(c->head.text, c->chunks.body());
    c->chunks.reset();
  }
  return f;
}

// Answers a refused request (refusal_response) and closes the connection: at once, or, with
// `linger` (and a client still sending), after reading and dropping what it sends for kLingerMs,
// so that closing does not reset the connection before the client has read the answer.
void Reception::answer(Conn* c, const HttpRefusal& refusal, bool linger) {
  const std::string out = refusal_response(refusal);
  [[maybe_unused]] const ssize_t n = ::send(c->fd, out.data(), out.size(), MSG_NOSIGNAL);
  if (on_refusal_) on_refusal_({c->remote, c->head.method, c->head.path, refusal.status});
  if (!linger || c->eof) return drop(c);
  ::shutdown(c->fd, SHUT_WR);
  buffered_ -= c->reserved;
  c->reserved = 0;
  std::string().swap(c->in);  // the memory too, not only the bytes
  c->chunks.reset();
  c->st = Conn::St::closing;
  c->deadline = now_ms() + kLingerMs;
}

// Past its deadline, a connection closing or idle closes; one sending its request is answered 408.
void Reception::expire(int64_t now) {
  std::vector<Conn*> late;
  for (auto& [p, c] : conns_)
    if (now >= c->deadline) late.push_back(p);
  for (Conn* c : late) {
    if (c->st == Conn::St::closing || c->idle) {
      drop(c);
      continue;
    }
    const bool head = c->st == Conn::St::head;
    answer(c,
           {408,
            head ? fmt::format("the request head did not arrive within {} s; send the request "
                               "line and headers at once",
                               opt_.head_timeout_s)
                 : fmt::format("the request body did not arrive within {} s of its head",
                               opt_.body_timeout_s),
            "request_timeout"},
           false);
  }
}

// At the connection limit, the connections that hold no request yet (idle, or still sending
// their head) and have waited longest make room for new ones, a batch at a time (one scan for
// many accepts): clients that open connections and send nothing cannot lock others out.
void Reception::evict(Conn* keep) {
  std::vector<Conn*> waiting;
  for (auto& [p, c] : conns_)
    if (p != keep && c->st == Conn::St::head) waiting.push_back(p);
  if (waiting.empty()) return;
  const size_t k = std::min(waiting.size(), std::max<size_t>(1, opt_.max_connections / 64));
  std::nth_element(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(k - 1),
                   waiting.end(), [](Conn* a, Conn* b) { return a->since < b->since; });
  for (size_t i = 0; i < k; ++i) drop(waiting[i]);
}

// Waits for a connection's next request: head_timeout_s, or keep_alive_s for a kept-alive
// connection with no byte of it yet.
void Reception::arm(Conn* c, bool fresh) {
  c->st = Conn::St::head;
  c->idle = c->in.empty();
  c->since = now_ms();
  c->deadline =
      now_ms() + int64_t{c->idle && !fresh ? opt_.keep_alive_s : opt_.head_timeout_s} * 1000;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.ptr = c;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
}

// Takes a connection into conns_.
Reception::Conn* Reception::own(std::unique_ptr<Conn> c) {
  Conn* p = c.get();
  conns_.emplace(p, std::move(c));
  return p;
}

// A whole request goes to the workers.
void Reception::hand_over(Conn* c) {
  c->whole = std::chrono::steady_clock::now();
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  buffered_ -= c->reserved;
  c->reserved = 0;
  auto it = conns_.find(c);
  std::unique_ptr<Conn> owned = std::move(it->second);
  conns_.erase(it);
  {
    std::lock_guard<std::mutex> l(m_);
    ready_.push_back(std::move(owned));
  }
  cv_.notify_one();
}

// Closes a connection without an answer.
void Reception::drop(Conn* c) {
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
  ::close(c->fd);
  buffered_ -= c->reserved;
  open_ -= 1;
  conns_.erase(c);
}

void Reception::work() {
  for (;;) {
    std::unique_ptr<Conn> c;
    {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [this] { return stopping_ || !ready_.empty(); });
      if (stopping_) return;
      c = std::move(ready_.front());
      ready_.pop_front();
    }
    c->requests += 1;
    const bool close_connection =
        c->eof || stopping_ || c->requests >= opt_.max_requests_per_connection;
    bool closed = false;
    bool ok = false;
    {
      ConnStream s(c->fd, c->request, opt_.write_timeout_s);
      t_socket = c->fd;
      t_whole = c->whole;
      try {
        ok = handle_(s, close_connection, closed);
      } catch (...) {
        ok = false;
      }
      t_socket = -1;
      t_whole = {};
    }
    c->request.clear();
    c->request.shrink_to_fit();
    if (!ok || closed || close_connection || stopping_) {
      ::shutdown(c->fd, SHUT_RDWR);
      ::close(c->fd);
      open_ -= 1;
      continue;
    }
    {
      std::lock_guard<std::mutex> l(m_);
      returned_.push_back(std::move(c));
    }
    wake();
  }
}

}  // namespace hogwild::server
