// Noticing that a client went away while its request runs (docs/SERVER.md "Disconnects").
// cpp-httplib 0.11 (Debian 12) gives a handler no access to its socket and notices a closed peer
// only when a write fails, which a non-streaming request never does before its answer. The
// reception (reception.h) tells the handler its socket; without it, the probe finds the socket
// once, among this process's descriptors, by the address pair the library reports (local port,
// remote address and port: unique among open connections). It polls it: end of stream or a
// hang-up means the client is gone. Linux only.
#pragma once

#include <string>

namespace hogwild::server {

class ConnectionProbe {
 public:
  /// Finds the socket of the TCP connection local_port <-> remote_addr:remote_port (numeric
  /// IPv4/IPv6 address). When none is found, closed() is always false (the library's failed
  /// writes still end a stream).
  ConnectionProbe(int local_port, const std::string& remote_addr, int remote_port);
  /// Probes the connected socket `fd` (the reception knows it, reception.h
  /// Reception::current_socket); -1: closed() is always false. The socket stays the caller's.
  explicit ConnectionProbe(int fd) : fd_(fd) {}
  /// True when the peer closed or reset the connection. Never blocks; does not consume data.
  bool closed() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace hogwild::server
