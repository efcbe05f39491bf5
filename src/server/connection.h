// Noticing that a client went away while its request runs (docs/SERVER.md "Disconnects").
// cpp-httplib 0.11 (Debian 12) gives a handler no access to its socket and notices a closed peer
// only when a write fails, which a non-streaming request never does before its answer. So the
// handler finds its own connection's socket once, among this process's descriptors, by the
// address pair the library reports (local port, remote address and port: unique among open
// connections), and polls it: end of stream or a hang-up means the client is gone. Linux only.
#pragma once

#include <string>

namespace hogwild::server {

class ConnectionProbe {
 public:
  /// Finds the socket of the TCP connection local_port <-> remote_addr:remote_port (numeric
  /// IPv4/IPv6 address). When none is found, closed() is always false (the library's failed
  /// writes still end a stream).
  ConnectionProbe(int local_port, const std::string& remote_addr, int remote_port);
  /// True when the peer closed or reset the connection. Never blocks; does not consume data.
  bool closed() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace hogwild::server
