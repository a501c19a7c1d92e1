#include "device.h"
#include <condition_variable>
#include <mutex>

namespace flock {

Device parse_device(const std::string& s) {
  if (s == "cpu") return {DeviceType::CPU, 0};
  if (s == "cuda") return {DeviceType::CUDA, 0};
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 && s.size() < 9) {
    int idx = 0;
    for (size_t i = 5; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') fail(Code::Device, "invalid device '", s, "': expected 'cpu' or 'cuda:N'");
      idx = idx * 10 + (s[i] - '0');
    }
    return {DeviceType::CUDA, idx};
  }
  fail(Code::Device, "invalid device '", s, "': expected 'cpu' or 'cuda:N'");
}

void Stream::synchronize() {
  std::mutex m;
  std::condition_variable cv;
  bool finished = false;
  std::optional<StreamError> err;
  notify([&](std::optional<StreamError> e) {
    std::lock_guard<std::mutex> lk(m);
    err = std::move(e);
    finished = true;
    cv.notify_one();
  });
  std::unique_lock<std::mutex> lk(m);
  cv.wait(lk, [&] { return finished; });
  if (err) throw Error(err->code, err->message);
}

}  // namespace flock
