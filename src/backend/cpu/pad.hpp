// Pad (constant, reflect, edge; any dtype), Resize (nearest, linear; f32) and GridSample (f32).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_pad_kernel(const KernelSpec& spec);     // pad.cpp
std::unique_ptr<OpKernel> make_resize_kernel(const KernelSpec& spec);  // resize.cpp
// GridSample on 4-D f32 input: bilinear, nearest, bicubic; zeros, border, reflection padding.
std::unique_ptr<OpKernel> make_grid_sample_kernel(const KernelSpec& spec);  // grid_sample.cpp

}  // namespace loom::backend::cpu
