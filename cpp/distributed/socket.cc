#include "socket.h"
#include <arpa/inet.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include "../error.h"

namespace flock::dist {
namespace {

// IPv4 and IPv6 alike: hostnames (cluster DNS names), dotted quads and IPv6 literals.
addrinfo* resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string p = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), p.c_str(), &hints, &res);
  if (rc != 0) fail(Code::Arg, "cannot resolve host '", host, "': ", gai_strerror(rc));
  return res;
}

int port_of(int fd) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&sa)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&sa)->sin_port);
}

void tune(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small messages (barriers) must not wait
}

[[noreturn]] void lost(int peer, const char* what, int err) {
  fail(Code::PeerLost, "lost connection to rank ", peer, " (", what, err ? std::string(": ") + std::strerror(err) : std::string(),
       ")");
}

}  // namespace

int tcp_listen(const std::string& host, int* port, int backlog) {
  addrinfo* res = resolve(host, *port, true);
  // With no host, listen on the IPv6 wildcard with IPv4 mapped in (one socket for both), and fall
  // back to IPv4 where the kernel has no IPv6.
  std::vector<addrinfo*> order;
  for (addrinfo* a = res; a; a = a->ai_next) {
    if (a->ai_family == AF_INET6)
      order.insert(order.begin(), a);
    else
      order.push_back(a);
  }
  int fd = -1, err = 0;
  for (addrinfo* a : order) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ai_family == AF_INET6 && host.empty()) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) break;
    err = errno;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) fail(Code::Arg, "cannot listen on ", host.empty() ? "any address" : host, ":", *port, ": ", std::strerror(err));
  *port = port_of(fd);
  return fd;
}

int tcp_connect(const std::string& host, int port, int timeout_ms, int peer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int last = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    addrinfo* res = resolve(host, port, false);
    for (addrinfo* a = res; a; a = a->ai_next) {  // every address of the name, in resolver order
      int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        freeaddrinfo(res);
        tune(fd);
        return fd;
      }
      last = errno;
      if (fd >= 0) ::close(fd);
    }
    freeaddrinfo(res);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  fail(Code::Timeout, "could not connect to rank ", peer, " at ", host, ":", port, " within ", timeout_ms, " ms (",
       std::strerror(last), ")");
}

int tcp_accept(int listen_fd, int timeout_ms) {
  pollfd p{listen_fd, POLLIN, 0};
  int rc;
  do rc = poll(&p, 1, timeout_ms);
  while (rc < 0 && errno == EINTR);
  if (rc == 0) fail(Code::Timeout, "no peer connected within ", timeout_ms, " ms");
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) fail(Code::Internal, "accept: ", std::strerror(errno));
  tune(fd);
  return fd;
}

// ioctl, not fcntl: <fcntl.h> declares a global `struct flock` that collides with our namespace.
void set_nonblocking(int fd) {
  int on = 1;
  ioctl(fd, FIONBIO, &on);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void exchange(const Link* out, const void* send, size_t send_len, const Link* in, void* recv, size_t recv_len, int timeout_ms,
              const std::function<void(size_t)>& on_recv, const Lead* lead) {
  char* rp = static_cast<char*>(recv);
  exchange(
      out, send, send_len, in, recv_len,
      [&](size_t got, size_t* room) {
        *room = recv_len - got;
        return rp + got;
      },
      timeout_ms, on_recv, lead);
}

void exchange(const Link* out, const void* send, size_t send_len, const Link* in, size_t recv_len, const RecvWindow& window,
              int timeout_ms, const std::function<void(size_t)>& on_recv, const Lead* lead) {
  // With a lead, both streams are the lead's bytes then the data's; `sent` and `got` count both.
  const size_t head = lead ? lead->len : 0;
  const char* hs = lead ? static_cast<const char*>(lead->send) : nullptr;
  char* hr = lead ? static_cast<char*>(lead->recv) : nullptr;
  size_t sent = 0, got = 0;
  send_len += head;
  recv_len += head;
  const char* sp = static_cast<const char*>(send);
  while (sent < send_len || got < recv_len) {
    pollfd p[2];
    int np = 0, si = -1, ri = -1;
    if (sent < send_len) {
      p[np] = {out->fd, POLLOUT, 0};
      si = np++;
    }
    if (got < recv_len) {
      if (si >= 0 && in->fd == out->fd) {
        p[si].events |= POLLIN;
        ri = si;
      } else {
        p[np] = {in->fd, POLLIN, 0};
        ri = np++;
      }
    }
    int rc = poll(p, np, timeout_ms);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) fail(Code::Internal, "poll: ", std::strerror(errno));
    if (rc == 0) {
      const int peer = got < recv_len ? in->peer : out->peer;
      fail(Code::Timeout, "rank ", peer, " sent nothing for ", timeout_ms, " ms (is it alive and running the same collectives?)");
    }
    if (si >= 0 && (p[si].revents & (POLLOUT | POLLHUP | POLLERR))) {
      // Sending first: a lead goes out before a bad one from the peer can end this exchange, so
      // that both sides see a mismatch first-hand. Lead and data in one call: one packet for a
      // small message, as without a lead.
      iovec iov[2];
      int k = 0;
      if (sent < head) iov[k++] = {const_cast<char*>(hs + sent), head - sent};
      const size_t from = sent > head ? sent - head : 0;
      if (from < send_len - head) iov[k++] = {const_cast<char*>(sp + from), send_len - head - from};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = k;
      ssize_t n = ::sendmsg(out->fd, &m, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) lost(out->peer, "send failed", errno);
      if (n > 0) sent += static_cast<size_t>(n);
    }
    if (ri >= 0 && (p[ri].revents & (POLLIN | POLLHUP | POLLERR))) {
      // The lead alone first: no data is taken before arrived() has accepted it.
      size_t room = 0;
      char* at = got < head ? hr + got : window(got - head, &room);
      if (got < head) room = head - got;
      ssize_t n = ::recv(in->fd, at, std::min(room, recv_len - got), 0);
      if (n == 0) lost(in->peer, "it closed the connection", 0);
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) lost(in->peer, "receive failed", errno);
      if (n > 0) {
        const bool was_head = got < head;
        got += static_cast<size_t>(n);
        if (was_head && got == head && lead->arrived) lead->arrived();
        if (!was_head && on_recv) on_recv(got - head);
      }
    }
  }
}

void write_exact(const Link& l, const void* p, size_t n, int timeout_ms) { exchange(&l, p, n, &l, nullptr, 0, timeout_ms); }
void read_exact(const Link& l, void* p, size_t n, int timeout_ms) { exchange(&l, nullptr, 0, &l, p, n, timeout_ms); }

}  // namespace flock::dist
