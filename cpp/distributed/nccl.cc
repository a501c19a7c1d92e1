// NCCL found at run time. Without a GPU build, a GPU, or the library, the nccl backend reports
// itself unavailable with the reason, and the ring backend remains.
#include "nccl.h"
#include <dlfcn.h>
#include <algorithm>
#include <cstdlib>
#include <mutex>
#include "../gpu_runtime.h"
#include "process_group.h"

namespace flock::dist {
namespace nccl {
namespace {

struct Loaded {
  Api api{};
  bool ok = false;
  std::string why;
};

template <class F>
bool bind(void* lib, const char* name, F* slot, std::string* why) {
  *slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!*slot) *why = std::string("the NCCL library lacks ") + name + " (NCCL 2.14 or newer is needed)";
  return *slot != nullptr;
}

Loaded open_library() {
  Loaded l;
  const char* env = std::getenv("FLOCKML_NCCL_PATH");
  const std::string path = env && *env ? env : "libnccl.so.2";
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.why = "cannot load " + path + " (" + (e ? e : "not found") + "); install NCCL or set FLOCKML_NCCL_PATH";
    return l;
  }
  Api& a = l.api;
  l.ok = bind(lib, "ncclGetVersion", &a.GetVersion, &l.why) && bind(lib, "ncclGetErrorString", &a.GetErrorString, &l.why) &&
         bind(lib, "ncclGetUniqueId", &a.GetUniqueId, &l.why) && bind(lib, "ncclCommInitRank", &a.CommInitRank, &l.why) &&
         bind(lib, "ncclCommInitAll", &a.CommInitAll, &l.why) &&
         bind(lib, "ncclCommInitRankConfig", &a.CommInitRankConfig, &l.why) && bind(lib, "ncclAllReduce", &a.AllReduce, &l.why) &&
         bind(lib, "ncclBroadcast", &a.Broadcast, &l.why) && bind(lib, "ncclAllGather", &a.AllGather, &l.why) &&
         bind(lib, "ncclReduceScatter", &a.ReduceScatter, &l.why) && bind(lib, "ncclSend", &a.Send, &l.why) &&
         bind(lib, "ncclRecv", &a.Recv, &l.why) && bind(lib, "ncclGroupStart", &a.GroupStart, &l.why) &&
         bind(lib, "ncclGroupEnd", &a.GroupEnd, &l.why) && bind(lib, "ncclCommGetAsyncError", &a.CommGetAsyncError, &l.why) &&
         bind(lib, "ncclCommAbort", &a.CommAbort, &l.why) && bind(lib, "ncclCommDestroy", &a.CommDestroy, &l.why);
  return l;  // the handle stays open for the life of the process: communicators may outlive us
}

}  // namespace

const Api* load(std::string* why) {
  static Loaded l = open_library();
  if (!l.ok && why) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

}  // namespace nccl

NcclBackend& nccl_backend() {
  static NcclBackend b;
  return b;
}

bool nccl_available(std::string* why) {
  if (!nccl_backend().init_rank) {
    if (why) *why = "this build has no CUDA (rebuild with FLOCKML_CUDA=ON)";
    return false;
  }
  if (gpu_device_count() == 0) {
    if (why) *why = "no CUDA device is visible";
    return false;
  }
  return nccl::load(why) != nullptr;
}

NcclId nccl_unique_id() {
  std::string why;
  if (!nccl_available(&why)) fail(Code::Nccl, "nccl unavailable: ", why);
  const nccl::Api* a = nccl::load(nullptr);
  nccl::UniqueId id{};
  const nccl::Result r = a->GetUniqueId(&id);
  if (r != nccl::Success) fail(Code::Nccl, "ncclGetUniqueId failed: ", a->GetErrorString(r));
  NcclId out;
  std::copy(id.internal, id.internal + sizeof id.internal, out.begin());
  return out;
}

std::string nccl_version() {
  const nccl::Api* a = nccl::load(nullptr);
  int v = 0;
  if (!a || a->GetVersion(&v) != nccl::Success) return "";
  // 2.19.3 is 21903 since 2.9; older releases used major*1000 + minor*100 + patch.
  const int major = v >= 10000 ? v / 10000 : v / 1000, minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

}  // namespace flock::dist
