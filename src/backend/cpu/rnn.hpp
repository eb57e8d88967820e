// The plain RNN on the CPU: H_t = f(X_t · Wᵀ + H_{t-1} · Rᵀ + Wb + Rb).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// f32; forward, reverse, bidirectional; layout 0/1; B, sequence_lens, initial_h; outputs Y and
// Y_h (each optional); clip; activations (default Tanh).
std::unique_ptr<OpKernel> make_rnn_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
