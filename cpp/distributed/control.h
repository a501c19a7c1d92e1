// The ring backend's control plane: one extra connection between every pair of ranks, idle
// during collectives, so that when a collective fails every rank can name the rank that caused
// it rather than the neighbour whose connection happened to close first.
//
// A thread per group reads the control connections and records what they say:
//   - a connection that closes without a goodbye: that rank's process ended or its links broke;
//   - a failure report: the rank that saw the failure first-hand says what it was;
//   - a progress query, answered at once with how many group-wide collectives this rank has
//     started, so a rank that timed out can tell the rank that never joined from the ones that
//     are only waiting on it.
// explain() turns a local failure into its cause, report() tells the other ranks.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include "../device.h"

namespace flock::dist {

class ControlPlane {
 public:
  ControlPlane(int rank, int size);
  ~ControlPlane();  // says goodbye to every peer, stops the thread, closes the connections
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  // Takes the control connection to `peer` (before start()); false if it already has one.
  bool adopt(int peer, int fd);
  void start();
  // Tells every peer that this rank is leaving on purpose (the group is being destroyed), so its
  // closing connections are not taken for a crash. Once only; the destructor calls it too.
  void goodbye();

  // The communication thread: group-wide collective number `seq` (from 1) has begun here.
  void started(int64_t seq) { started_.store(seq); }

  struct Cause {
    StreamError error;
    bool first_hand;  // nobody else said anything: this rank should report() it
  };
  // What lies behind `local`, a failure of group-wide collective `seq` (0: a send/recv) named
  // `op`. Waits up to kGraceMs for what the other ranks say, then (after a timeout) up to
  // kQueryMs for their progress; both waits end as soon as the answer is in.
  Cause explain(const StreamError& local, int64_t seq, const char* op, int timeout_ms);
  // Tells every peer still connected (best effort: some may be gone).
  void report(const StreamError& cause);
  // Tells every peer that this rank failed for a cause explain() found elsewhere, so that when it
  // ends, its peers do not take it for the cause.
  void failed();

  static constexpr int kGraceMs = 250;
  static constexpr int kQueryMs = 1000;

 private:
  struct Note;
  void loop();
  void handle(int peer, const Note& n);
  void send_note(int peer, const Note& n);
  void send_all(const Note& n);

  const int rank_, size_;
  std::vector<int> fds_;
  std::vector<std::vector<char>> partial_;  // bytes of a note still arriving, per peer
  std::atomic<int64_t> started_{0};
  int wake_fd_ = -1;  // eventfd: ends the thread's poll
  std::atomic<bool> stop_{false};
  std::atomic<bool> said_goodbye_{false};
  std::thread thread_;

  std::mutex send_m_;  // whole notes only: the comm thread, this thread and the destructor all send
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<char> gone_;                             // peer closed without a goodbye
  std::vector<char> bye_;                              // peer said goodbye
  std::vector<char> explained_;                        // peer said it failed (report() or failed()): its end is not a cause
  std::optional<std::pair<int, StreamError>> report_;  // first report received, and from whom
  std::vector<int64_t> progress_;                      // answers to our query, -1 until answered
  bool leaving_ = false;                               // goodbye() ran: explain() stops waiting on the others
};

}  // namespace flock::dist
