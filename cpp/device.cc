#include "device.h"
#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace flock {
namespace {

std::mutex g_count_mutex;
int g_cpu_devices = 0;  // 0 until fixed
int g_requested = 0;    // set_cpu_device_count before the count was fixed

// The index after `prefix` in s, or -1 when s is not prefix followed by 1 to 3 digits.
int suffix_index(const std::string& s, const char* prefix) {
  const size_t p = std::char_traits<char>::length(prefix);
  if (s.rfind(prefix, 0) != 0 || s.size() <= p || s.size() > p + 3) return -1;
  int idx = 0;
  for (size_t i = p; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    idx = idx * 10 + (s[i] - '0');
  }
  return idx;
}

// FLOCKML_CPU_DEVICES, or 0 when unset; ERR_DEVICE when it is not a count from 1 to 16.
int env_cpu_devices() {
  const char* env = std::getenv("FLOCKML_CPU_DEVICES");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const long parsed = std::strtol(env, &end, 10);
  if (*end != '\0' || parsed < 1 || parsed > kMaxCpuDevices)
    fail(Code::Device, "FLOCKML_CPU_DEVICES must be an integer from 1 to ", kMaxCpuDevices, ", got '", env, "'");
  return static_cast<int>(parsed);
}

}  // namespace

int cpu_device_count() {
  std::lock_guard<std::mutex> lk(g_count_mutex);
  if (g_cpu_devices > 0) return g_cpu_devices;
  int n = g_requested;
  if (n == 0) n = std::max(1, env_cpu_devices());
  g_cpu_devices = n;
  return n;
}

void set_cpu_device_count(int n) {
  if (n < 1 || n > kMaxCpuDevices)
    fail(Code::Device, "setCpuDeviceCount: the count must be from 1 to ", kMaxCpuDevices, ", got ", n);
  std::lock_guard<std::mutex> lk(g_count_mutex);
  if (g_cpu_devices > 0 && g_cpu_devices != n)
    fail(Code::Device, "setCpuDeviceCount: the CPU devices are already in use (", g_cpu_devices,
         " of them); set the count before the first tensor op, or with FLOCKML_CPU_DEVICES");
  g_requested = n;
}

Device parse_device(const std::string& s) {
  if (s == "cpu") return {DeviceType::CPU, 0};
  if (s == "cuda") return {DeviceType::CUDA, 0};
  if (const int idx = suffix_index(s, "cuda:"); idx >= 0) return {DeviceType::CUDA, idx};
  if (const int idx = suffix_index(s, "cpu:"); idx >= 0) {
    const int n = cpu_device_count();
    if (idx >= n)
      fail(Code::Device, "device '", s, "' is out of range: this process has ", n, " CPU device", n == 1 ? "" : "s",
           " (cpu:0 to cpu:", n - 1, "; set FLOCKML_CPU_DEVICES or fl.setCpuDeviceCount for more)");
    return {DeviceType::CPU, idx};
  }
  fail(Code::Device, "invalid device '", s, "': expected 'cpu', 'cpu:N' or 'cuda:N'");
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
  if (err) {
    err->acknowledge();  // thrown to the JS thread that called this
    throw Error(err->code, err->message);
  }
}

}  // namespace flock
