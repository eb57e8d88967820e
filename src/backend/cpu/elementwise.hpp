// Elementwise ops: the activations (Relu, Sigmoid, Tanh, Gelu) and the broadcasting binary
// arithmetic ops (Add, Mul).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// Relu, Sigmoid, Tanh, Gelu (approximate "none" | "tanh"); f32.
std::unique_ptr<OpKernel> make_unary_kernel(const KernelSpec& spec);
// Add, Mul with numpy broadcasting; f32, i64, i32.
std::unique_ptr<OpKernel> make_binary_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
