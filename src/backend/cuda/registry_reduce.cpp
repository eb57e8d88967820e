// CUDA kernels of the reduce family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_reduce_kernels(KernelTable&) {}

}  // namespace loom::backend::cuda
