// TCP plumbing for the ring backend: listen, connect with retry, and a poll loop that sends to
// one peer while receiving from another, so neither side blocks on a full socket buffer. Every
// wait is bounded: silence longer than `timeout_ms` is ERR_TIMEOUT, a closed or reset connection
// is ERR_PEER_LOST, both naming the peer's rank.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace flock::dist {

struct Link {
  int fd = -1;
  int peer = -1;  // the rank at the other end
};

// Binds `host` (empty: every address, IPv6 and IPv4; port 0: any free port); returns the listening
// socket and sets *port.
int tcp_listen(const std::string& host, int* port, int backlog);
// Connects, retrying refused attempts until `timeout_ms` has passed.
int tcp_connect(const std::string& host, int port, int timeout_ms, int peer);
// Accepts one connection within `timeout_ms`.
int tcp_accept(int listen_fd, int timeout_ms);
void set_nonblocking(int fd);
void close_fd(int& fd);

// A fixed-size header that leads an exchange's bytes in both directions: `send` goes out before
// the data; `recv` is filled before any incoming data is taken, and `arrived()` (which may throw)
// runs then, so a caller can refuse a message by its header without reading its body.
struct Lead {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t len = 0;
  std::function<void()> arrived;
};

// Sends `send_len` bytes on `out` while receiving `recv_len` bytes from `in`. `on_recv(total)` is
// called as bytes arrive so the caller can reduce completed chunks while the rest streams in.
void exchange(const Link* out, const void* send, size_t send_len, const Link* in, void* recv, size_t recv_len, int timeout_ms,
              const std::function<void(size_t)>& on_recv = nullptr, const Lead* lead = nullptr);

// Where the bytes of a received message go: for byte `got` of the message, the address to write
// it at, with *room set to how many bytes may follow there (at least 1). Lets a caller stage a
// long message through a small, cache-resident buffer that it drains from on_recv.
using RecvWindow = std::function<char*(size_t got, size_t* room)>;
void exchange(const Link* out, const void* send, size_t send_len, const Link* in, size_t recv_len, const RecvWindow& window,
              int timeout_ms, const std::function<void(size_t)>& on_recv, const Lead* lead = nullptr);

// Blocking whole-buffer helpers for the connection handshake (sockets still blocking then).
void write_exact(const Link& l, const void* p, size_t n, int timeout_ms);
void read_exact(const Link& l, void* p, size_t n, int timeout_ms);

}  // namespace flock::dist
