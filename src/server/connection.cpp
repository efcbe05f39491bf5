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

namespace hogwild::server {

namespace {

// Numeric address and port of a sockaddr (IPv4, IPv6; IPv4-mapped IPv6 shown as IPv4).
bool addr_port(const sockaddr_storage& ss, std::string& addr, int& port) {
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
  if (addr.rfind("::ffff:", 0) == 0 && addr.find('.') != std::string::npos) addr = addr.substr(7);
  return true;
}

}  // namespace

ConnectionProbe::ConnectionProbe(int local_port, const std::string& remote_addr, int remote_port) {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return;
  std::string want = remote_addr;
  if (want.rfind("::ffff:", 0) == 0 && want.find('.') != std::string::npos) want = want.substr(7);
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
