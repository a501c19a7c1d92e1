// Unit tests of the simulated NCCL (sim/nccl_*.cc) on the simulated CUDA runtime: every
// collective, dtype and op against references computed here, on 2 and 4 ranks of one process
// (ncclCommInitAll) and of separate processes (this binary re-executed as children), group
// batching, in-place calls, payloads larger than a slot or mailbox, non-blocking init, argument
// checks, mismatches, and abort waking a waiter whose peer never comes (or died).
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>
#include "cuda_runtime.h"
#include "nccl_api.h"
#include "nccl_reduce.h"

namespace {

using Clock = std::chrono::steady_clock;
int g_failed_checks = 0;
#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "  check failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      ++g_failed_checks;                                                                \
    }                                                                                   \
  } while (0)
#define CHECK_OK(call) CHECK((call) == ncclSuccess)

const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                                 ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16};
const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

bool is_unsigned(ncclDataType_t t) { return t == ncclUint8 || t == ncclUint32 || t == ncclUint64; }
bool is_float(ncclDataType_t t) { return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16; }

// Encodings written here, independently of nccl_reduce.cc; the test values are exact in every type.
uint16_t f16_bits(double v) {
  if (v == 0) return std::signbit(v) ? 0x8000 : 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  int e;
  const double m = std::frexp(std::fabs(v), &e);  // |v| = m * 2^e, m in [0.5, 1)
  return sign | static_cast<uint16_t>((e - 1 + 15) << 10) | static_cast<uint16_t>(std::lround((m * 2 - 1) * 1024));
}
double f16_value(uint16_t b) {
  const int e = (b >> 10) & 0x1f, man = b & 0x3ff;
  const double v = e == 0 ? std::ldexp(man, -24) : std::ldexp(1 + man / 1024.0, e - 15);
  return (b & 0x8000) ? -v : v;
}
void put(ncclDataType_t t, void* base, size_t i, double v) {
  switch (t) {
    case ncclInt8:
      static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v);
      break;
    case ncclUint8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case ncclInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case ncclUint32:
      static_cast<uint32_t*>(base)[i] = static_cast<uint32_t>(v);
      break;
    case ncclInt64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
    case ncclUint64:
      static_cast<uint64_t*>(base)[i] = static_cast<uint64_t>(v);
      break;
    case ncclFloat16:
      static_cast<uint16_t*>(base)[i] = f16_bits(v);
      break;
    case ncclFloat32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case ncclFloat64:
      static_cast<double*>(base)[i] = v;
      break;
    case ncclBfloat16: {
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(b >> 16);
      break;
    }
    default:
      break;
  }
}
double get(ncclDataType_t t, const void* base, size_t i) {
  switch (t) {
    case ncclInt8:
      return static_cast<const int8_t*>(base)[i];
    case ncclUint8:
      return static_cast<const uint8_t*>(base)[i];
    case ncclInt32:
      return static_cast<const int32_t*>(base)[i];
    case ncclUint32:
      return static_cast<const uint32_t*>(base)[i];
    case ncclInt64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case ncclUint64:
      return static_cast<double>(static_cast<const uint64_t*>(base)[i]);
    case ncclFloat16:
      return f16_value(static_cast<const uint16_t*>(base)[i]);
    case ncclFloat32:
      return static_cast<const float*>(base)[i];
    case ncclFloat64:
      return static_cast<const double*>(base)[i];
    case ncclBfloat16: {
      const uint32_t b = uint32_t(static_cast<const uint16_t*>(base)[i]) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    default:
      return NAN;
  }
}

// Small values whose sums, products (of up to 4 ranks) and averages (over 2 or 4) are exact in
// every type.
double value(ncclDataType_t t, int r, size_t i) {
  return is_unsigned(t) ? static_cast<double>((r * 5 + i * 3) % 4)
                        : static_cast<double>(static_cast<int>((r * 5 + i * 3) % 7) - 3);
}
double reference(ncclDataType_t t, ncclRedOp_t op, int n, size_t i) {
  double acc = value(t, 0, i);
  for (int r = 1; r < n; ++r) {
    const double v = value(t, r, i);
    acc = op == ncclProd ? acc * v : op == ncclMax ? std::max(acc, v) : op == ncclMin ? std::min(acc, v) : acc + v;
  }
  if (op == ncclAvg) acc = is_float(t) ? acc / n : std::trunc(acc / n);
  return acc;
}

// A device buffer of `n` elements on `device`, and host staging.
struct Buf {
  void* dev = nullptr;
  size_t bytes = 0;
  int device = 0;
  Buf(int d, size_t b) : bytes(b), device(d) {
    cudaSetDevice(d);
    cudaMalloc(&dev, b ? b : 1);
  }
  ~Buf() { cudaFree(dev); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  void upload(const std::vector<unsigned char>& h) { cudaMemcpy(dev, h.data(), h.size(), cudaMemcpyHostToDevice); }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> h(bytes);
    cudaMemcpy(h.data(), dev, bytes, cudaMemcpyDeviceToHost);
    return h;
  }
};

// A clique of n ranks in this process, on devices 0..n-1, with one stream each.
struct Clique {
  int n;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  explicit Clique(int ranks) : n(ranks), comms(ranks), streams(ranks) {
    CHECK_OK(ncclCommInitAll(comms.data(), n, nullptr));
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(r);
      cudaStreamCreate(&streams[r]);
    }
  }
  ~Clique() {
    for (int r = 0; r < n; ++r) {
      CHECK_OK(ncclCommDestroy(comms[r]));
      cudaStreamDestroy(streams[r]);
    }
  }
  void sync() {
    for (int r = 0; r < n; ++r) CHECK(cudaStreamSynchronize(streams[r]) == cudaSuccess);
  }
};

std::vector<unsigned char> host_values(ncclDataType_t t, int r, size_t count, size_t offset = 0) {
  std::vector<unsigned char> h(count * sim::nccl::dtype_size(t));
  for (size_t i = 0; i < count; ++i) put(t, h.data(), i, value(t, r, i + offset));
  return h;
}

// ---- the tests ----

void allreduce_every_op_and_dtype(int n) {
  Clique c(n);
  const size_t count = 37;
  for (ncclDataType_t t : kTypes) {
    const size_t esz = sim::nccl::dtype_size(t);
    for (ncclRedOp_t op : kOps) {
      std::vector<std::unique_ptr<Buf>> in, out;
      for (int r = 0; r < n; ++r) {
        in.push_back(std::make_unique<Buf>(r, count * esz));
        out.push_back(std::make_unique<Buf>(r, count * esz));
        in[r]->upload(host_values(t, r, count));
      }
      for (int r = 0; r < n; ++r) CHECK_OK(ncclAllReduce(in[r]->dev, out[r]->dev, count, t, op, c.comms[r], c.streams[r]));
      c.sync();
      for (int r = 0; r < n; ++r) {
        const auto h = out[r]->download();
        int bad = 0;
        for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), i) != reference(t, op, n, i);
        if (bad) std::fprintf(stderr, "  dtype %d op %d rank %d: %d wrong\n", t, op, r, bad);
        CHECK(bad == 0);
      }
    }
  }
}

void allreduce_in_place_and_larger_than_a_slot() {
  const int n = 2;
  Clique c(n);
  const size_t count = (size_t(5) << 20) / 4 * 3 + 11;  // 15 MiB of f32: four rounds through a 4 MiB slot
  std::vector<std::unique_ptr<Buf>> b;
  for (int r = 0; r < n; ++r) {
    b.push_back(std::make_unique<Buf>(r, count * 4));
    b[r]->upload(host_values(ncclFloat32, r, count));
  }
  for (int r = 0; r < n; ++r)
    CHECK_OK(ncclAllReduce(b[r]->dev, b[r]->dev, count, ncclFloat32, ncclSum, c.comms[r], c.streams[r]));
  c.sync();
  for (int r = 0; r < n; ++r) {
    const auto h = b[r]->download();
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += get(ncclFloat32, h.data(), i) != reference(ncclFloat32, ncclSum, n, i);
    CHECK(bad == 0);
  }
}

void broadcast_allgather_reducescatter(int n) {
  Clique c(n);
  const size_t count = 1000;
  const ncclDataType_t t = ncclFloat64;
  // Broadcast from rank 1: out of place on even ranks, in place on odd ones.
  std::vector<std::unique_ptr<Buf>> src, dst;
  for (int r = 0; r < n; ++r) {
    src.push_back(std::make_unique<Buf>(r, count * 8));
    dst.push_back(std::make_unique<Buf>(r, count * 8));
    src[r]->upload(host_values(t, r, count));
  }
  for (int r = 0; r < n; ++r) {
    void* out = r % 2 ? src[r]->dev : dst[r]->dev;
    CHECK_OK(ncclBroadcast(src[r]->dev, out, count, t, 1, c.comms[r], c.streams[r]));
  }
  c.sync();
  for (int r = 0; r < n; ++r) {
    const auto h = (r % 2 ? src[r] : dst[r])->download();
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), i) != value(t, 1, i);
    CHECK(bad == 0);
  }
  // AllGather: out of place, then in place (the input is this rank's block of the output).
  for (int in_place = 0; in_place < 2; ++in_place) {
    std::vector<std::unique_ptr<Buf>> in, out;
    for (int r = 0; r < n; ++r) {
      in.push_back(std::make_unique<Buf>(r, count * 8));
      out.push_back(std::make_unique<Buf>(r, count * 8 * n));
      in[r]->upload(host_values(t, r, count));
      if (in_place) cudaMemcpy(static_cast<char*>(out[r]->dev) + r * count * 8, in[r]->dev, count * 8, cudaMemcpyDeviceToDevice);
    }
    for (int r = 0; r < n; ++r) {
      const void* send = in_place ? static_cast<char*>(out[r]->dev) + r * count * 8 : in[r]->dev;
      CHECK_OK(ncclAllGather(send, out[r]->dev, count, t, c.comms[r], c.streams[r]));
    }
    c.sync();
    for (int r = 0; r < n; ++r) {
      const auto h = out[r]->download();
      size_t bad = 0;
      for (int j = 0; j < n; ++j)
        for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), j * count + i) != value(t, j, i);
      CHECK(bad == 0);
    }
  }
  // ReduceScatter (sum, max), out of place and in place.
  for (ncclRedOp_t op : {ncclSum, ncclMax}) {
    for (int in_place = 0; in_place < 2; ++in_place) {
      std::vector<std::unique_ptr<Buf>> in, out;
      for (int r = 0; r < n; ++r) {
        in.push_back(std::make_unique<Buf>(r, count * 8 * n));
        out.push_back(std::make_unique<Buf>(r, count * 8));
        in[r]->upload(host_values(t, r, count * n));
      }
      for (int r = 0; r < n; ++r) {
        void* recv = in_place ? static_cast<char*>(in[r]->dev) + r * count * 8 : out[r]->dev;
        CHECK_OK(ncclReduceScatter(in[r]->dev, recv, count, t, op, c.comms[r], c.streams[r]));
      }
      c.sync();
      for (int r = 0; r < n; ++r) {
        const auto h = in_place ? in[r]->download() : out[r]->download();
        const size_t at = in_place ? r * count : 0;
        size_t bad = 0;
        for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), at + i) != reference(t, op, n, r * count + i);
        CHECK(bad == 0);
      }
    }
  }
}

void send_recv_in_a_group(int n, size_t count) {
  Clique c(n);
  const ncclDataType_t t = ncclInt32;
  std::vector<std::unique_ptr<Buf>> out, in;
  for (int r = 0; r < n; ++r) {
    out.push_back(std::make_unique<Buf>(r, count * 4));
    in.push_back(std::make_unique<Buf>(r, count * 4));
    out[r]->upload(host_values(t, r, count, 7));
  }
  // Every rank sends to the next and receives from the previous, all in one group; with payloads
  // larger than a mailbox, both directions must progress together.
  CHECK_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    CHECK_OK(ncclSend(out[r]->dev, count, t, (r + 1) % n, c.comms[r], c.streams[r]));
    CHECK_OK(ncclRecv(in[r]->dev, count, t, (r + n - 1) % n, c.comms[r], c.streams[r]));
  }
  CHECK_OK(ncclGroupEnd());
  c.sync();
  for (int r = 0; r < n; ++r) {
    const auto h = in[r]->download();
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), i) != value(t, (r + n - 1) % n, i + 7);
    CHECK(bad == 0);
  }
}

void group_nesting_and_errors() {
  CHECK(ncclGroupEnd() == ncclInvalidUsage);
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclGroupEnd());
  CHECK_OK(ncclGroupEnd());
  int v = 0;
  CHECK_OK(ncclGetVersion(&v));
  CHECK(v >= 21400);
  CHECK(std::strlen(ncclGetErrorString(ncclInvalidUsage)) > 0);
}

void argument_checks() {
  Clique c(2);
  Buf a(0, 64), b(1, 64);
  std::vector<float> host(16);
  auto s = c.streams[0];
  auto comm = c.comms[0];
  CHECK(ncclAllReduce(nullptr, a.dev, 16, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument);
  CHECK(ncclAllReduce(a.dev, a.dev, 16, static_cast<ncclDataType_t>(42), ncclSum, comm, s) == ncclInvalidArgument);
  CHECK(ncclAllReduce(a.dev, a.dev, 16, ncclFloat32, static_cast<ncclRedOp_t>(9), comm, s) == ncclInvalidArgument);
  CHECK(ncclAllReduce(a.dev, a.dev, 17, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument);        // past the allocation
  CHECK(ncclAllReduce(host.data(), a.dev, 16, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument);  // host memory
  CHECK(ncclAllReduce(b.dev, b.dev, 16, ncclFloat32, ncclSum, comm, s) == ncclInvalidArgument);        // another device's memory
  CHECK(ncclAllReduce(a.dev, a.dev, 16, ncclFloat32, ncclSum, comm, c.streams[1]) ==
        ncclInvalidArgument);  // another device's stream
  CHECK(ncclAllReduce(a.dev, a.dev, 16, ncclFloat32, ncclSum, nullptr, s) == ncclInvalidArgument);
  CHECK(ncclBroadcast(a.dev, a.dev, 16, ncclFloat32, 2, comm, s) == ncclInvalidArgument);
  CHECK(ncclSend(a.dev, 16, ncclFloat32, -1, comm, s) == ncclInvalidArgument);
  CHECK(ncclAllGather(a.dev, a.dev, 16, ncclFloat32, comm, s) == ncclInvalidArgument);      // recv needs 2 * 16
  CHECK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, comm, s) == ncclSuccess);  // nothing to do
  ncclResult_t st = ncclInternalError;
  CHECK_OK(ncclCommGetAsyncError(comm, &st));
  CHECK(st == ncclSuccess);
  ncclUniqueId bad{};
  ncclComm_t x = nullptr;
  CHECK(ncclCommInitRank(&x, 2, bad, 0) == ncclInvalidArgument);
  CHECK(ncclCommInitRank(&x, 2, bad, 2) == ncclInvalidArgument);
  int devs[] = {0, 0};
  ncclComm_t two[2];
  CHECK(ncclCommInitAll(two, 2, devs) == ncclInvalidArgument);
}

ncclConfig_t non_blocking() {
  ncclConfig_t cfg{};
  cfg.size = sizeof cfg;
  cfg.magic = 0xcafebeef;
  cfg.version = 21400;
  cfg.blocking = 0;
  cfg.cgaClusterSize = cfg.minCTAs = cfg.maxCTAs = -2147483647 - 1;
  return cfg;
}

// Polls until the communicator is no longer InProgress; returns the polls it took.
int poll_ready(ncclComm_t c, ncclResult_t* final_state, int limit_ms = 5000) {
  int polls = 0;
  const auto deadline = Clock::now() + std::chrono::milliseconds(limit_ms);
  for (;;) {
    ncclResult_t s = ncclInternalError;
    CHECK_OK(ncclCommGetAsyncError(c, &s));
    if (s != ncclInProgress || Clock::now() > deadline) {
      *final_state = s;
      return polls;
    }
    ++polls;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void non_blocking_init_polls() {
  ncclUniqueId id;
  CHECK_OK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = non_blocking();
  ncclComm_t c0 = nullptr, c1 = nullptr;
  cudaSetDevice(0);
  CHECK(ncclCommInitRankConfig(&c0, 2, id, 0, &cfg) == ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ncclResult_t s = ncclInternalError;
  CHECK_OK(ncclCommGetAsyncError(c0, &s));
  CHECK(s == ncclInProgress);  // rank 1 has not joined
  cudaSetDevice(1);
  CHECK(ncclCommInitRankConfig(&c1, 2, id, 1, &cfg) == ncclInProgress);
  const int polls = poll_ready(c1, &s);
  CHECK(s == ncclSuccess);
  CHECK(polls >= 1);  // ready a little later, not at once
  poll_ready(c0, &s);
  CHECK(s == ncclSuccess);
  ncclComm_t dup = nullptr;
  CHECK(ncclCommInitRankConfig(&dup, 2, id, 1, &cfg) != ncclSuccess);  // the id is used up
  CHECK_OK(ncclCommDestroy(c0));
  CHECK_OK(ncclCommDestroy(c1));
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Rank 0 posts an allreduce that rank 1 never joins: the stream holds, without burning a core,
// until ncclCommAbort; the output stays as it was and the communicator reports an error.
void abort_wakes_a_waiter() {
  Clique c(2);
  Buf in(0, 64), out(0, 64);
  std::vector<unsigned char> marker(64, 0x5a);
  out.upload(marker);
  CHECK_OK(ncclAllReduce(in.dev, out.dev, 16, ncclFloat32, ncclSum, c.comms[0], c.streams[0]));
  const double cpu0 = cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const double cpu = cpu_seconds() - cpu0;
  CHECK(cudaStreamQuery(c.streams[0]) == cudaErrorNotReady);
  CHECK(cpu < 0.1);  // waiting sleeps on a futex
  const auto t0 = Clock::now();
  CHECK_OK(ncclCommAbort(c.comms[0]));
  CHECK(cudaStreamSynchronize(c.streams[0]) == cudaSuccess);
  CHECK(Clock::now() - t0 < std::chrono::milliseconds(200));
  CHECK(out.download() == marker);
  ncclResult_t s = ncclSuccess;
  CHECK_OK(ncclCommGetAsyncError(c.comms[0], &s));
  CHECK(s != ncclSuccess && s != ncclInProgress);
  CHECK(ncclAllReduce(in.dev, out.dev, 16, ncclFloat32, ncclSum, c.comms[0], c.streams[0]) != ncclSuccess);
  c.comms[0] = nullptr;  // ncclCommDestroy(NULL) is a no-op
}

// Ranks issue different collectives at the same position: every rank's communicator fails with
// ncclInvalidUsage, no output is touched, and later calls do nothing.
void mismatch_is_reported() {
  Clique c(2);
  Buf a(0, 256), b(1, 256);
  std::vector<unsigned char> marker(256, 0x33);
  a.upload(marker);
  b.upload(marker);
  CHECK_OK(ncclAllReduce(a.dev, a.dev, 16, ncclFloat32, ncclSum, c.comms[0], c.streams[0]));
  CHECK_OK(ncclAllReduce(b.dev, b.dev, 32, ncclFloat32, ncclSum, c.comms[1], c.streams[1]));
  c.sync();
  for (int r = 0; r < 2; ++r) {
    ncclResult_t s = ncclSuccess;
    CHECK_OK(ncclCommGetAsyncError(c.comms[r], &s));
    CHECK(s == ncclInvalidUsage);
  }
  CHECK(a.download() == marker);
  CHECK(b.download() == marker);
}

// ---- across processes: this binary, re-executed as each rank ----

std::string hex(const ncclUniqueId& id) {
  std::string s;
  char b[3];
  for (unsigned char ch : id.internal) std::snprintf(b, sizeof b, "%02x", ch), s += b;
  return s;
}
ncclUniqueId unhex(const char* s) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal && s[2 * i] && s[2 * i + 1]; ++i) {
    unsigned v = 0;
    std::sscanf(s + 2 * i, "%2x", &v);
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

// One rank of a multi-process job. mode "work": allreduce (small and 3 rounds), broadcast,
// allgather and a send/recv ring; "dead": rank 1 dies after joining and rank 0 must get out
// through abort. Exit status 0 when every check held.
int child(const char* mode, int rank, int n, const char* idhex) {
  const ncclUniqueId id = unhex(idhex);
  cudaSetDevice(rank % 2);
  ncclConfig_t cfg = non_blocking();
  ncclComm_t comm = nullptr;
  const ncclResult_t r0 = ncclCommInitRankConfig(&comm, n, id, rank, &cfg);
  CHECK(r0 == ncclInProgress || r0 == ncclSuccess);
  ncclResult_t s = ncclInternalError;
  poll_ready(comm, &s, 10000);
  CHECK(s == ncclSuccess);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  if (std::strcmp(mode, "dead") == 0) {
    if (rank == 1) raise(SIGKILL);  // joined, then gone without a word
    Buf b(rank % 2, 64);
    CHECK_OK(ncclAllReduce(b.dev, b.dev, 16, ncclFloat32, ncclSum, comm, stream));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(cudaStreamQuery(stream) == cudaErrorNotReady);
    CHECK_OK(ncclCommAbort(comm));
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess);
    return g_failed_checks ? 1 : 0;
  }
  const ncclDataType_t t = ncclFloat32;
  const int dev = rank % 2;
  for (size_t count : {size_t(1000), size_t(3) << 20}) {  // 12 MiB: three rounds through a slot
    Buf b(dev, count * 4);
    b.upload(host_values(t, rank, count));
    CHECK_OK(ncclAllReduce(b.dev, b.dev, count, t, ncclSum, comm, stream));
    cudaStreamSynchronize(stream);
    const auto h = b.download();
    size_t bad = 0;
    for (size_t i = 0; i < count; ++i) bad += get(t, h.data(), i) != reference(t, ncclSum, n, i);
    CHECK(bad == 0);
  }
  const size_t count = 300000;  // larger than a mailbox
  Buf x(dev, count * 4), g(dev, count * 4 * n), in(dev, count * 4);
  x.upload(host_values(t, rank, count));
  CHECK_OK(ncclAllGather(x.dev, g.dev, count, t, comm, stream));
  CHECK_OK(ncclBroadcast(x.dev, x.dev, count, t, n - 1, comm, stream));
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclSend(g.dev, count, t, (rank + 1) % n, comm, stream));  // block 0 of the gather
  CHECK_OK(ncclRecv(in.dev, count, t, (rank + n - 1) % n, comm, stream));
  CHECK_OK(ncclGroupEnd());
  cudaStreamSynchronize(stream);
  const auto hg = g.download(), hx = x.download(), hin = in.download();
  size_t bad = 0;
  for (int j = 0; j < n; ++j)
    for (size_t i = 0; i < count; ++i) bad += get(t, hg.data(), j * count + i) != value(t, j, i);
  for (size_t i = 0; i < count; ++i) bad += get(t, hx.data(), i) != value(t, n - 1, i);
  for (size_t i = 0; i < count; ++i) bad += get(t, hin.data(), i) != value(t, 0, i);
  CHECK(bad == 0);
  CHECK_OK(ncclCommDestroy(comm));
  return g_failed_checks ? 1 : 0;
}

// Runs n children; returns their exit statuses (-signal when killed), killing them after 60 s.
std::vector<int> run_children(const char* mode, int n, std::string* segment) {
  ncclUniqueId id;
  CHECK_OK(ncclGetUniqueId(&id));
  *segment = std::string("/dev/shm") + (id.internal + 4);
  const std::string idh = hex(id);
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  self[len > 0 ? len : 0] = 0;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const std::string rank = std::to_string(r), size = std::to_string(n);
    const pid_t p = fork();
    if (p == 0) {
      execl(self, self, "--child", mode, rank.c_str(), size.c_str(), idh.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    pids.push_back(p);
  }
  std::vector<int> status(n, -1000);
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  int left = n;
  while (left > 0) {
    for (int r = 0; r < n; ++r) {
      if (status[r] != -1000) continue;
      int st = 0;
      if (waitpid(pids[r], &st, WNOHANG) == pids[r]) {
        status[r] = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
        --left;
      }
    }
    if (Clock::now() > deadline) {
      for (int r = 0; r < n; ++r)
        if (status[r] == -1000) kill(pids[r], SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

void cross_process(int n) {
  std::string seg;
  const std::vector<int> st = run_children("work", n, &seg);
  for (int r = 0; r < n; ++r) CHECK(st[r] == 0);
  struct stat sb {};
  CHECK(stat(seg.c_str(), &sb) != 0);  // unlinked once every rank had joined
}

void cross_process_dead_peer() {
  std::string seg;
  const std::vector<int> st = run_children("dead", 2, &seg);
  CHECK(st[0] == 0);
  CHECK(st[1] == -SIGKILL);
  struct stat sb {};
  CHECK(stat(seg.c_str(), &sb) != 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  if (argc == 6 && std::strcmp(argv[1], "--child") == 0) return child(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), argv[5]);
  setenv("FLOCKML_CUDA_SIM_DEVICES", "4", 1);
  const std::vector<std::pair<const char*, std::function<void()>>> tests = {
      {"allReduce, every op and dtype, 2 ranks", [] { allreduce_every_op_and_dtype(2); }},
      {"allReduce, every op and dtype, 4 ranks", [] { allreduce_every_op_and_dtype(4); }},
      {"allReduce in place, larger than a slot", allreduce_in_place_and_larger_than_a_slot},
      {"broadcast, allGather, reduceScatter (in place too), 2 ranks", [] { broadcast_allgather_reducescatter(2); }},
      {"broadcast, allGather, reduceScatter (in place too), 4 ranks", [] { broadcast_allgather_reducescatter(4); }},
      {"send/recv ring in a group, 4 ranks", [] { send_recv_in_a_group(4, 1000); }},
      {"send/recv exchange in a group, larger than a mailbox", [] { send_recv_in_a_group(2, 400000); }},
      {"group nesting, version, error strings", group_nesting_and_errors},
      {"argument checks", argument_checks},
      {"non-blocking init: InProgress, then ready", non_blocking_init_polls},
      {"abort wakes a waiter whose peer never comes", abort_wakes_a_waiter},
      {"a collective mismatch is ncclInvalidUsage on every rank", mismatch_is_reported},
      {"cross-process allReduce/allGather/broadcast/send-recv, 2 processes", [] { cross_process(2); }},
      {"cross-process allReduce/allGather/broadcast/send-recv, 4 processes", [] { cross_process(4); }},
      {"cross-process: a dead peer, then abort", cross_process_dead_peer},
  };
  int passed = 0, failed = 0;
  for (const auto& [name, fn] : tests) {
    const int before = g_failed_checks;
    const auto t0 = Clock::now();
    fn();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    const bool ok = g_failed_checks == before;
    std::printf("%s %s (%.0f ms)\n", ok ? "ok  " : "FAIL", name, ms);
    std::fflush(stdout);
    (ok ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
