// Normalisation ops: BatchNormalization (inference form) and LayerNormalization.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_batch_norm_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_layer_norm_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
