// TopK: the K largest (or smallest) elements along one axis and their indices.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_topk_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
