// The losses on the CPU: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (f32 input, i64 or
// i32 target, optional f32 weight; reduction none, sum or mean; ignore_index).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// Both losses; SoftmaxCrossEntropyLoss also writes its optional log_prob output.
std::unique_ptr<OpKernel> make_loss_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
