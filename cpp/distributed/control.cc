#include "control.h"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../error.h"
#include "socket.h"

namespace flock::dist {

// Every note has one fixed size; each field is re-validated on arrival.
struct ControlPlane::Note {
  enum Kind : int32_t { Report = 1, Query = 2, Progress = 3, Bye = 4, Failed = 5 };
  int32_t kind = 0;
  int32_t code = 0;     // Report: a flock::Code
  int64_t value = 0;    // Progress: collectives started
  char text[240] = {};  // Report: the message, NUL-terminated
};

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kSendMs = 1000;  // a peer that cannot take 256 bytes in this long is treated as gone

bool valid_code(int32_t c) { return c >= static_cast<int32_t>(Code::Shape) && c <= static_cast<int32_t>(Code::Internal); }

std::string list_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

}  // namespace

ControlPlane::ControlPlane(int rank, int size)
    : rank_(rank),
      size_(size),
      fds_(size, -1),
      partial_(size),
      gone_(size, 0),
      bye_(size, 0),
      explained_(size, 0),
      progress_(size, -1) {}

void ControlPlane::goodbye() {
  if (!thread_.joinable() || said_goodbye_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> lk(m_);
    leaving_ = true;  // a failure being explained now ends its waits: the group is going away
    cv_.notify_all();
  }
  Note bye;
  bye.kind = Note::Bye;
  send_all(bye);
}

ControlPlane::~ControlPlane() {
  if (thread_.joinable()) {
    goodbye();
    stop_ = true;
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof one) < 0) {
    }  // the thread also polls stop_ between waits
    thread_.join();
  }
  for (int& fd : fds_) close_fd(fd);
  close_fd(wake_fd_);
}

bool ControlPlane::adopt(int peer, int fd) {
  if (fds_[peer] >= 0) return false;
  fds_[peer] = fd;
  return true;
}

void ControlPlane::start() {
  for (int fd : fds_)
    if (fd >= 0) set_nonblocking(fd);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  FLOCK_CHECK(wake_fd_ >= 0, Internal, "eventfd: ", std::strerror(errno));
  thread_ = std::thread([this] { loop(); });
}

void ControlPlane::loop() {
  std::vector<pollfd> p;
  std::vector<int> peer_of;
  while (!stop_) {
    p.clear();
    peer_of.clear();
    p.push_back({wake_fd_, POLLIN, 0});
    peer_of.push_back(-1);
    for (int r = 0; r < size_; ++r)
      if (fds_[r] >= 0 && !gone_[r]) {
        p.push_back({fds_[r], POLLIN, 0});
        peer_of.push_back(r);
      }
    if (poll(p.data(), p.size(), 1000) < 0 && errno != EINTR) return;
    for (size_t i = 1; i < p.size(); ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const int r = peer_of[i];
      std::vector<char>& buf = partial_[r];
      char chunk[1024];
      ssize_t n = ::recv(fds_[r], chunk, sizeof chunk, 0);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) {
        std::lock_guard<std::mutex> lk(m_);
        gone_[r] = 1;  // after a goodbye this is expected; bye_ tells the two apart
        cv_.notify_all();
        continue;
      }
      buf.insert(buf.end(), chunk, chunk + n);
      while (buf.size() >= sizeof(Note)) {
        Note note;
        std::memcpy(&note, buf.data(), sizeof note);
        buf.erase(buf.begin(), buf.begin() + sizeof note);
        handle(r, note);
      }
    }
  }
}

void ControlPlane::handle(int peer, const Note& n) {
  static_assert(sizeof(Note) == 256, "control notes are 256 bytes on the wire");
  switch (n.kind) {
    case Note::Query: {
      Note answer;
      answer.kind = Note::Progress;
      answer.value = started_.load();
      send_note(peer, answer);
      return;
    }
    case Note::Progress: {
      std::lock_guard<std::mutex> lk(m_);
      progress_[peer] = std::max<int64_t>(0, n.value);
      cv_.notify_all();
      return;
    }
    case Note::Report: {
      std::string text(n.text, strnlen(n.text, sizeof n.text));
      const Code code = valid_code(n.code) ? static_cast<Code>(n.code) : Code::PeerLost;
      std::lock_guard<std::mutex> lk(m_);
      if (!report_) report_ = std::make_pair(peer, StreamError{code, std::move(text)});
      explained_[peer] = 1;
      cv_.notify_all();
      return;
    }
    case Note::Failed: {
      std::lock_guard<std::mutex> lk(m_);
      explained_[peer] = 1;
      return;
    }
    case Note::Bye: {
      std::lock_guard<std::mutex> lk(m_);
      bye_[peer] = 1;
      return;
    }
    default:
      return;  // not ours to act on; the data connections carry the real work
  }
}

void ControlPlane::send_note(int peer, const Note& n) {
  std::lock_guard<std::mutex> lk(send_m_);
  if (fds_[peer] < 0) return;
  const char* p = reinterpret_cast<const char*>(&n);
  size_t sent = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(kSendMs);
  while (sent < sizeof n && Clock::now() < deadline) {
    ssize_t k = ::send(fds_[peer], p + sent, sizeof n - sent, MSG_NOSIGNAL);
    if (k > 0) {
      sent += static_cast<size_t>(k);
      continue;
    }
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;  // gone
    pollfd w{fds_[peer], POLLOUT, 0};
    poll(&w, 1, 50);
  }
}

void ControlPlane::send_all(const Note& n) {
  for (int r = 0; r < size_; ++r)
    if (r != rank_) send_note(r, n);
}

void ControlPlane::report(const StreamError& cause) {
  if (!thread_.joinable()) return;
  Note note;
  note.kind = Note::Report;
  note.code = static_cast<int32_t>(cause.code);
  std::strncpy(note.text, cause.message.c_str(), sizeof note.text - 1);
  send_all(note);
}

void ControlPlane::failed() {
  if (!thread_.joinable()) return;
  Note note;
  note.kind = Note::Failed;
  send_all(note);
}

ControlPlane::Cause ControlPlane::explain(const StreamError& local, int64_t seq, const char* op, int timeout_ms) {
  if (!thread_.joinable()) return {local, true};
  auto ranks_where = [&](auto pred) {
    std::vector<int> ranks;
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && pred(r)) ranks.push_back(r);
    return ranks;
  };
  // A rank that said it failed and then ended is not the cause (in a hierarchical group a rank may
  // learn of a failure only after the ranks nearer to it have failed, said so, and exited).
  auto lost = [&] { return ranks_where([&](int r) { return gone_[r] && !bye_[r] && !explained_[r]; }); };
  std::unique_lock<std::mutex> lk(m_);
  // A rank that died closed its control connection with the rest; a rank that failed first-hand
  // reported before closing its data connections. Either is here within moments.
  cv_.wait_for(lk, std::chrono::milliseconds(kGraceMs), [&] { return leaving_ || report_.has_value() || !lost().empty(); });
  if (leaving_) return {local, false};  // this rank is destroying the group; it has said goodbye
  if (auto dead = lost(); !dead.empty())
    return {StreamError{Code::PeerLost, list_ranks(dead) + (dead.size() == 1 ? " was" : " were") +
                                            " lost (its process ended or its connections broke)"},
            false};
  if (report_)
    return {
        StreamError{report_->second.code, report_->second.message + " (reported by rank " + std::to_string(report_->first) + ")"},
        false};
  const std::vector<int> left = ranks_where([&](int r) { return bye_[r] != 0; });
  if (!left.empty())
    return {StreamError{local.code, local.message + "; " + list_ranks(left) + (left.size() == 1 ? " has" : " have") +
                                        " destroyed the process group"},
            true};
  if (local.code != Code::Timeout || seq <= 0) return {local, true};

  // Everyone alive: find who never joined collective `seq` (the others are waiting on it).
  std::fill(progress_.begin(), progress_.end(), -1);
  lk.unlock();
  Note query;
  query.kind = Note::Query;
  send_all(query);
  lk.lock();
  auto answered = [&] {
    if (leaving_) return true;
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && progress_[r] < 0 && !gone_[r]) return false;
    return true;
  };
  cv_.wait_for(lk, std::chrono::milliseconds(kQueryMs), answered);
  if (leaving_) return {local, false};
  const std::vector<int> silent = ranks_where([&](int r) { return progress_[r] < 0; });
  const std::vector<int> behind = ranks_where([&](int r) { return progress_[r] >= 0 && progress_[r] < seq; });
  std::string why;
  if (!behind.empty())
    why = list_ranks(behind) + " stopped answering: after " + std::to_string(timeout_ms) + " ms " +
          (behind.size() == 1 ? "it had" : "they had") + " not joined collective #" + std::to_string(seq) + " of this group (" +
          op + ")";
  if (!silent.empty())
    why += (why.empty() ? "" : "; ") + list_ranks(silent) + " stopped answering: no reply on the control connection within " +
           std::to_string(kQueryMs) + " ms";
  if (why.empty()) return {local, true};
  return {StreamError{Code::Timeout, why}, true};
}

}  // namespace flock::dist
