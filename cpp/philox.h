// Philox4x32-10, the counter-based generator both backends share: element j of a random tensor
// drawn at (seed, offset) depends only on (seed, offset + j / 4), so CPU and CUDA produce the
// same numbers however the work is split.
#pragma once
#include <cstdint>
#include <cmath>

#ifdef __CUDACC__
#define FLOCK_PHILOX_HD __host__ __device__ __forceinline__
#else
#define FLOCK_PHILOX_HD inline
#endif

namespace flock {

struct Philox4 {
  uint32_t v[4];
};

FLOCK_PHILOX_HD uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

FLOCK_PHILOX_HD Philox4 philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, hi1;
    uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1) with 24 bits, exactly representable in float.
FLOCK_PHILOX_HD float philox_uniform(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

// Box-Muller on words (a, b) -> two standard normals.
FLOCK_PHILOX_HD void philox_normal2(uint32_t a, uint32_t b, float* z0, float* z1) {
  const float u1 = (static_cast<float>(a >> 8) + 1.0f) * (1.0f / 16777216.0f);  // (0, 1]
  const float u2 = philox_uniform(b);
  const float r = sqrtf(-2.0f * logf(u1));
  const float t = 6.28318530717958647692f * u2;
  *z0 = r * cosf(t);
  *z1 = r * sinf(t);
}

// The four values of counter group `r` for a RandomKind (0 uniform in [a, b), 1 normal with
// mean a and std b, 3 bernoulli with p = a); randint reads the raw words instead.
FLOCK_PHILOX_HD void philox_values(int kind, const Philox4& r, double a, double b, float v[4]) {
  switch (kind) {
    case 0:
      for (int j = 0; j < 4; ++j) v[j] = static_cast<float>(a + (b - a) * philox_uniform(r.v[j]));
      break;
    case 1:
      philox_normal2(r.v[0], r.v[1], &v[0], &v[1]);
      philox_normal2(r.v[2], r.v[3], &v[2], &v[3]);
      for (int j = 0; j < 4; ++j) v[j] = static_cast<float>(a + b * v[j]);
      break;
    case 3:
      for (int j = 0; j < 4; ++j) v[j] = philox_uniform(r.v[j]) < a ? 1.0f : 0.0f;
      break;
    default:
      for (int j = 0; j < 4; ++j) v[j] = 0.0f;
  }
}

}  // namespace flock
