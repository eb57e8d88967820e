// Normalisation ops: BatchNormalization (inference form), LayerNormalization,
// InstanceNormalization, MeanVarianceNormalization and LRN.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_batch_norm_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_layer_norm_kernel(const KernelSpec& spec);
// InstanceNormalization and MeanVarianceNormalization (f32).
std::unique_ptr<OpKernel> make_group_norm_kernel(const KernelSpec& spec);
// LRN across channels (f32).
std::unique_ptr<OpKernel> make_lrn_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
