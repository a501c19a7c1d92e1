// Element types and their conversions. bf16 and f16 are storage types: kernels widen them to
// float, compute, and round back (round-to-nearest-even), as mixed precision expects.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include "error.h"

namespace flock {

enum class DType : uint8_t { f32, f64, i32, i64, u8, boolean, bf16, f16 };
constexpr int kNumDTypes = 8;

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::u8:
    case DType::boolean:
      return 1;
    case DType::bf16:
    case DType::f16:
      return 2;
  }
  return 0;
}

inline const char* dtype_name(DType t) {
  static const char* names[] = {"f32", "f64", "i32", "i64", "u8", "bool", "bf16", "f16"};
  return names[static_cast<int>(t)];
}

inline bool parse_dtype(const std::string& s, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (s == dtype_name(static_cast<DType>(i))) {
      *out = static_cast<DType>(i);
      return true;
    }
  return false;
}

inline bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16 || t == DType::f16; }

struct bf16 {
  uint16_t bits;
  bf16() = default;
  bf16(float f) {  // NOLINT: implicit by design, like a numeric type
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
      return;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    bits = static_cast<uint16_t>(u >> 16);
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

struct f16 {
  uint16_t bits;
  f16() = default;
  f16(float f) {  // NOLINT
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
      bits = static_cast<uint16_t>(sign | 0x7e00u);
      return;
    }
    if (ax >= 0x477ff000u) {
      bits = static_cast<uint16_t>(sign | 0x7c00u);
      return;
    }                        // overflow -> inf
    if (ax < 0x38800000u) {  // subnormal or zero in half
      float af;
      std::memcpy(&af, &ax, 4);
      bits = static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(af * 16777216.0f)));
      return;
    }
    uint32_t mant_odd = (ax >> 13) & 1u;
    ax += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    bits = static_cast<uint16_t>(sign | (ax >> 13));
  }
  operator float() const {
    uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
    uint32_t exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
    uint32_t u;
    if (exp == 0) {
      float f = std::ldexp(static_cast<float>(mant), -24);
      std::memcpy(&u, &f, 4);
      u |= sign;
    } else if (exp == 31) {
      u = sign | 0x7f800000u | (mant << 13);
    } else {
      u = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

// The arithmetic type a storage type computes in.
template <class T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<bf16> {
  using type = float;
};
template <>
struct compute_type<f16> {
  using type = float;
};
template <>
struct compute_type<bool> {
  using type = bool;
};
template <class T>
using acc_t = typename compute_type<T>::type;

template <class T>
struct type_tag {
  using type = T;
};

// Calls fn(type_tag<T>{}) with T the C++ type of `t`.
template <class Fn>
decltype(auto) visit_dtype(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(type_tag<float>{});
    case DType::f64:
      return fn(type_tag<double>{});
    case DType::i32:
      return fn(type_tag<int32_t>{});
    case DType::i64:
      return fn(type_tag<int64_t>{});
    case DType::u8:
      return fn(type_tag<uint8_t>{});
    case DType::boolean:
      return fn(type_tag<bool>{});
    case DType::bf16:
      return fn(type_tag<bf16>{});
    case DType::f16:
      return fn(type_tag<f16>{});
  }
  fail(Code::DType, "unknown dtype");
}

template <class Fn>
decltype(auto) visit_float(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(type_tag<float>{});
    case DType::f64:
      return fn(type_tag<double>{});
    case DType::bf16:
      return fn(type_tag<bf16>{});
    case DType::f16:
      return fn(type_tag<f16>{});
    default:
      fail(Code::DType, op, ": expected a floating dtype (f32, f64, bf16, f16), got ", dtype_name(t));
  }
}

// Every dtype that arithmetic is defined on (bool excluded).
template <class Fn>
decltype(auto) visit_numeric(DType t, const char* op, Fn&& fn) {
  if (t == DType::boolean) fail(Code::DType, op, ": not defined for bool tensors");
  return visit_dtype(t, std::forward<Fn>(fn));
}

template <class T>
inline double to_double(T v) {
  return static_cast<double>(static_cast<acc_t<T>>(v));
}
template <class T>
inline T from_double(double v) {
  if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)
    return T(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

}  // namespace flock
