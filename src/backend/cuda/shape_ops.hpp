// Factories of the shape-family CUDA kernels beyond the first release's (cuda_op_kernel.hpp
// declares Reshape, Transpose, Concat and Gather). Each is called with a DeviceGuard held.
#pragma once

#include <memory>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_backend.hpp"

namespace loom::backend::cuda {

std::unique_ptr<OpKernel> create_dropout_kernel(const KernelSpec& spec, CudaBackend& backend);  // reshape.cpp
std::unique_ptr<OpKernel> create_strided_view_kernel(const KernelSpec& spec,
                                                     CudaBackend& backend);  // shape_copies.cpp: Slice, Expand, Tile
std::unique_ptr<OpKernel> create_split_kernel(const KernelSpec& spec, CudaBackend& backend);  // shape_copies.cpp
std::unique_ptr<OpKernel> create_value_kernel(const KernelSpec& spec,
                                              CudaBackend& backend);  // shape_generators.cpp: Constant, Shape
std::unique_ptr<OpKernel> create_constant_of_shape_kernel(const KernelSpec& spec,
                                                          CudaBackend& backend);              // shape_generators.cpp
std::unique_ptr<OpKernel> create_range_kernel(const KernelSpec& spec, CudaBackend& backend);  // shape_generators.cpp

}  // namespace loom::backend::cuda
