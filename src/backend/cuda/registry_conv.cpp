// CUDA kernels of the conv family: convolutions, pooling, batch normalisation, Pad and Resize
// (see kernel_registry.hpp).
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_conv_kernels(CudaKernelRegistry& registry) {
  registry.add("Conv", create_conv_kernel);
  registry.add("ConvTranspose", create_conv_transpose_kernel);
  registry.add({"MaxPool", "AveragePool"}, create_pool_kernel);
  registry.add("GlobalAveragePool", create_global_average_pool_kernel);
  registry.add("GlobalMaxPool", create_global_max_pool_kernel);
  registry.add("BatchNormalization", create_batchnorm_kernel);
  registry.add("Pad", create_pad_kernel);
  registry.add("Resize", create_resize_kernel);
}

}  // namespace loom::backend::cuda
