// CPU data movement: strided copies (permute, expand, narrow, cat), index_select, gather,
// scatter_add and one_hot. Indices are checked as they are read; a bad one fails the op with ERR_INDEX.
#include <cstring>
#include "../kernels.h"
#include "index_plan.h"
#include "loops.h"

namespace flock::cpu {
namespace {

// One run of `n` elements with element strides; typed by size so it is a plain load/store loop.
template <class U>
void copy_run(const char* s, int64_t ss, char* d, int64_t ds, int64_t n) {
  const U* src = reinterpret_cast<const U*>(s);
  U* dst = reinterpret_cast<U*>(d);
  for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
}

void copy_strided_run(const char* s, int64_t ss, char* d, int64_t ds, int64_t n, size_t es) {
  switch (es) {
    case 1: copy_run<uint8_t>(s, ss, d, ds, n); break;
    case 2: copy_run<uint16_t>(s, ss, d, ds, n); break;
    case 4: copy_run<uint32_t>(s, ss, d, ds, n); break;
    default: copy_run<uint64_t>(s, ss, d, ds, n); break;
  }
}

void strided_copy_cpu(const Tensor& src, Tensor& dst, const StridedCopy& p) {
  int64_t total = 1;
  for (int64_t s : p.shape) total *= s;
  if (total == 0) return;
  const size_t es = dtype_size(src.dtype);
  const char* sp = static_cast<const char*>(src.raw());
  char* dp = static_cast<char*>(dst.raw());
  const int64_t nd = static_cast<int64_t>(p.shape.size());
  const int64_t inner = nd ? p.shape[nd - 1] : 1;
  const int64_t ss = nd ? p.src_strides[nd - 1] : 1, ds = nd ? p.dst_strides[nd - 1] : 1;
  const int64_t rows = total / inner;
  parallel_for(rows, std::max<int64_t>(1, kElementGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t so = p.src_offset, dof = p.dst_offset, rem = r;
      for (int64_t d = nd - 2; d >= 0; --d) {
        int64_t i = rem % p.shape[d];
        rem /= p.shape[d];
        so += i * p.src_strides[d];
        dof += i * p.dst_strides[d];
      }
      if (ss == 1 && ds == 1) {
        std::memcpy(dp + dof * es, sp + so * es, static_cast<size_t>(inner) * es);
      } else {
        copy_strided_run(sp + so * es, ss, dp + dof * es, ds, inner, es);
      }
    }
  });
}

// Reads index i of an i32/i64 index tensor and checks it against [0, limit). The message leaves
// the op out: the stream prefixes the name the op was launched under (embedding, not indexSelect).
struct IndexReader {
  const void* p;
  bool wide;
  explicit IndexReader(const Tensor& t) : p(t.raw()), wide(t.dtype == DType::i64) {}
  int64_t operator()(int64_t i, int64_t limit) const {
    int64_t v = wide ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
    if (v < 0 || v >= limit) fail(Code::Index, "index ", v, " is out of range for a dimension of size ", limit);
    return v;
  }
};

void index_select_cpu(const Tensor& x, const Tensor& index, Tensor& out, int64_t outer, int64_t dim_size, int64_t inner) {
  const int64_t n = index.numel();
  const size_t es = dtype_size(x.dtype);
  const char* xp = static_cast<const char*>(x.raw());
  char* op = static_cast<char*>(out.raw());
  IndexReader idx(index);
  const size_t row = static_cast<size_t>(inner) * es;
  parallel_for(outer * n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, inner)), [&](int64_t b, int64_t e) {
    for (int64_t job = b; job < e; ++job) {
      const int64_t o = job / n, j = job % n;
      const int64_t k = idx(j, dim_size);
      std::memcpy(op + (o * n + j) * row, xp + (o * dim_size + k) * row, row);
    }
  });
}

void gather_cpu(const Tensor& x, const Tensor& index, Tensor& out, int64_t dim) {
  IndexPlan g(x.shape, index.shape, dim);
  IndexReader idx(index);
  const size_t es = dtype_size(x.dtype);
  const char* xp = static_cast<const char*>(x.raw());
  char* op = static_cast<char*>(out.raw());
  parallel_for(g.outer * g.n, std::max<int64_t>(1, kElementGrain / g.inner), [&](int64_t b, int64_t e) {
    for (int64_t job = b; job < e; ++job) {
      const int64_t o = job / g.n, j = job % g.n;
      for (int64_t i = 0; i < g.inner; ++i) {
        const int64_t lin = job * g.inner + i;
        const int64_t k = idx(lin, g.data_dim);
        std::memcpy(op + lin * es, xp + (g.outer_off[o] + k * g.stride + g.inner_off[i]) * es, es);
      }
      (void)j;
    }
  });
}

void scatter_add_cpu(Tensor& out, const Tensor& index, const Tensor& src, int64_t dim) {
  IndexPlan g(out.shape, index.shape, dim);
  IndexReader idx(index);
  visit_numeric(out.dtype, "scatterAdd", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* op = out.data<T>();
    const T* sp = src.data<T>();
    // Writes for one (outer, inner) column never meet another column's, so split by outer.
    parallel_for(g.outer, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, g.n * g.inner)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        for (int64_t j = 0; j < g.n; ++j)
          for (int64_t i = 0; i < g.inner; ++i) {
            const int64_t lin = (o * g.n + j) * g.inner + i;
            const int64_t k = idx(lin, g.data_dim);
            T& d = op[g.outer_off[o] + k * g.stride + g.inner_off[i]];
            d = static_cast<T>(static_cast<acc_t<T>>(d) + static_cast<acc_t<T>>(sp[lin]));
          }
    });
  });
}

void one_hot_cpu(const Tensor& index, Tensor& out, int64_t num_classes) {
  const int64_t n = index.numel();
  const bool wide = index.dtype == DType::i64;
  auto at = [&](int64_t i) -> int64_t {
    return wide ? static_cast<const int64_t*>(index.raw())[i] : static_cast<const int32_t*>(index.raw())[i];
  };
  // Every index is checked before anything is written, so a bad one leaves no partial output.
  for (int64_t i = 0; i < n; ++i)
    if (at(i) < 0 || at(i) >= num_classes) fail(Code::Index, "oneHot: class index ", at(i), " is out of range for numClasses ", num_classes);
  int64_t* op = out.data<int64_t>();
  std::memset(op, 0, out.nbytes());
  parallel_for(n, kElementGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) op[i * num_classes + at(i)] = 1;
  });
}

void copy_to_host_cpu(const Tensor& src, void* host) { std::memcpy(host, src.raw(), src.nbytes()); }
void copy_from_host_cpu(const void* host, Tensor& dst) { std::memcpy(dst.raw(), host, dst.nbytes()); }

}  // namespace

FLOCK_REGISTER_KERNEL(copy_to_host, CPU, copy_to_host_cpu);
FLOCK_REGISTER_KERNEL(copy_from_host, CPU, copy_from_host_cpu);
FLOCK_REGISTER_KERNEL(strided_copy, CPU, strided_copy_cpu);
FLOCK_REGISTER_KERNEL(index_select, CPU, index_select_cpu);
FLOCK_REGISTER_KERNEL(gather, CPU, gather_cpu);
FLOCK_REGISTER_KERNEL(scatter_add, CPU, scatter_add_cpu);
FLOCK_REGISTER_KERNEL(one_hot, CPU, one_hot_cpu);

}  // namespace flock::cpu
