// Converters from JS values to core types. Each checks the value fully and throws flock::Error
// naming the op and the argument; `guarded` turns those into JS TypeError/RangeError with a code.
#pragma once
#include <napi.h>
#include <string>
#include <vector>
#include "../kernels.h"
#include "../stream_failure.h"

namespace flock::js {

// The JS error for a core error: an instance of the class lib/errors.ts registered for the code's
// kind (FlockTypeError, FlockRangeError, FlockError), carrying `code`.
Napi::Error make_js_error(Napi::Env env, Code code, const std::string& message);
[[noreturn]] void throw_js(Napi::Env env, Code code, const std::string& message);

template <Napi::Value (*F)(const Napi::CallbackInfo&)>
Napi::Value guarded(const Napi::CallbackInfo& info) {
  try {
    OpScope scope;  // the storages this call makes fail with the tasks it queues (stream_failure.h)
    return F(info);
  } catch (const Error& e) {
    throw_js(info.Env(), e.code, e.what());
  } catch (const Napi::Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw_js(info.Env(), Code::OOM, "out of memory");
  } catch (const std::exception& e) {
    throw_js(info.Env(), Code::Internal, e.what());
  }
}

// Exports `fn` as `name`, with core errors converted to JS errors.
#define FLOCK_EXPORT(name, fn) exports.Set(name, Napi::Function::New(env, ::flock::js::guarded<fn>, name))

// What `v` is, for error messages ("the number 3", "an array").
std::string describe(Napi::Value v);

struct Args {
  const Napi::CallbackInfo& info;
  const char* op;
  Napi::Value at(size_t i) const { return info[i]; }
  // A copy (later conversions may run JS); ERR_* of the original error for a failed tensor
  // (stream_failure.h).
  Tensor tensor(size_t i, const char* name) const;
  // The same, failed or not: for an op that overwrites all of it (fill_) or hands the failure on
  // (collectives post it to their peers).
  Tensor tensor_even_failed(size_t i, const char* name) const;
  std::vector<Tensor> tensors(size_t i, const char* name) const;
  double number(size_t i, const char* name) const;
  int64_t integer(size_t i, const char* name, int64_t lo, int64_t hi) const;
  bool boolean(size_t i, const char* name) const;
  std::string string(size_t i, const char* name) const;
  // At most `max_len` entries: 16 for shapes and dims; lists of ranks pass their own bound.
  std::vector<int64_t> ints(size_t i, const char* name, int64_t lo, int64_t hi, uint32_t max_len = 16) const;
  // The same, into a Shape (no allocation for up to 8 entries): shapes, and dim lists.
  Shape dims(size_t i, const char* name, int64_t lo, int64_t hi) const;
  Shape shape(size_t i, const char* name) const { return dims(i, name, 0, int64_t(1) << 48); }
  DType dtype(size_t i) const;
  Device device(size_t i) const;
  // A name from `names`, or its index (lib/ops/call_shapes.ts passes the op codes' indices: no string to convert).
  template <class E>
  E enumeration(size_t i, const char* name, const char* const* names, int count) const {
    if (info[i].IsNumber()) {
      const double k = info[i].As<Napi::Number>().DoubleValue();
      if (!(k >= 0 && k < count && k == static_cast<double>(static_cast<int>(k))))
        fail(Code::Arg, op, ": unknown ", name, " ", describe(info[i]));
      return static_cast<E>(static_cast<int>(k));
    }
    const std::string s = string(i, name);
    for (int k = 0; k < count; ++k)
      if (s == names[k]) return static_cast<E>(k);
    fail(Code::Arg, op, ": unknown ", name, " '", s, "'");
  }
};

// Whether argument i was given: neither undefined nor null (an optional tensor, say).
inline bool present(const Args& a, size_t i) { return !a.at(i).IsUndefined() && !a.at(i).IsNull(); }

}  // namespace flock::js
