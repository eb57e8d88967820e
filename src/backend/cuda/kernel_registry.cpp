// The CUDA registry, filled once by every family file, and the registry summary tests read
// without a device.
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend {
namespace cuda {

const CudaKernelRegistry& kernel_registry() {
  static const CudaKernelRegistry registry = [] {
    CudaKernelRegistry r("cuda");
    register_every_family(r);
    return r;
  }();
  return registry;
}

}  // namespace cuda

std::optional<CudaKernelCoverage> cuda_kernel_coverage() {
  const std::span<const CpuOnlyOp> cpu_only = cuda::cpu_only_ops();
  return CudaKernelCoverage{cuda::kernel_registry().op_types(), {cpu_only.begin(), cpu_only.end()}};
}

}  // namespace loom::backend
