// CPU data movement: strided copies (permute, expand, narrow, cat), index_select, gather,
// scatter_add and one_hot. Indices are checked as they are read; a bad one fails the op with ERR_INDEX.
#include <algorithm>
#include <cstring>
#include "../kernels.h"
#include "gemm_pack.h"
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
    case 1:
      copy_run<uint8_t>(s, ss, d, ds, n);
      break;
    case 2:
      copy_run<uint16_t>(s, ss, d, ds, n);
      break;
    case 4:
      copy_run<uint32_t>(s, ss, d, ds, n);
      break;
    default:
      copy_run<uint64_t>(s, ss, d, ds, n);
      break;
  }
}

// The offsets in src and dst of index `r` over dims [0, nd) of the copy (row-major).
inline void offsets_of(const StridedCopy& p, int64_t nd, int64_t r, int64_t& so, int64_t& dof) {
  so = p.src_offset;
  dof = p.dst_offset;
  for (int64_t d = nd - 1; d >= 0; --d) {
    const int64_t i = r % p.shape[d];
    r /= p.shape[d];
    so += i * p.src_strides[d];
    dof += i * p.dst_strides[d];
  }
}

// dst rows of `cols` elements (stride 1, rows `ld_dst` apart) from src columns (src element
// (i, j) at i + j * ld_src): one tile of `t`×`t` at a time, so reads and writes both stay within
// a few cache lines instead of one of them touching a new line per element.
template <class U>
void transpose_tiles(const char* s, int64_t ld_src, char* d, int64_t ld_dst, int64_t rows, int64_t cols, int64_t t) {
  const U* src = reinterpret_cast<const U*>(s);
  U* dst = reinterpret_cast<U*>(d);
  for (int64_t j0 = 0; j0 < cols; j0 += t) {
    const int64_t j1 = std::min(cols, j0 + t);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = j0; j < j1; ++j) dst[i * ld_dst + j] = src[i + j * ld_src];
  }
}

// dst rows of `cols` 32-bit elements from src columns, as transpose_tiles, by 8×8 register
// transposes (pack_transposed: 8 columns of src, read along their contiguous rows, become an
// 8-wide strip of each dst row).
void transpose_words(const char* s, int64_t ld_src, char* d, int64_t ld_dst, int64_t rows, int64_t cols) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(s);
  uint32_t* dst = reinterpret_cast<uint32_t*>(d);
  for (int64_t j0 = 0; j0 < cols; j0 += 8) {
    const int64_t w = std::min<int64_t>(8, cols - j0);
    pack_transposed(src + j0 * ld_src, ld_src, w, w, rows, dst + j0, ld_dst);
  }
}

// A copy whose innermost dim reads with a stride and whose next dim reads contiguously: a
// transpose of the last two dims (x.transpose(-2, -1), x.t()). Cut into bands of dst rows (a band
// per task) short enough that the dst lines a band writes stay in L1 while its columns go by.
void transpose_copy(const char* sp, char* dp, const StridedCopy& p, int64_t nd, int64_t total, size_t es) {
  const int64_t rows = p.shape[nd - 2], cols = p.shape[nd - 1];
  const int64_t ld_src = p.src_strides[nd - 1], ld_dst = p.dst_strides[nd - 2];
  const int64_t t = es == 4 ? 64 : std::max<int64_t>(8, 64 / static_cast<int64_t>(es));
  const int64_t bands = (rows + t - 1) / t, planes = total / (rows * cols);
  parallel_for(planes * bands, std::max<int64_t>(1, kElementGrain / (t * cols)), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t plane = b / bands, i0 = (b % bands) * t, n = std::min(t, rows - i0);
      int64_t so = 0, dof = 0;
      offsets_of(p, nd - 2, plane, so, dof);
      so += i0 * p.src_strides[nd - 2];
      dof += i0 * ld_dst;
      const char* s = sp + so * static_cast<int64_t>(es);
      char* d = dp + dof * static_cast<int64_t>(es);
      switch (es) {
        case 1:
          transpose_tiles<uint8_t>(s, ld_src, d, ld_dst, n, cols, t);
          break;
        case 2:
          transpose_tiles<uint16_t>(s, ld_src, d, ld_dst, n, cols, t);
          break;
        case 4:
          transpose_words(s, ld_src, d, ld_dst, n, cols);
          break;
        default:
          transpose_tiles<uint64_t>(s, ld_src, d, ld_dst, n, cols, t);
          break;
      }
    }
  });
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
  if (nd >= 2 && ds == 1 && ss != 1 && p.src_strides[nd - 2] == 1 && p.shape[nd - 2] > 1 && inner > 1) {
    transpose_copy(sp, dp, p, nd, total, es);
    return;
  }
  const int64_t rows = total / inner;
  parallel_for(rows, std::max<int64_t>(1, kElementGrain / inner), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t so = 0, dof = 0;
      offsets_of(p, nd - 1, r, so, dof);
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
    if (at(i) < 0 || at(i) >= num_classes)
      fail(Code::Index, "oneHot: class index ", at(i), " is out of range for numClasses ", num_classes);
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
