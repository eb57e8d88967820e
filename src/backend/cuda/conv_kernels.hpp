// Factories of the conv-family ops added for ONNX models (registered in registry_conv.cpp); the
// first-release ones (Conv, pooling, BatchNormalization) are declared in cuda_op_kernel.hpp.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/backend.hpp"

namespace loom::backend::cuda {

class CudaBackend;

std::unique_ptr<OpKernel> create_conv_transpose_kernel(const KernelSpec& spec,
                                                       CudaBackend& backend);  // conv_transpose.cpp
std::unique_ptr<OpKernel> create_global_max_pool_kernel(const KernelSpec& spec, CudaBackend& backend);  // pool.cpp
std::unique_ptr<OpKernel> create_pad_kernel(const KernelSpec& spec, CudaBackend& backend);              // pad.cpp
std::unique_ptr<OpKernel> create_resize_kernel(const KernelSpec& spec, CudaBackend& backend);           // resize.cpp

// Helpers the cuDNN-based ops (Conv, ConvTranspose) share; defined in conv.cpp.
// `value` as a cuDNN int; throws Error(unsupported) naming the node when it does not fit.
int cudnn_int(const KernelSpec& spec, std::int64_t value);
// A dense tensor descriptor of `dims` (NCHW order, any rank cuDNN accepts).
void set_dense_tensor_desc(const KernelSpec& spec, cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                           const std::vector<std::int64_t>& dims);

}  // namespace loom::backend::cuda
