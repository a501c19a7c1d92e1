// The 32-byte call header every ring collective (and send) carries, so ranks that disagree about
// what they are running find out before taking each other's bytes (see ring.cc).
#pragma once
#include <cstdint>
#include <string>
#include "../dtype.h"
#include "process_group.h"

namespace flock::dist {

constexpr uint32_t kCallMagic = 0x666c6863;  // "flhc": a call header, not stray data

enum class Call : uint8_t { AllReduce = 1, Broadcast, AllGather, ReduceScatter, Barrier, Send };

// What a rank is about to run. One per collective (not per chunk), so it costs one small message
// and one check. Every field is re-validated on arrival.
struct CallHeader {
  uint32_t magic = kCallMagic;
  Call call{};
  uint8_t dtype = 0;
  uint8_t reduce = 0;
  // Posted by a rank whose stream had failed (stream_failure.h): its data is garbage, so no rank
  // may use the result. Not part of same_call: every rank still runs the collective to its end,
  // keeping the byte streams in step, and then fails it (ERR_PEER_FAILED on the others).
  uint8_t failed = 0;
  int32_t root = 0;         // broadcast
  int32_t failed_code = 0;  // that rank's error code (flock::Code) when `failed`
  int64_t count = 0;        // elements; per rank for allGather and reduceScatter
  int64_t seq = 0;          // collectives: number in the group, from 1; send: number on this pair, from 1
};
static_assert(sizeof(CallHeader) == 32, "call headers are 32 bytes on the wire");

inline bool same_call(const CallHeader& a, const CallHeader& b) {
  return a.magic == b.magic && a.call == b.call && a.dtype == b.dtype && a.reduce == b.reduce && a.root == b.root &&
         a.count == b.count && a.seq == b.seq;
}

inline bool is_call(const CallHeader& h) { return h.magic == kCallMagic && h.call >= Call::AllReduce && h.call <= Call::Send; }

// `allReduce(f32, 1000 elements)`, the reduce op named when not the default or when `reduce` says so.
inline std::string describe(const CallHeader& h, bool reduce) {
  if (!is_call(h)) return "something that is not a flockml call (another version of flockml?)";
  static const char* names[] = {"", "allReduce", "broadcast", "allGather", "reduceScatter", "barrier", "send"};
  std::string s = names[static_cast<int>(h.call)];
  if (h.call == Call::Barrier) return s + "()";
  s += "(";
  s += h.dtype < kNumDTypes ? dtype_name(static_cast<DType>(h.dtype)) : "dtype #" + std::to_string(h.dtype);
  s += ", " + std::to_string(h.count) + (h.count == 1 ? " element" : " elements");
  if (h.call == Call::AllGather || h.call == Call::ReduceScatter) s += " per rank";
  if (h.call == Call::Broadcast) s += ", root " + std::to_string(h.root);
  const bool reduces = h.call == Call::AllReduce || h.call == Call::ReduceScatter;
  if (reduces && (reduce || h.reduce != 0)) s += std::string(", ") + (h.reduce < 5 ? dist::kReduceOpNames[h.reduce] : "?");
  return s + ")";
}

}  // namespace flock::dist
