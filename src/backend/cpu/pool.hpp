// Pooling over the spatial dims of [N, C, spatial...] tensors: MaxPool, AveragePool (1-D to 3-D),
// GlobalAveragePool and GlobalMaxPool (any spatial rank); MaxUnpool and RoiAlign.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_max_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_average_pool_kernel(const KernelSpec& spec);
// MaxUnpool (max_unpool.cpp): f32 X, i64 I; output_shape constant when given.
std::unique_ptr<OpKernel> make_max_unpool_kernel(const KernelSpec& spec);
// RoiAlign (roi_align.cpp): f32, mode avg.
std::unique_ptr<OpKernel> make_roi_align_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_global_average_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_global_max_pool_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
