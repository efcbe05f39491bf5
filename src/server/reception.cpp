#include "server/reception.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <unordered_map>

#include "core/error.h"
#include "server/api_error.h"

namespace hogwild::server {

namespace {

constexpr size_t kMaxHead = 64u << 10;     // request line + headers
constexpr size_t kMaxChunkLine = 1024;     // chunk size line with its extensions
constexpr size_t kMaxTrailers = 8u << 10;  // trailer section of a chunked body
constexpr size_t kReadSlice = 64u << 10;   // bytes read per recv
constexpr size_t kReadPerWake = 1u << 20;  // bytes read from one connection per wake-up
constexpr int64_t kLingerMs = 2000;        // reading (and dropping) after an error answer
constexpr int64_t kTickMs = 100;           // deadline checks

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return {};
  const size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

const char* reason(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 505:
      return "HTTP Version Not Supported";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

// Text of the request for an error message: at most `max` bytes, bytes outside printable
// ASCII as \xNN.
std::string printable(const std::string& s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < max; ++i) {
    const auto ch = static_cast<unsigned char>(s[i]);
    if (ch >= 0x20 && ch < 0x7f)
      out += static_cast<char>(ch);
    else
      out += fmt::format("\\x{:02x}", ch);
  }
  if (s.size() > max) out += "...";
  return out;
}

// What is wrong with a request line ("" when nothing): "version" for an HTTP version other than
// 1.0 and 1.1, else the reason in words.
std::string request_line_problem(const std::string& rl) {
  const size_t sp1 = rl.find(' ');
  if (sp1 == std::string::npos || sp1 == 0) return "no method and target";
  const size_t sp2 = rl.find(' ', sp1 + 1);
  if (sp2 == std::string::npos) return "no HTTP version";
  if (sp2 == sp1 + 1) return "no target";
  if (rl.find(' ', sp2 + 1) != std::string::npos) return "more than three parts";
  for (size_t i = 0; i < sp1; ++i)
    if (!std::isalnum(static_cast<unsigned char>(rl[i])) && !std::strchr("!#$%&'*+-.^_`|~", rl[i]))
      return "the method is not a token";
  for (size_t i = sp1 + 1; i < sp2; ++i)
    if (static_cast<unsigned char>(rl[i]) <= 0x20 || static_cast<unsigned char>(rl[i]) >= 0x7f)
      return "the target holds a control or non-ASCII byte";
  const std::string version = rl.substr(sp2 + 1);
  if (version.rfind("HTTP/", 0) != 0) return "no HTTP version";
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return "version";
  return {};
}

bool numeric_addr(const sockaddr_storage& ss, std::string& addr, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) return false;
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf)) return false;
    port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  addr = buf;
  return true;
}

// One whole request, read from memory; the response goes to the socket (blocking up to the
// write timeout on a full send buffer).
class ConnStream : public httplib::Stream {
 public:
  ConnStream(int fd, const std::string& request, int write_timeout_s)
      : fd_(fd), req_(request), timeout_ms_(write_timeout_s * 1000) {}
  bool is_readable() const override { return pos_ < req_.size(); }
  bool is_writable() const override {
    // A signal (SIGTERM starts draining) must not fail the write of a running stream.
    const int64_t until = now_ms() + timeout_ms_;
    for (;;) {
      pollfd p{fd_, POLLOUT, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, until - now_ms())));
      if (r < 0 && errno == EINTR) continue;
      return r > 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
    }
  }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, req_.size() - pos_);
    std::memcpy(ptr, req_.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    size_t done = 0;
    while (done < size) {
      const ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && is_writable()) continue;
      return -1;
    }
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) numeric_addr(ss, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len) == 0) numeric_addr(ss, ip, port);
  }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  const std::string& req_;
  size_t pos_ = 0;
  int timeout_ms_;
};

thread_local int t_socket = -1;  // the connection a worker handles now
thread_local std::chrono::steady_clock::time_point t_whole{};  // when its request was whole

}  // namespace

int Reception::current_socket() { return t_socket; }

std::chrono::steady_clock::time_point Reception::current_request_whole() { return t_whole; }

struct Reception::Conn {
  int fd = -1;
  std::string remote;
  enum class St { head, body_length, body_chunked, closing } st = St::head;
  bool idle = true;          // no byte of the current request yet
  int64_t deadline = 0;      // ms (steady clock)
  int64_t since = 0;         // when it began waiting for its current request (ms)
  std::string in;            // received, not yet consumed
  std::string method, path;  // of the current request (for the log)
  std::string head;          // the head handed on, without Content-Length and the blank line
  size_t length = 0;         // Content-Length
  std::chrono::steady_clock::time_point whole{};  // when the request was read whole
  bool chunked = false, expect_continue = false;
  // Chunked body: decoded bytes, parse state, raw bytes consumed.
  std::string body;
  enum class Chunk { size_line, data, data_end, trailers } chunk = Chunk::size_line;
  size_t chunk_left = 0, raw = 0, trailers = 0;
  size_t reserved = 0;  // bytes counted in Reception::buffered_
  size_t requests = 0;  // requests handled on this connection
  std::string request;  // the whole request handed to the handler
  bool eof = false;     // the client shut down its sending side
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
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns;
  std::vector<epoll_event> evs(256);
  int64_t last_tick = now_ms();
  bool accept_paused = false;
  int64_t accept_resume = 0;
  // The connections being read (owned here until handed to a worker).
  auto own = [&](std::unique_ptr<Conn> c) {
    Conn* p = c.get();
    conns.emplace(p, std::move(c));
    return p;
  };
  auto drop = [&](Conn* c) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    buffered_ -= c->reserved;
    open_ -= 1;
    conns.erase(c);
  };
  auto hand_over = [&](Conn* c) {
    c->whole = std::chrono::steady_clock::now();
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    buffered_ -= c->reserved;
    c->reserved = 0;
    auto it = conns.find(c);
    std::unique_ptr<Conn> owned = std::move(it->second);
    conns.erase(it);
    {
      std::lock_guard<std::mutex> l(m_);
      ready_.push_back(std::move(owned));
    }
    cv_.notify_one();
  };
  auto answer = [&](Conn* c, int status, const std::string& message, const std::string& code,
                    bool linger) {
    const char* type = status == 503 ? "server_error" : "invalid_request_error";
    const std::string body = error_json(ApiError(status, type, message, "", code))
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::string out = fmt::format(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
        "Connection: close\r\n{}\r\n{}",
        status, reason(status), body.size(), status == 503 ? "Retry-After: 1\r\n" : "", body);
    [[maybe_unused]] const ssize_t n = ::send(c->fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (on_refusal_) on_refusal_({c->remote, c->method, c->path, status});
    if (!linger || c->eof) return drop(c);
    // Read (and drop) what the client still sends for a moment, so that closing does not reset
    // the connection before it has read the answer.
    ::shutdown(c->fd, SHUT_WR);
    buffered_ -= c->reserved;
    c->reserved = 0;
    std::string().swap(c->in);  // the memory too, not only the bytes
    std::string().swap(c->body);
    c->st = Conn::St::closing;
    c->deadline = now_ms() + kLingerMs;
  };

  // Parses what arrived. Returns 1 when the request is whole, 0 when more is needed, -1 when the
  // connection was answered (refused) or dropped.
  auto parse = [&](Conn* c) -> int {
    if (c->st == Conn::St::head) {
      // Empty lines before a request line are ignored (RFC 9112 §2.2).
      size_t lead = 0;
      while (lead < c->in.size() && (c->in[lead] == '\r' || c->in[lead] == '\n')) ++lead;
      if (lead) c->in.erase(0, lead);
      size_t end = std::string::npos;
      for (size_t i = 0; i < c->in.size(); ++i) {
        if (c->in[i] != '\n') continue;
        if (i + 1 < c->in.size() && c->in[i + 1] == '\n') {
          end = i + 2;
          break;
        }
        if (i + 2 < c->in.size() && c->in[i + 1] == '\r' && c->in[i + 2] == '\n') {
          end = i + 3;
          break;
        }
      }
      if (end == std::string::npos) {
        if (c->in.size() > kMaxHead) {
          answer(c, 431,
                 fmt::format("the request head (request line and headers) is over {} bytes; "
                             "send fewer or shorter headers",
                             kMaxHead),
                 "headers_too_large", true);
          return -1;
        }
        return 0;
      }
      if (end > kMaxHead + 3) {
        answer(c, 431,
               fmt::format("the request head (request line and headers) is over {} bytes; send "
                           "fewer or shorter headers",
                           kMaxHead),
               "headers_too_large", true);
        return -1;
      }
      // Lines of the head (without the blank line that ends it).
      std::vector<std::string> lines;
      size_t p = 0;
      while (p < end) {
        size_t nl = c->in.find('\n', p);
        std::string line = c->in.substr(p, nl - p);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        p = nl + 1;
        if (line.empty()) break;
        lines.push_back(std::move(line));
      }
      c->in.erase(0, end);
      if (lines.empty()) {
        answer(c, 400, "the request has no request line", "", true);
        return -1;
      }
      const std::string& rl = lines[0];
      const size_t sp1 = rl.find(' ');
      const size_t sp2 = sp1 == std::string::npos ? sp1 : rl.find(' ', sp1 + 1);
      c->method = rl.substr(0, std::min(sp1, size_t{32}));
      c->path = sp1 == std::string::npos ? std::string()
                                         : rl.substr(sp1 + 1, std::min(sp2 - sp1 - 1, size_t{512}));
      // The request line is METHOD SP TARGET SP HTTP/1.x (RFC 9112 §3), and every header line
      // a name and a colon: refused here, with the reason, rather than by the library's generic
      // 400 on a connection it keeps open.
      if (const std::string why = request_line_problem(rl); !why.empty()) {
        answer(c, why == "version" ? 505 : 400,
               why == "version"
                   ? fmt::format("HTTP version '{}' is not supported; send HTTP/1.1 (or 1.0)",
                                 printable(rl.substr(sp2 + 1), 32))
                   : fmt::format("the request line '{}' is not 'METHOD /path HTTP/1.1' ({})",
                                 printable(rl, 128), why),
               "", true);
        return -1;
      }
      for (size_t i = 1; i < lines.size(); ++i) {
        const std::string& h = lines[i];
        const size_t colon = h.find(':');
        if (colon == std::string::npos || colon == 0 || h[0] == ' ' || h[0] == '\t' ||
            h.find('\0') != std::string::npos) {
          answer(c, 400,
                 fmt::format("the header line '{}' is not 'Name: value'", printable(h, 128)), "",
                 true);
          return -1;
        }
      }
      std::string head = rl + "\r\n";
      std::vector<std::string> lengths;
      std::string coding;
      bool has_coding = false;
      c->expect_continue = false;
      for (size_t i = 1; i < lines.size(); ++i) {
        const std::string& h = lines[i];
        const size_t colon = h.find(':');
        const std::string name =
            colon == std::string::npos ? std::string() : lower(trim(h.substr(0, colon)));
        const std::string value =
            colon == std::string::npos ? std::string() : trim(h.substr(colon + 1));
        if (name == "content-length") {
          lengths.push_back(value);
          continue;
        }
        if (name == "transfer-encoding") {
          coding += (has_coding ? ", " : "") + lower(value);
          has_coding = true;
          continue;
        }
        if (name == "expect") {
          if (lower(value) == "100-continue") c->expect_continue = true;
          continue;
        }
        head += h + "\r\n";
      }
      c->head = std::move(head);
      c->length = 0;
      c->chunked = false;
      if (has_coding) {
        if (coding != "chunked") {
          answer(c, 501,
                 fmt::format("Transfer-Encoding '{}' is not supported; send the body with "
                             "Content-Length or as 'chunked'",
                             coding),
                 "unsupported_transfer_encoding", true);
          return -1;
        }
        if (!lengths.empty()) {
          answer(c, 400, "the request has both Transfer-Encoding and Content-Length; send only one",
                 "", true);
          return -1;
        }
        c->chunked = true;
      }
      for (const std::string& v : lengths) {
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) {
          answer(c, 400,
                 fmt::format("Content-Length '{}' is not a non-negative integer; give the body's "
                             "size in bytes",
                             v.substr(0, 64)),
                 "", true);
          return -1;
        }
        if (v != lengths[0]) {
          answer(c, 400, "the request has several different Content-Length headers; send one", "",
                 true);
          return -1;
        }
      }
      if (!lengths.empty()) {
        const std::string& v = lengths[0];
        const size_t digits = v.size() - std::min(v.find_first_not_of('0'), v.size());
        const bool huge = digits > 18;
        const uint64_t n = huge ? UINT64_MAX : std::stoull(v);
        if (huge || n > opt_.max_body_bytes) {
          answer(c, 413,
                 fmt::format("the request body is {} bytes, over this server's limit of {} "
                             "(--max-body-bytes); send a smaller request",
                             v.substr(0, 24), opt_.max_body_bytes),
                 "request_too_large", true);
          return -1;
        }
        c->length = static_cast<size_t>(n);
      }
      if (c->length > 0 || c->chunked) {
        const size_t want = c->chunked ? 0 : c->length;
        if (buffered_ + want > opt_.max_buffered_bytes) {
          answer(c, 503,
                 "the server is receiving too many request bodies at once; retry in a moment",
                 "server_busy", true);
          return -1;
        }
        buffered_ += want;
        c->reserved = want;
        if (c->expect_continue) {
          static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
          [[maybe_unused]] const ssize_t n =
              ::send(c->fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL);
        }
        c->deadline = now_ms() + int64_t{opt_.body_timeout_s} * 1000;
      }
      c->body.clear();
      c->raw = c->trailers = 0;
      c->chunk = Conn::Chunk::size_line;
      c->st = c->chunked ? Conn::St::body_chunked : Conn::St::body_length;
    }
    if (c->st == Conn::St::body_length) {
      if (c->in.size() < c->length) return 0;
      c->request = c->head + fmt::format("Content-Length: {}\r\n\r\n", c->length);
      c->request.append(c->in, 0, c->length);
      c->in.erase(0, c->length);
      return 1;
    }
    // Chunked: decoded as it arrives; the limit holds for the decoded bytes, at once.
    size_t p = 0;
    auto too_large = [&] {
      answer(c, 413,
             fmt::format("the chunked request body passed this server's limit of {} bytes "
                         "(--max-body-bytes); send a smaller request",
                         opt_.max_body_bytes),
             "request_too_large", true);
      return -1;
    };
    int result = 0;
    while (result == 0) {
      if (c->chunk == Conn::Chunk::size_line || c->chunk == Conn::Chunk::trailers) {
        const size_t nl = c->in.find('\n', p);
        if (nl == std::string::npos) {
          const size_t pending = c->in.size() - p;
          if (c->chunk == Conn::Chunk::size_line && pending > kMaxChunkLine) {
            answer(c, 400, "a chunk size line of the request body is too long", "", true);
            return -1;
          }
          if (c->chunk == Conn::Chunk::trailers && c->trailers + pending > kMaxTrailers) {
            answer(c, 431, "the trailers of the chunked request body are too long", "", true);
            return -1;
          }
          break;
        }
        if (c->chunk == Conn::Chunk::size_line && nl - p > kMaxChunkLine) {
          answer(c, 400, "a chunk size line of the request body is too long", "", true);
          return -1;
        }
        std::string line = c->in.substr(p, nl - p);
        c->raw += nl + 1 - p;
        p = nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (c->chunk == Conn::Chunk::trailers) {
          c->trailers += line.size() + 2;
          if (c->trailers > kMaxTrailers) {
            answer(c, 431, "the trailers of the chunked request body are too long", "", true);
            return -1;
          }
          if (line.empty()) result = 1;
          continue;
        }
        const std::string hex = trim(line.substr(0, line.find(';')));
        if (hex.empty() || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
          answer(c, 400,
                 fmt::format("'{}' is not a chunk size; a chunked body is hex sizes, each "
                             "followed by that many bytes",
                             hex.substr(0, 32)),
                 "", true);
          return -1;
        }
        const size_t digits = hex.size() - std::min(hex.find_first_not_of('0'), hex.size());
        if (digits > 15) return too_large();
        const size_t n = std::stoull(hex, nullptr, 16);
        if (c->body.size() + n > opt_.max_body_bytes) return too_large();
        if (n == 0) {
          c->chunk = Conn::Chunk::trailers;
          continue;
        }
        if (buffered_ + n > opt_.max_buffered_bytes) {
          answer(c, 503,
                 "the server is receiving too many request bodies at once; retry in a moment",
                 "server_busy", true);
          return -1;
        }
        buffered_ += n;  // reserved as the chunk is announced
        c->reserved += n;
        c->chunk_left = n;
        c->chunk = Conn::Chunk::data;
      } else if (c->chunk == Conn::Chunk::data) {
        const size_t take = std::min(c->chunk_left, c->in.size() - p);
        if (take == 0) break;
        c->body.append(c->in, p, take);
        p += take;
        c->raw += take;
        c->chunk_left -= take;
        if (c->chunk_left == 0) c->chunk = Conn::Chunk::data_end;
      } else {  // data_end: CRLF (or LF) after a chunk's bytes
        if (p >= c->in.size()) break;
        size_t need = c->in[p] == '\r' ? 2 : 1;
        if (c->in.size() - p < need) break;
        if (c->in[p + need - 1] != '\n') {
          answer(c, 400, "a chunk of the request body is longer than its size says", "", true);
          return -1;
        }
        p += need;
        c->raw += need;
        c->chunk = Conn::Chunk::size_line;
      }
      if (c->raw > 2 * opt_.max_body_bytes + kMaxHead) return too_large();  // framing alone
    }
    c->in.erase(0, p);
    if (result == 1) {
      c->request = c->head + fmt::format("Content-Length: {}\r\n\r\n", c->body.size());
      c->request += c->body;
      c->body.clear();
      c->body.shrink_to_fit();
    }
    return result;
  };

  // At the connection limit, the connections that hold no request yet (idle, or still sending
  // their head) and have waited longest make room for new ones, a batch at a time (one scan for
  // many accepts): clients that open connections and send nothing cannot lock others out.
  auto evict = [&](Conn* keep) {
    std::vector<Conn*> waiting;
    for (auto& [p, c] : conns)
      if (p != keep && c->st == Conn::St::head) waiting.push_back(p);
    if (waiting.empty()) return;
    const size_t k = std::min(waiting.size(), std::max<size_t>(1, opt_.max_connections / 64));
    std::nth_element(waiting.begin(), waiting.begin() + static_cast<std::ptrdiff_t>(k - 1),
                     waiting.end(), [](Conn* a, Conn* b) { return a->since < b->since; });
    for (size_t i = 0; i < k; ++i) drop(waiting[i]);
  };
  auto arm = [&](Conn* c, bool fresh) {
    c->st = Conn::St::head;
    c->idle = c->in.empty();
    c->since = now_ms();
    c->deadline =
        now_ms() + int64_t{c->idle && !fresh ? opt_.keep_alive_s : opt_.head_timeout_s} * 1000;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.ptr = c;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
  };
  auto progress = [&](Conn* c) {
    const int r = parse(c);
    if (r == 1) return hand_over(c);
    if (r == 0 && c->eof) return drop(c);  // the client went away before its request was whole
  };

  while (!stopping_) {
    if (accept_paused && now_ms() >= accept_resume) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = nullptr;
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
      accept_paused = false;
    }
    const int n = epoll_wait(epoll_fd_, evs.data(), static_cast<int>(evs.size()), kTickMs);
    for (int i = 0; i < n && !stopping_; ++i) {
      void* tag = evs[i].data.ptr;
      if (tag == nullptr) {  // new connections
        for (;;) {
          sockaddr_storage ss{};
          socklen_t len = sizeof ss;
          const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                                 SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
              epoll_event ev{};
              ev.events = 0;
              ev.data.ptr = nullptr;
              epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
              accept_paused = true;
              accept_resume = now_ms() + kTickMs;
            }
            break;
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
            answer(p, 503,
                   fmt::format("the server has {} connections open, its limit, none of them idle; "
                               "retry in a moment",
                               opt_.max_connections),
                   "too_many_connections", false);
        }
        continue;
      }
      if (tag == &wake_fd_) {
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
        continue;
      }
      Conn* c = static_cast<Conn*>(tag);
      if (!conns.count(c)) continue;
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
        continue;
      }
      if (closed) c->eof = true;
      if (got > 0 && c->idle) {
        c->idle = false;
        c->deadline = now_ms() + int64_t{opt_.head_timeout_s} * 1000;
      }
      if (c->in.empty() && closed) {
        drop(c);
        continue;
      }
      progress(c);
    }
    const int64_t now = now_ms();
    if (now - last_tick >= kTickMs) {
      last_tick = now;
      std::vector<Conn*> late;
      for (auto& [p, c] : conns)
        if (now >= c->deadline) late.push_back(p);
      for (Conn* c : late) {
        if (c->st == Conn::St::closing || c->idle) {
          drop(c);
          continue;
        }
        const bool head = c->st == Conn::St::head;
        answer(c, 408,
               head ? fmt::format("the request head did not arrive within {} s; send the request "
                                  "line and headers at once",
                                  opt_.head_timeout_s)
                    : fmt::format("the request body did not arrive within {} s of its head",
                                  opt_.body_timeout_s),
               "request_timeout", false);
      }
    }
  }
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr);
  ::close(listen_fd_);
  listen_fd_ = -1;
  std::vector<Conn*> all;
  for (auto& [p, c] : conns) all.push_back(p);
  for (Conn* c : all) drop(c);
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
