// Pooling over the spatial dims of NCHW tensors: MaxPool, AveragePool, GlobalAveragePool.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_max_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_average_pool_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_global_average_pool_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
