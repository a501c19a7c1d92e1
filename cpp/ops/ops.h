// Device-independent op front ends: each validates its inputs (dtype, device, shapes), computes
// the output shape, allocates the output and enqueues the device kernel on the device's stream.
// They return at once; the work runs in stream order.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include "../kernels.h"

namespace flock::ops {

// Creation
// Refuses (ERR_RANGE) a value an integer dtype cannot hold (NaN, an infinity, outside its range);
// fractions truncate toward zero. Every value fits a floating or bool dtype.
Tensor full(const Shape& shape, DType dtype, Device device, double value);
// Every element of self set to `value` (checked as full checks it), written in place.
void fill_(Tensor& self, double value);
Tensor from_host(const void* data, size_t bytes, const Shape& shape, DType dtype, Device device);
Tensor arange(double start, double end, double step, DType dtype, Device device);
Tensor linspace(double start, double end, int64_t steps, DType dtype, Device device);
Tensor random(RandomKind kind, const Shape& shape, DType dtype, Device device, uint64_t seed, uint64_t offset, double a,
              double b);
// i64 [...index.shape, num_classes]; a class index outside [0, num_classes) rejects the next sync
// point with ERR_INDEX (the values are only known when the kernel reads them).
Tensor one_hot(const Tensor& index, int64_t num_classes);

// Element-wise
Tensor unary(UnaryOp op, const Tensor& x, double a = 0, double b = 0);
Tensor unary_backward(UnaryOp op, const Tensor& x, const Tensor& gy, double a = 0, double b = 0);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);
// self = self op b, written into self by the binary kernel (arithmetic; b of self's dtype and device,
// broadcasting to self's shape). False, with nothing launched, when b overlaps self other than
// element for element (a view of part of self's storage): the caller computes into a new tensor.
bool binary_(BinaryOp op, Tensor& self, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DType dtype);
Tensor clone(const Tensor& x);
Tensor to_device(const Tensor& x, Device device);
// to_device between two CPU devices: stream-ordered, never waits on the host (ops/peer_copy.cc).
Tensor copy_between_cpu_devices(const Tensor& x, Device to);
// dst[...] = src[...] in stream order (same shape, dtype and device); used for in-place updates.
void copy_(Tensor& dst, const Tensor& src);

// Reductions and normalisation
Tensor reduce(ReduceOp op, const Tensor& x, Shape dims, bool keepdim, double correction = 1);
Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);
// op(a) · op(b) with the values of casting each operand to `compute` (bf16 or f16), multiplying,
// and casting the result to `out_dtype`; operands and result are f32 or `compute`. The CPU's bf16
// GEMM rounds f32 operands while packing them; elsewhere the casts are kernels of their own.
Tensor matmul_lowered(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, DType compute, DType out_dtype);
// out += op(a) · op(b), the product as matmul (compute: none) or matmul_lowered (compute bf16, out's
// dtype the result's) computes it, for 2-D operands and a 2-D out of the product's shape. The
// result is bit for bit that of computing the product and then adding it to out. False, with
// nothing launched, where that cannot be done in one pass (not the CPU, an out that shares storage
// with an operand, a dtype or a K the accumulating GEMM does not cover): the caller adds itself.
bool matmul_into(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, const DType* compute, Tensor& out);

// Shapes and indexing
Tensor reshape(const Tensor& x, Shape shape);
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor expand(const Tensor& x, const Shape& shape);
Tensor cat(const std::vector<Tensor>& xs, int64_t dim);
// `op` names the user's op in errors (embedding looks rows up with it); a static string, since
// queued work keeps the pointer.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index, const char* op = "indexSelect");
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, const char* op = "gather");
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);

// Host reads: copies x into `dst` (x.nbytes() bytes) in stream order.
void copy_to_host(const Tensor& x, std::shared_ptr<std::vector<uint8_t>> dst);

// Helpers shared by the front ends.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
int64_t normalize_dim(int64_t dim, int64_t ndim, const char* op);
void check_same_device(const Tensor& a, const Tensor& b, const char* op);
void enqueue(const char* op, Device device, std::function<void()> work);
// enqueue for a kernel whose cost the front end knows: `work_elements` estimates it in elements an
// add would touch in the same time (~0.1 ns each, vectorised): a matmul passes its multiply-adds / 8,
// a kernel calling exp, tanh, pow... per element kSlowElement per element. At or below kSmallWork (a
// couple of microseconds) the stream may run it on the calling thread (enqueue_small). Only for
// kernels that never block (no events, collectives, host I/O).
constexpr int64_t kSmallWork = 16384;
constexpr int64_t kSlowElement = 64;  // tanh on [16384] took 200-300 µs on one core: ~150 adds
// Runs `work` (borrowed) on the calling thread when the stream may (Stream::run_inline).
bool enqueue_inline(const char* op, Device device, const std::function<void()>& work);
template <class F>
void enqueue(const char* op, Device device, F&& work, int64_t work_elements) {
  // Lent by reference to the inline attempt (a std::function holding a reference_wrapper makes no
  // allocation); only a queued task is copied into an owning std::function.
  if (work_elements <= kSmallWork && enqueue_inline(op, device, std::function<void()>(std::ref(work)))) return;
  enqueue(op, device, std::function<void()>(std::forward<F>(work)));
}
// The work estimates of the element-wise families: n elements, times kSlowElement for an op that
// calls a math function per element.
int64_t unary_work(UnaryOp op, int64_t n);
int64_t binary_work(BinaryOp op, int64_t n);

Tensor flip(const Tensor& x, const std::vector<int64_t>& dims);
// dims and shifts of equal length (a flattened roll is a reshape around a roll of dim 0).
Tensor roll(const Tensor& x, const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims);

}  // namespace flock::ops

namespace flock {
struct AttnGeom;
}  // namespace flock

namespace flock::ops {
// Fused scaled dot-product attention on 3-D views (see AttnGeom in nn_kernels.h; the shape fields
// of `g` are filled here from the tensors). Forward returns {out, logsumexp}; backward {gq, gk, gv}.
std::vector<Tensor> attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, AttnGeom g);
std::vector<Tensor> attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* mask, const Tensor& out,
                                       const Tensor& lse, const Tensor& gout, AttnGeom g);
// Packed self-attention (AttnPacked in nn_kernels.h): forward {out, logsumexp}, backward {gqkv}.
std::vector<Tensor> attention_packed_forward(const Tensor& qkv, int64_t heads, bool batch_first, const Tensor* mask, AttnGeom g);
Tensor attention_packed_backward(const Tensor& qkv, int64_t heads, bool batch_first, const Tensor* mask, const Tensor& out,
                                 const Tensor& lse, const Tensor& gout, AttnGeom g);
// Scans, sorts, scatters, selections and samples (scan.cc, sort.cc, scatter.cc, select.cc, sample.cc)
// cumsum (prod false) / cumprod along dim, from the end when `reverse`; integers and bool give i64.
Tensor scan(const Tensor& x, int64_t dim, bool prod, bool reverse);
Tensor cumprod_backward(const Tensor& x, const Tensor& gy, int64_t dim);
// Stable: {values, indices (i64)}; `op` names the user's op in errors (a static string).
std::pair<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, const char* op = "sort");
std::pair<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, ScatterReduceOp op,
                      bool include_self);
// `count`: the number of true elements of the (broadcast) mask, counted by the caller.
Tensor masked_select(const Tensor& x, const Tensor& mask, int64_t count);
Tensor nonzero(const Tensor& mask, int64_t count);
// probs [rows, categories]; the draw uses Philox counters from (seed, offset), rows * num_samples
// words with replacement, rows * categories without.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, uint64_t seed, uint64_t offset);

}  // namespace flock::ops
