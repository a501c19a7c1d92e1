// flock::Error — the one way the core reports failure. Bindings turn it into a JS TypeError or
// RangeError carrying the code; nothing in the core aborts on a user-reachable path.
#pragma once
#include <charconv>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace flock {

enum class Code {
  Shape,
  DType,
  Device,
  Disposed,
  OOM,
  Cuda,
  Nccl,
  Timeout,
  PeerLost,
  Arg,
  Index,
  Range,
  CollectiveMismatch,
  IO,
  Internal,
  Format,
  PeerFailed
};

inline const char* code_name(Code c) {
  switch (c) {
    case Code::Shape:
      return "ERR_SHAPE";
    case Code::DType:
      return "ERR_DTYPE";
    case Code::Device:
      return "ERR_DEVICE";
    case Code::Disposed:
      return "ERR_DISPOSED";
    case Code::OOM:
      return "ERR_OOM";
    case Code::Cuda:
      return "ERR_CUDA";
    case Code::Nccl:
      return "ERR_NCCL";
    case Code::Timeout:
      return "ERR_TIMEOUT";
    case Code::PeerLost:
      return "ERR_PEER_LOST";
    case Code::Arg:
      return "ERR_ARG";
    case Code::Index:
      return "ERR_INDEX";
    case Code::Range:
      return "ERR_RANGE";
    case Code::CollectiveMismatch:
      return "ERR_COLLECTIVE_MISMATCH";
    case Code::IO:
      return "ERR_IO";
    case Code::Internal:
      return "ERR_INTERNAL";
    case Code::Format:
      return "ERR_FORMAT";
    case Code::PeerFailed:
      return "ERR_PEER_FAILED";
  }
  return "ERR_INTERNAL";
}

// The one rule for an error's JS class, shared with lib/errors.ts (errorKind): a wrong kind of
// argument (dtype, device, disposed handle, argument type) is a TypeError; a value outside what
// is allowed (shape, index, range, memory) a RangeError; a failure while running a plain Error.
enum class ErrorKind { Type, Range, Other };
inline ErrorKind error_kind(Code c) {
  switch (c) {
    case Code::DType:
    case Code::Device:
    case Code::Disposed:
    case Code::Arg:
      return ErrorKind::Type;
    case Code::Shape:
    case Code::Index:
    case Code::Range:
    case Code::OOM:
      return ErrorKind::Range;
    default:
      return ErrorKind::Other;
  }
}

struct Error : std::runtime_error {
  Code code;
  Error(Code c, const std::string& msg) : std::runtime_error(msg), code(c) {}
};

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? "," : "") << s[i];
  o << ']';
  return o.str();
}

// A double as its shortest exact decimal (2147483648, not 2.14748e+09), for messages.
inline std::string num_str(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

template <class... Parts>
[[noreturn]] void fail(Code c, const Parts&... parts) {
  std::ostringstream o;
  (o << ... << parts);
  throw Error(c, o.str());
}

#define FLOCK_CHECK(cond, code, ...)                              \
  do {                                                            \
    if (!(cond)) ::flock::fail(::flock::Code::code, __VA_ARGS__); \
  } while (0)

}  // namespace flock
