// Shape-family ops beyond layout.hpp, for every dtype: the strided copies (Slice, Expand, Tile),
// Split, and the generators (Shape, Constant, ConstantOfShape, Range).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// Slice, Expand and Tile: constant starts/ends/axes/steps (Slice); Expand and Tile follow the
// output shape and check it against their constant input when there is one.
std::unique_ptr<OpKernel> make_strided_view_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_split_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_shape_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_constant_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_constant_of_shape_kernel(const KernelSpec& spec);
// Range in f32, i64, i32; start and delta are read when it runs.
std::unique_ptr<OpKernel> make_range_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
