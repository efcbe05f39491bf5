// What a worker hands the handler for one request (reception.h; docs/SERVER.md "Limits"): the
// request, read whole by the reception, from memory, and the response written to the
// connection's socket, each write waiting at most the write timeout for the client to take bytes.
// Linux only.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

#include <string>

namespace hogwild::server {

/// The numeric address (IPv4 or IPv6 text) and port of `ss`; false, with `addr` and `port`
/// unchanged, for another address family.
bool numeric_addr(const sockaddr_storage& ss, std::string& addr, int& port);

/// One whole request, `request` (it must outlive the stream), as an httplib::Stream over the
/// connected socket `fd` (it stays the caller's). A write blocks while the send buffer is full, up
/// to write_timeout_s each time (a signal does not cut the wait short), then fails (-1), as it
/// does when the client went away.
class ConnStream : public httplib::Stream {
 public:
  ConnStream(int fd, const std::string& request, int write_timeout_s)
      : fd_(fd), req_(request), timeout_ms_(write_timeout_s * 1000) {}
  bool is_readable() const override { return pos_ < req_.size(); }
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  const std::string& req_;
  size_t pos_ = 0;
  int timeout_ms_;
};

}  // namespace hogwild::server
