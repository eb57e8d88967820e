// CUDA kernels of the conv family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_conv_kernels(KernelTable& table) {
  table["ConvTranspose"] = create_conv_transpose_kernel;
  table["GlobalMaxPool"] = create_global_max_pool_kernel;
  table["Pad"] = create_pad_kernel;
  table["Resize"] = create_resize_kernel;
}

}  // namespace loom::backend::cuda
