// CPU fused cross-entropy: log-softmax and the negative log-likelihood in one pass per row, so
// the [rows, classes] log-probabilities are never materialised. With label smoothing ε the target
// distribution is (1−ε)·onehot + ε/C, giving loss = lse − (1−ε)·x_t − ε·mean(x).
#include <algorithm>
#include <cmath>
#include <limits>
#include "../nn_kernels.h"
#include "threadpool.h"

namespace flock::cpu {
namespace {

// Rows per pool chunk: about 8192 logits each, so a classifier's [100, 10] runs on one thread (a
// pool wake-up costs more than the whole loss) and a language model's vocabulary rows spread out.
int64_t row_grain(int64_t cls) { return std::max<int64_t>(1, 8192 / std::max<int64_t>(cls, 1)); }

template <class T>
int64_t target_at(const Tensor& t, int64_t r) {
  return t.dtype == DType::i32 ? t.data<int32_t>()[r] : t.data<int64_t>()[r];
}

template <class T>
void forward(const Tensor& lt, const Tensor& tt, Tensor& losst, Tensor& lset, int64_t ignore, double eps) {
  const int64_t rows = lt.shape[0], cls = lt.shape[1];
  const T* x = lt.data<T>();
  T* loss = losst.data<T>();
  T* lse = lset.data<T>();
  // Targets are checked here on the stream thread: errors must not be thrown from pool workers.
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = target_at<T>(tt, r);
    if (t != ignore && (t < 0 || t >= cls))
      fail(Code::Index, "crossEntropy: target ", t, " is out of range for ", cls, " classes");
  }
  parallel_for(rows, row_grain(cls), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* row = x + r * cls;
      T mx = -std::numeric_limits<T>::infinity(), sum = 0, total = 0;
      for (int64_t c = 0; c < cls; ++c) mx = std::max(mx, row[c]);
      for (int64_t c = 0; c < cls; ++c) {
        sum += std::exp(row[c] - mx);
        total += row[c];
      }
      const T l = mx + std::log(sum);
      lse[r] = l;
      const int64_t t = target_at<T>(tt, r);
      if (t == ignore) {
        loss[r] = 0;
        continue;
      }
      loss[r] = l - T(1 - eps) * row[t] - T(eps) * total / T(cls);
    }
  });
}

template <class T>
void backward(const Tensor& lt, const Tensor& tt, const Tensor& lset, const Tensor& gt, Tensor& gxt, int64_t ignore, double eps) {
  const int64_t rows = lt.shape[0], cls = lt.shape[1];
  const T* x = lt.data<T>();
  const T* lse = lset.data<T>();
  const T* g = gt.data<T>();
  T* gx = gxt.data<T>();
  parallel_for(rows, row_grain(cls), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      T* out = gx + r * cls;
      const int64_t t = target_at<T>(tt, r);
      if (t == ignore) {
        std::fill(out, out + cls, T(0));
        continue;
      }
      const T* row = x + r * cls;
      const T gr = g[r], smooth = T(eps) / T(cls);
      for (int64_t c = 0; c < cls; ++c) out[c] = gr * (std::exp(row[c] - lse[r]) - smooth);
      out[t] -= gr * T(1 - eps);
    }
  });
}

void forward_cpu(const Tensor& l, const Tensor& t, Tensor& loss, Tensor& lse, int64_t ignore, double eps) {
  if (l.dtype == DType::f64)
    forward<double>(l, t, loss, lse, ignore, eps);
  else
    forward<float>(l, t, loss, lse, ignore, eps);
}
void backward_cpu(const Tensor& l, const Tensor& t, const Tensor& lse, const Tensor& g, Tensor& gx, int64_t ignore, double eps) {
  if (l.dtype == DType::f64)
    backward<double>(l, t, lse, g, gx, ignore, eps);
  else
    backward<float>(l, t, lse, g, gx, ignore, eps);
}

}  // namespace

FLOCK_REGISTER_KERNEL(cross_entropy_forward, CPU, forward_cpu);
FLOCK_REGISTER_KERNEL(cross_entropy_backward, CPU, backward_cpu);

}  // namespace flock::cpu
