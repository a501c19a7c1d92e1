// The instruction set CPU kernels are chosen for, at run time: the widest this CPU supports
// (cpuid, read once), or a narrower one forced with FLOCKML_CPU_ISA=generic|avx2|avx512 (so tests
// and benchmarks can run every path the machine has). Kernels for a wider ISA live in their own
// functions compiled with target attributes, so the binary still runs on CPUs without it.
#pragma once

namespace flock::cpu {

enum class Isa { generic = 0, avx2 = 1, avx512 = 2 };

// The widest ISA this CPU supports: avx512 needs AVX-512 F, BW, DQ and VL; avx2 needs AVX2 and FMA.
Isa detected_isa();

// The ISA kernels use. Decided once and cached; throws (Code::Arg) on every call when
// FLOCKML_CPU_ISA names an unknown ISA or one this CPU lacks.
Isa cpu_isa();

const char* isa_name(Isa isa);

// Whether the element-wise bf16 kernels round f32 to bf16 with AVX512_BF16's VCVTNEPS2BF16: the
// CPU has it, cpu_isa() is avx512, and FLOCKML_CPU_BF16 is not "0" (which keeps them on the
// AVX-512 integer rounding, so tests can compare the two; both give the same bits). Decided once.
bool cpu_bf16_convert();

}  // namespace flock::cpu
