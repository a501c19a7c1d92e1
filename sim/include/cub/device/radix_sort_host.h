// What the simulator's CUB radix sorts share: the ordering CUB's radix passes give a key type
// (its bits as an unsigned integer, with signed and floating-point keys flipped so that the
// unsigned order is the numeric one), restricted to bits [begin_bit, end_bit), and a stable
// sort of one run of (key, value) pairs by it. Runs on the host, as a stream-ordered op.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

namespace sim::cub_sort {

template <class K>
using UnsignedBits =
    std::conditional_t<sizeof(K) == 1, uint8_t,
                       std::conditional_t<sizeof(K) == 2, uint16_t, std::conditional_t<sizeof(K) == 4, uint32_t, uint64_t>>>;

template <class K>
UnsignedBits<K> radix_bits(K key, int begin_bit, int end_bit) {
  using U = UnsignedBits<K>;
  U u;
  std::memcpy(&u, &key, sizeof(K));
  constexpr U top = static_cast<U>(U(1) << (sizeof(K) * 8 - 1));
  if constexpr (std::is_floating_point_v<K>)
    u = (u & top) ? static_cast<U>(~u) : static_cast<U>(u | top);
  else if constexpr (std::is_signed_v<K>)
    u = static_cast<U>(u ^ top);
  const int width = end_bit - begin_bit;
  if (width <= 0) return 0;
  u = static_cast<U>(u >> begin_bit);
  if (width < static_cast<int>(sizeof(K) * 8)) u = static_cast<U>(u & ((U(1) << width) - 1));
  return u;
}

// Sorts items [begin, end) of keys_in/values_in into the same positions of keys_out/values_out.
template <class K, class V>
void sort_run(const K* keys_in, K* keys_out, const V* values_in, V* values_out, int64_t begin, int64_t end, int begin_bit,
              int end_bit) {
  if (end <= begin) return;
  std::vector<int64_t> order(static_cast<size_t>(end - begin));
  std::iota(order.begin(), order.end(), begin);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return radix_bits(keys_in[a], begin_bit, end_bit) < radix_bits(keys_in[b], begin_bit, end_bit);
  });
  // Gather through copies: the output may alias nothing, but read everything before writing.
  std::vector<K> k(order.size());
  std::vector<V> v(values_in ? order.size() : 0);
  for (size_t i = 0; i < order.size(); ++i) {
    k[i] = keys_in[order[i]];
    if (values_in) v[i] = values_in[order[i]];
  }
  std::copy(k.begin(), k.end(), keys_out + begin);
  if (values_in) std::copy(v.begin(), v.end(), values_out + begin);
}

// The byte count the first (sizing) call reports: nonzero, so callers allocate something real.
constexpr size_t kTempBytes = 256;

}  // namespace sim::cub_sort
