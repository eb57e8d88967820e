// Pad (constant, reflect, edge; any dtype) and Resize (nearest, linear; f32).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_pad_kernel(const KernelSpec& spec);     // pad.cpp
std::unique_ptr<OpKernel> make_resize_kernel(const KernelSpec& spec);  // resize.cpp

}  // namespace loom::backend::cpu
