/**
 * Imported first by every test/gpu file: turns on FLOCKML_CUDA_POISON before the addon loads, so
 * fresh CUDA allocations hold NaN and an output element a kernel forgets to write fails the
 * comparison. test/run.ts sets it too; this covers running a file directly with tsx.
 */
process.env.FLOCKML_CUDA_POISON = '1';
