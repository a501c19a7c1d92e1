#include "isa.h"
#include <cstdlib>
#include <string>
#include "../error.h"

namespace flock::cpu {
namespace {

struct Choice {
  Isa isa = Isa::generic;
  std::string error;  // non-empty: FLOCKML_CPU_ISA asked for something this CPU cannot run
};

Choice choose() {
  const Isa widest = detected_isa();
  const char* forced = std::getenv("FLOCKML_CPU_ISA");
  if (!forced || !*forced) return {widest, {}};
  const std::string want = forced;
  Isa isa;
  if (want == "generic")
    isa = Isa::generic;
  else if (want == "avx2")
    isa = Isa::avx2;
  else if (want == "avx512")
    isa = Isa::avx512;
  else
    return {widest, "FLOCKML_CPU_ISA=" + want + " is not an instruction set flockml knows (generic, avx2, avx512)"};
  if (static_cast<int>(isa) > static_cast<int>(widest))
    return {widest, "FLOCKML_CPU_ISA=" + want + " but this CPU supports at most " + isa_name(widest)};
  return {isa, {}};
}

}  // namespace

Isa detected_isa() {
  static const Isa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
      return Isa::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
    return Isa::generic;
  }();
  return isa;
}

Isa cpu_isa() {
  static const Choice choice = choose();
  if (!choice.error.empty()) fail(Code::Arg, "cpu: ", choice.error);
  return choice.isa;
}

bool cpu_bf16_convert() {
  static const bool use = []() -> bool {
    if (cpu_isa() != Isa::avx512) return false;
    const char* off = std::getenv("FLOCKML_CPU_BF16");
    if (off && std::string(off) == "0") return false;
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") != 0;
#else
    return false;
#endif
  }();
  return use;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    case Isa::generic:
      return "generic";
  }
  return "generic";
}

}  // namespace flock::cpu
