// NVTX ranges for fl.profiler.range. Kept in a file of its own: the NVTX header pulls in
// <fcntl.h>, whose global `flock` clashes with our namespace of the same name.
#include <nvtx3/nvToolsExt.h>

void flockml_nvtx_push(const char* name) { nvtxRangePushA(name); }
void flockml_nvtx_pop() { nvtxRangePop(); }
