// CPU kernels of the linear family: MatMul and Gemm (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/matmul.hpp"

namespace loom::backend::cpu {

void register_linear_kernels(CpuKernelRegistry& registry) {
  registry.add("MatMul", make_matmul_kernel);
  registry.add("Gemm", make_gemm_kernel);
}

}  // namespace loom::backend::cpu
