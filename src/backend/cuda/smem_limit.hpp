// The one rule for a kernel's dynamic shared-memory limit (cudaFuncAttributeMaxDynamicSharedMemorySize).
// The attribute is a process-wide setting per kernel and device, so a planner that set it to its
// own need could lower it under another thread's launch of the same kernel with more. Instead, the
// first use of a kernel on a device raises it, once, to all the device allows (the opt-in per-block
// maximum less the kernel's static shared memory), and nothing writes it again: plans and launches
// only read the recorded limit. Nothing else in Loom may call cudaFuncSetAttribute for it.
#pragma once

#include <cstddef>

namespace loom::backend::cuda {

// The dynamic shared memory one block of `kernel` (a __global__ function's address) may use on
// `device`; the first call for a (kernel, device) raises the attribute to that (with `device`
// current for the call). Thread-safe; throws Error(backend) when a CUDA call fails.
std::size_t raise_smem_limit(const void* kernel, int device);

// For launches on the current device: throws Error(unsupported) naming `what` when `bytes` exceed
// raise_smem_limit(kernel, current device), instead of a launch that fails. Zero bytes always pass.
void require_smem_limit(const void* kernel, std::size_t bytes, const char* what);

}  // namespace loom::backend::cuda
