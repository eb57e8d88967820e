// CUDA kernels of the reduce family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

// Factories of this family's new kernels.
std::unique_ptr<OpKernel> create_reduce_kernel(const KernelSpec& spec, CudaBackend& backend);      // reduce.cpp
std::unique_ptr<OpKernel> create_arg_reduce_kernel(const KernelSpec& spec, CudaBackend& backend);  // reduce.cpp
std::unique_ptr<OpKernel> create_topk_kernel(const KernelSpec& spec, CudaBackend& backend);        // topk.cpp

void register_reduce_kernels(KernelTable& table) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
    table[op] = create_reduce_kernel;
  table["LogSoftmax"] = create_softmax_kernel;
  table["ArgMax"] = create_arg_reduce_kernel;
  table["ArgMin"] = create_arg_reduce_kernel;
  table["TopK"] = create_topk_kernel;
}

}  // namespace loom::backend::cuda
