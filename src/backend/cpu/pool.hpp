// Pooling over the spatial dims of [N, C, spatial...] tensors: MaxPool, AveragePool (1-D to 3-D),
// GlobalAveragePool and GlobalMaxPool (any spatial rank).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_max_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_average_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_global_average_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_global_max_pool_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
