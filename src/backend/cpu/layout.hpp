// Data-movement ops, for any dtype: Reshape, Flatten, Transpose, Concat, Gather. They copy
// elements by size and never look at their values (except Gather's indices).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_reshape_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_flatten_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_transpose_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_concat_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_gather_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
