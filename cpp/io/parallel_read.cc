// Loading a state dict is bounded by two costs per byte: the copy out of the page cache and the
// first touch of the fresh destination pages. One thread leaves the second core idle, so reads of
// more than kParallelFrom bytes are cut into pieces of at most kPiece bytes that up to kMaxThreads
// threads take in file order.
//
// Destination pages are faulted in as small pages: on the machines flockml was measured on, a read
// into memory advised MADV_HUGEPAGE ran at 0.3-0.9 GB/s against 1.5-1.9 GB/s with small pages
// (no compaction stalls counted; the 2 MiB faults themselves are slow), and `cp` to tmpfs, the
// anchor of bench/checkpoint.ts, writes small pages too. The advice is restored after the read, so
// the kernel may still collapse the range into huge pages later.
#include <sys/mman.h>
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>
#include "atomic_file.h"
#include "safetensors.h"

namespace flock::io {
namespace {

constexpr size_t kPiece = size_t(8) << 20;
constexpr uint64_t kParallelFrom = uint64_t(32) << 20;
constexpr unsigned kMaxThreads = 4;
constexpr size_t kPage = 4096;

struct Piece {
  const TensorInfo* tensor;
  char* dst;
  size_t bytes;
  uint64_t offset;  // within the data section
};

// The whole pages inside [p, p + n): madvise takes page-aligned ranges only.
bool page_range(void* p, size_t n, char** begin, size_t* len) {
  const uintptr_t a = (reinterpret_cast<uintptr_t>(p) + kPage - 1) / kPage * kPage;
  const uintptr_t b = (reinterpret_cast<uintptr_t>(p) + n) / kPage * kPage;
  if (b <= a) return false;
  *begin = reinterpret_cast<char*>(a);
  *len = b - a;
  return true;
}

void advise(void* p, size_t n, int advice) {
  char* begin;
  size_t len;
  if (n >= 2 * kPiece && page_range(p, n, &begin, &len)) madvise(begin, len, advice);  // advice only: failure changes nothing
}

}  // namespace

void SafetensorsReader::read_many(const std::vector<std::pair<const TensorInfo*, void*>>& work) const {
  std::vector<Piece> pieces;
  uint64_t total = 0;
  for (const auto& [t, dst] : work) {
    const uint64_t n = t->end - t->begin;
    total += n;
    for (uint64_t at = 0; at < n; at += kPiece)
      pieces.push_back({t, static_cast<char*>(dst) + at, static_cast<size_t>(std::min<uint64_t>(kPiece, n - at)), t->begin + at});
  }
  for (const auto& [t, dst] : work) advise(dst, t->end - t->begin, MADV_NOHUGEPAGE);

  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex m;
  const Piece* bad_piece = nullptr;
  int bad_errno = 0;
  auto worker = [&]() {
    for (size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < pieces.size();) {
      const Piece& p = pieces[i];
      if (pread_all(fd_, p.dst, p.bytes, header_.data_start() + p.offset)) continue;
      std::lock_guard<std::mutex> lk(m);
      if (!bad_piece || p.offset < bad_piece->offset) {
        bad_piece = &p;
        bad_errno = errno;
      }
      failed = true;
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t n_threads = total < kParallelFrom ? 1 : std::min<size_t>({kMaxThreads, hw, pieces.size()});
  std::vector<std::thread> threads;
  try {
    for (size_t k = 1; k < n_threads; ++k) threads.emplace_back(worker);
  } catch (const std::system_error&) {  // no thread to be had: the remaining work runs here
  }
  worker();
  for (std::thread& t : threads) t.join();
  for (const auto& [t, dst] : work) advise(dst, t->end - t->begin, MADV_HUGEPAGE);

  if (bad_piece) {
    if (bad_errno == 0) bad("truncated: tensor '" + bad_piece->tensor->name + "' ends past the end of the file");
    fail(Code::IO, op_, ": ", path_, ": reading tensor '", bad_piece->tensor->name, "' failed: ", std::strerror(bad_errno));
  }
}

}  // namespace flock::io
