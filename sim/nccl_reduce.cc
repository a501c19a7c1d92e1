// The simulated NCCL's reductions (see nccl_reduce.h for the rounding choices).
#include "nccl_reduce.h"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace sim::nccl {
namespace {

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

float bf16_to_float(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }
uint16_t float_to_bf16(float f) {
  const uint32_t b = float_to_bits(f);
  if (std::isnan(f)) return 0x7fc0;
  return static_cast<uint16_t>((b + 0x7fff + ((b >> 16) & 1)) >> 16);  // round to nearest even
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000 | (man << 13));
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(man), -24);  // zero, subnormal
  return bits_to_float(sign | ((exp + 112) << 23) | (man << 13));
}
uint16_t float_to_f16(float f) {
  const uint32_t b = float_to_bits(f);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  if (std::isnan(f)) return sign | 0x7e00;
  const float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00;  // rounds to infinity
  if (a < 6.103515625e-05f) {
    // Subnormal: a multiple of 2^-24; nearbyint rounds half to even in the default mode.
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));
  }
  const uint32_t ab = b & 0x7fffffff;
  const uint32_t rounded = ab + 0xfff + ((ab >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded >> 13) - (112 << 10));
}

// The storage type, the type the reduction runs in, and the conversions between them.
template <class S, class A>
struct Plain {
  using Storage = S;
  using Acc = A;
  static A load(S v) { return static_cast<A>(v); }
  static S store(A v) { return static_cast<S>(v); }
};
struct Half {
  using Storage = uint16_t;
  using Acc = float;
  static float load(uint16_t v) { return f16_to_float(v); }
  static uint16_t store(float v) { return float_to_f16(v); }
};
struct BHalf {
  using Storage = uint16_t;
  using Acc = float;
  static float load(uint16_t v) { return bf16_to_float(v); }
  static uint16_t store(float v) { return float_to_bf16(v); }
};

template <class A>
A combine(int op, A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    switch (op) {
      case ncclProd:
        return a * b;
      case ncclMax:
        return std::fmax(a, b);
      case ncclMin:
        return std::fmin(a, b);
      default:
        return a + b;  // sum, avg
    }
  } else {
    // Integers wrap, as on the GPU: do the arithmetic unsigned (signed overflow is UB in C++).
    using U = std::make_unsigned_t<A>;
    switch (op) {
      case ncclProd:
        return static_cast<A>(static_cast<U>(a) * static_cast<U>(b));
      case ncclMax:
        return a < b ? b : a;
      case ncclMin:
        return b < a ? b : a;
      default:
        return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    }
  }
}

template <class T>
void reduce_as(int op, const void* const* in, int ranks, size_t n, void* out) {
  using S = typename T::Storage;
  using A = typename T::Acc;
  S* o = static_cast<S*>(out);
  for (size_t i = 0; i < n; ++i) {
    A acc = T::load(static_cast<const S*>(in[0])[i]);
    for (int r = 1; r < ranks; ++r) acc = combine<A>(op, acc, T::load(static_cast<const S*>(in[r])[i]));
    if (op == ncclAvg) acc = static_cast<A>(acc / static_cast<A>(ranks));
    o[i] = T::store(acc);
  }
}

}  // namespace

size_t dtype_size(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

void reduce(int dtype, int op, const void* const* in, int ranks, size_t n, void* out) {
  switch (dtype) {
    case ncclInt8:
      return reduce_as<Plain<int8_t, int8_t>>(op, in, ranks, n, out);
    case ncclUint8:
      return reduce_as<Plain<uint8_t, uint8_t>>(op, in, ranks, n, out);
    case ncclInt32:
      return reduce_as<Plain<int32_t, int32_t>>(op, in, ranks, n, out);
    case ncclUint32:
      return reduce_as<Plain<uint32_t, uint32_t>>(op, in, ranks, n, out);
    case ncclInt64:
      return reduce_as<Plain<int64_t, int64_t>>(op, in, ranks, n, out);
    case ncclUint64:
      return reduce_as<Plain<uint64_t, uint64_t>>(op, in, ranks, n, out);
    case ncclFloat16:
      return reduce_as<Half>(op, in, ranks, n, out);
    case ncclFloat32:
      return reduce_as<Plain<float, float>>(op, in, ranks, n, out);
    case ncclFloat64:
      return reduce_as<Plain<double, double>>(op, in, ranks, n, out);
    case ncclBfloat16:
      return reduce_as<BHalf>(op, in, ranks, n, out);
    default:
      return;
  }
}

}  // namespace sim::nccl
