// Data-movement ops, for any dtype: the views (Reshape, Flatten, Squeeze, Unsqueeze, Identity),
// Dropout at inference, Transpose, Concat and Gather. They copy elements by size and never look at
// their values (except Gather's indices). Slice, Split, Expand, Tile and the generators are in
// shape_ops.hpp.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_reshape_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_flatten_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_transpose_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_concat_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_gather_kernel(const KernelSpec& spec);
// Squeeze and Unsqueeze (axes input optional; the output shape decides), Identity.
std::unique_ptr<OpKernel> make_squeeze_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_identity_kernel(const KernelSpec& spec);
// Dropout (inference): output 0 = input, optional output 1 = all-true bool mask; see
// check_dropout() in backend/shape_spec.hpp for training_mode.
std::unique_ptr<OpKernel> make_dropout_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
