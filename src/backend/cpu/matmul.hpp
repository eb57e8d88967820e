// Matrix products: MatMul (numpy batched broadcasting) and Gemm (alpha, beta, transposes, C).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

std::unique_ptr<OpKernel> make_matmul_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_gemm_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
