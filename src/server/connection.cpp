#include "server/connection.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "server/conn_stream.h"

namespace hogwild::server {

namespace {

// An IPv4-mapped IPv6 address ("::ffff:1.2.3.4") as its IPv4 text; any other unchanged.
std::string unmapped(const std::string& addr) {
  if (addr.rfind("::ffff:", 0) == 0 && addr.find('.') != std::string::npos) return addr.substr(7);
  return addr;
}

// Numeric address and port of a sockaddr (conn_stream.h numeric_addr), IPv4-mapped IPv6 shown as
// IPv4.
bool addr_port(const sockaddr_storage& ss, std::string& addr, int& port) {
  if (!numeric_addr(ss, addr, port)) return false;
  addr = unmapped(addr);
  return true;
}

}  // namespace

ConnectionProbe::ConnectionProbe(int local_port, const std::string& remote_addr, int remote_port) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  const std::string want = unmapped(remote_addr);
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long fd = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || fd == dirfd(d)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &ll) != 0) continue;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &pl) != 0) continue;
    std::string la, pa;
    int lp = -1, pp = -1;
    if (!addr_port(local, la, lp) || !addr_port(peer, pa, pp)) continue;
    if (lp == local_port && pp == remote_port && pa == want) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(d);
}

bool ConnectionProbe::closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, static_cast<short>(POLLIN | POLLRDHUP), 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;  // end of stream; > 0 is a pipelined request, < 0 nothing yet
  }
  return false;
}

}  // namespace hogwild::server
