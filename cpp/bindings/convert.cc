#include "convert.h"
#include <cmath>
#include "addon.h"
#include "tensor_handle.h"

namespace flock::js {

Napi::Error make_js_error(Napi::Env env, Code code, const std::string& message) {
  Napi::String js_code = Napi::String::New(env, code_name(code));
  Napi::String js_message = Napi::String::New(env, message);
  Napi::FunctionReference& cls = Addon::of(env).error_classes[static_cast<int>(error_kind(code))];
  if (!cls.IsEmpty()) return Napi::Error(env, cls.New({js_code, js_message}));
  // Before lib/errors.ts registered its classes (or if it never does): plain errors with the code.
  Napi::Error err = error_kind(code) == ErrorKind::Type    ? static_cast<Napi::Error>(Napi::TypeError::New(env, message))
                    : error_kind(code) == ErrorKind::Range ? static_cast<Napi::Error>(Napi::RangeError::New(env, message))
                                                           : Napi::Error::New(env, message);
  err.Set("code", js_code);
  return err;
}

void throw_js(Napi::Env env, Code code, const std::string& message) { throw make_js_error(env, code, message); }

std::string describe(Napi::Value v) {
  switch (v.Type()) {
    case napi_undefined:
      return "undefined";
    case napi_null:
      return "null";
    case napi_boolean:
      return "a boolean";
    case napi_number:
      return "the number " + std::to_string(v.As<Napi::Number>().DoubleValue());
    case napi_string:
      return "a string";
    case napi_symbol:
      return "a symbol";
    case napi_function:
      return "a function";
    case napi_bigint:
      return "a bigint";
    default:
      return v.IsArray() ? "an array" : "an object";
  }
}

// The tensor handle `v` names (see tensor_handle.h); `name` and `index` (when >= 0) name it in errors.
const Tensor& handle_tensor(Napi::Env env, Napi::Value v, const char* op, const char* name, int64_t index) {
  double h = 0;
  if (v.IsNumber()) h = v.As<Napi::Number>().DoubleValue();
  if (!HandleTable::well_formed(h)) {
    if (index < 0) fail(Code::Arg, op, ": ", name, " must be a tensor, got ", describe(v));
    fail(Code::Arg, op, ": ", name, "[", index, "] must be a tensor, got ", describe(v));
  }
  const Tensor* t = Addon::of(env).handles.find(h);
  if (!t) {
    if (index < 0) fail(Code::Disposed, op, ": ", name, " has been disposed");
    fail(Code::Disposed, op, ": ", name, "[", index, "] has been disposed");
  }
  return *t;
}

// Fail-stop (stream_failure.h): a tensor whose producing task failed or was dropped is refused by
// every op that reads it, with the original error's code, once the JS thread has been told of the
// failure. Until then the op is queued like any other, and its stream (failed, or failing when it
// meets the failed work's event) drops it: so a failure always surfaces first at a sync point,
// never half-way through queueing a step (where, under DDP, one rank would stop posting its
// collectives and the ranks would fall out of step).
const Tensor& readable(const Tensor& t, const char* op, const char* name, int64_t index) {
  if (const StreamError* f = t.storage->failure(); f && f->acknowledged()) {
    if (index < 0) fail(f->code, op, ": ", name, " was never computed: ", f->message);
    fail(f->code, op, ": ", name, "[", index, "] was never computed: ", f->message);
  }
  return t;
}

Tensor Args::tensor(size_t i, const char* name) const {
  return readable(handle_tensor(info.Env(), info[i], op, name, -1), op, name, -1);
}

Tensor Args::tensor_even_failed(size_t i, const char* name) const { return handle_tensor(info.Env(), info[i], op, name, -1); }

std::vector<Tensor> Args::tensors(size_t i, const char* name) const {
  Napi::Value v = info[i];
  if (!v.IsArray()) fail(Code::Arg, op, ": ", name, " must be an array of tensors, got ", describe(v));
  Napi::Array arr = v.As<Napi::Array>();
  if (arr.Length() > 100000) fail(Code::Arg, op, ": ", name, " holds too many tensors (", arr.Length(), ")");
  std::vector<Tensor> out;
  for (uint32_t k = 0; k < arr.Length(); ++k) {
    out.push_back(readable(handle_tensor(info.Env(), arr.Get(k), op, name, k), op, name, k));
  }
  return out;
}

double Args::number(size_t i, const char* name) const {
  Napi::Value v = info[i];
  if (!v.IsNumber()) fail(Code::Arg, op, ": ", name, " must be a number, got ", describe(v));
  return v.As<Napi::Number>().DoubleValue();
}

int64_t Args::integer(size_t i, const char* name, int64_t lo, int64_t hi) const {
  const double d = number(i, name);
  if (!std::isfinite(d) || d != std::floor(d)) fail(Code::Arg, op, ": ", name, " must be an integer, got ", d);
  if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
    fail(Code::Index, op, ": ", name, " ", d, " is out of range [", lo, ", ", hi, "]");
  return static_cast<int64_t>(d);
}

bool Args::boolean(size_t i, const char* name) const {
  Napi::Value v = info[i];
  if (!v.IsBoolean()) fail(Code::Arg, op, ": ", name, " must be a boolean, got ", describe(v));
  return v.As<Napi::Boolean>().Value();
}

std::string Args::string(size_t i, const char* name) const {
  Napi::Value v = info[i];
  if (!v.IsString()) fail(Code::Arg, op, ": ", name, " must be a string, got ", describe(v));
  std::string s = v.As<Napi::String>().Utf8Value();
  if (s.size() > 256) fail(Code::Arg, op, ": ", name, " is too long");
  return s;
}

namespace {

// Appends the integers of array argument `i` to `out` (any container with push_back), checked.
template <class Out>
void read_ints(const Args& a, size_t i, const char* name, int64_t lo, int64_t hi, uint32_t max_len, Out& out) {
  Napi::Value v = a.info[i];
  if (!v.IsArray()) fail(Code::Arg, a.op, ": ", name, " must be an array of integers, got ", describe(v));
  Napi::Array arr = v.As<Napi::Array>();
  const uint32_t n = arr.Length();
  if (n > max_len) fail(Code::Shape, a.op, ": ", name, " has ", n, " entries; at most ", max_len, " are supported");
  for (uint32_t k = 0; k < n; ++k) {
    Napi::Value e = arr.Get(k);
    if (!e.IsNumber()) fail(Code::Arg, a.op, ": ", name, "[", k, "] must be an integer, got ", describe(e));
    const double d = e.As<Napi::Number>().DoubleValue();
    if (!std::isfinite(d) || d != std::floor(d)) fail(Code::Shape, a.op, ": ", name, "[", k, "] must be an integer, got ", d);
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi))
      fail(Code::Shape, a.op, ": ", name, "[", k, "] = ", d, " is out of range [", lo, ", ", hi, "]");
    out.push_back(static_cast<int64_t>(d));
  }
}

}  // namespace

std::vector<int64_t> Args::ints(size_t i, const char* name, int64_t lo, int64_t hi, uint32_t max_len) const {
  std::vector<int64_t> out;
  read_ints(*this, i, name, lo, hi, max_len, out);
  return out;
}

Shape Args::dims(size_t i, const char* name, int64_t lo, int64_t hi) const {
  Shape out;
  read_ints(*this, i, name, lo, hi, 16, out);
  return out;
}

DType Args::dtype(size_t i) const {
  const std::string s = string(i, "dtype");
  DType t;
  if (!parse_dtype(s, &t)) fail(Code::DType, op, ": unknown dtype '", s, "' (expected f32, f64, i32, i64, u8, bool, bf16, f16)");
  return t;
}

Device Args::device(size_t i) const { return parse_device(string(i, "device")); }

}  // namespace flock::js
