// CPU sort (sort, argsort, topk): a stable sort of each row's indices by order-preserving keys
// (sort_key.h), so ties keep their input order and NaN sorts as torch.sort sorts it.
#include <algorithm>
#include <numeric>
#include <vector>
#include "../kernels.h"
#include "../sort_key.h"
#include "loops.h"

namespace flock::cpu {
namespace {

template <class T>
uint64_t key_of(T v) {
  if constexpr (std::is_floating_point_v<acc_t<T>>)
    return sort_key_float(static_cast<double>(static_cast<acc_t<T>>(v)));
  else if constexpr (std::is_same_v<T, bool>)
    return v ? 1 : 0;
  else
    return sort_key_int(static_cast<int64_t>(v));
}

void sort_cpu(const Tensor& x, Tensor& values, Tensor& indices, int64_t rows, int64_t n, bool descending) {
  if (rows * n == 0) return;
  visit_dtype(x.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    int64_t* ip = indices.data<int64_t>();
    parallel_for(rows, std::max<int64_t>(1, 8192 / n), [&](int64_t r0, int64_t r1) {
      std::vector<uint64_t> keys(static_cast<size_t>(n));
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = r0; r < r1; ++r) {
        const T* row = xp + r * n;
        for (int64_t i = 0; i < n; ++i) keys[i] = sort_key_dir(key_of(row[i]), descending);
        std::iota(order.begin(), order.end(), int64_t(0));
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
        for (int64_t i = 0; i < n; ++i) {
          vp[r * n + i] = row[order[i]];
          ip[r * n + i] = order[i];
        }
      }
    });
  });
}

}  // namespace

FLOCK_REGISTER_KERNEL(sort, CPU, sort_cpu);

}  // namespace flock::cpu
