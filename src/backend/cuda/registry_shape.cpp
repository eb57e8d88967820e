// CUDA kernels of the shape family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_shape_kernels(KernelTable&) {}

}  // namespace loom::backend::cuda
