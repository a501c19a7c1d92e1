// Registration of the addon's exported functions, one group per bindings file.
#pragma once
#include <napi.h>

namespace flock::js {
void register_tensor_exports(Napi::Env env, Napi::Object exports);
void register_op_exports(Napi::Env env, Napi::Object exports);
void register_nn_exports(Napi::Env env, Napi::Object exports);
void register_dist_exports(Napi::Env env, Napi::Object exports);
void register_ready_exports(Napi::Env env, Napi::Object exports);
void register_io_exports(Napi::Env env, Napi::Object exports);
void register_profiler_exports(Napi::Env env, Napi::Object exports);
void register_device_exports(Napi::Env env, Napi::Object exports);
void register_attention_exports(Napi::Env env, Napi::Object exports);
void register_rearrange_exports(Napi::Env env, Napi::Object exports);
void register_select_exports(Napi::Env env, Napi::Object exports);
void register_rnn_exports(Napi::Env env, Napi::Object exports);
void register_stream_stress_exports(Napi::Env env, Napi::Object exports);
void register_failure_exports(Napi::Env env, Napi::Object exports);
}  // namespace flock::js
