// CUDA kernels of the recurrent family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_recurrent_kernels(KernelTable&) {}

}  // namespace loom::backend::cuda
