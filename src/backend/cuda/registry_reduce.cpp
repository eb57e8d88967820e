// CUDA kernels of the reduce family: reductions, Softmax/LogSoftmax, LayerNormalization,
// ArgMax/ArgMin and TopK (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

// Factories of this family not declared in cuda_op_kernel.hpp.
std::unique_ptr<OpKernel> create_reduce_kernel(const KernelSpec& spec, CudaBackend& backend);      // reduce.cpp
std::unique_ptr<OpKernel> create_arg_reduce_kernel(const KernelSpec& spec, CudaBackend& backend);  // reduce.cpp
std::unique_ptr<OpKernel> create_topk_kernel(const KernelSpec& spec, CudaBackend& backend);        // topk.cpp

void register_reduce_kernels(CudaKernelRegistry& registry) {
  registry.add({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"},
               create_reduce_kernel);
  registry.add({"Softmax", "LogSoftmax"}, create_softmax_kernel);
  registry.add("LayerNormalization", create_layernorm_kernel);
  registry.add({"ArgMax", "ArgMin"}, create_arg_reduce_kernel);
  registry.add("TopK", create_topk_kernel);
}

}  // namespace loom::backend::cuda
