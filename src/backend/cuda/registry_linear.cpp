// CUDA kernels of the linear family: MatMul and Gemm (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_linear_kernels(CudaKernelRegistry& registry) {
  registry.add("MatMul", create_matmul_kernel);
  registry.add("Gemm", create_gemm_kernel);
}

}  // namespace loom::backend::cuda
