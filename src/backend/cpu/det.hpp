// Det on the CPU: determinants of square f32 matrices.
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// X [..., M, M] -> [...]: LU decomposition with partial pivoting, in double.
std::unique_ptr<OpKernel> make_det_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
