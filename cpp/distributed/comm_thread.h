// The communication thread of one process group: runs collectives one after another, in the
// order they were issued, so every rank sees the same sequence. Unbounded on purpose: pushes come
// from the compute stream's thread, which must never block on the network.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace flock::dist {

class CommThread {
 public:
  CommThread() : worker_([this] { loop(); }) {}
  ~CommThread() { stop(); }
  void push(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lk(m_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  // Runs what is queued, then ends the thread (tasks fail fast once their group has aborted).
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_one();
    if (worker_.get_id() == std::this_thread::get_id())
      worker_.detach();  // last owner dropped on this thread
    else
      worker_.join();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace flock::dist
