// Matrix products: MatMul (numpy batched broadcasting) and Gemm (alpha, beta, transposes, C).
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "backend/cpu/epilogue.hpp"

namespace loom::backend::cpu {

// A MatMul node's checked shapes (f32): A [..., m, k] and B [..., k, n] with numpy's batch
// broadcasting, a 1-D A or B read as a row or column vector. Throws Error naming the node.
struct MatMulGeometry {
  std::int64_t m = 0, k = 0, n = 0;
  bool a_vector = false, b_vector = false;
  Shape a_batch, b_batch;  // the dims before the last two (after the vectors' added dims)
  Shape batch_shape;       // their broadcast
};
MatMulGeometry parse_matmul(const KernelSpec& spec);

// A Gemm node's checked attributes and shapes (f32): Y [m, n] = alpha * A' B' + beta * C.
struct GemmGeometry {
  float alpha = 1.0f, beta = 1.0f;
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, k = 0, n = 0;
  bool has_c = false;
  std::int64_t c_row_stride = 0, c_col_stride = 0;  // C's strides broadcast to [m, n]
};
GemmGeometry parse_gemm(const KernelSpec& spec);

// The registry's MatMul and Gemm: oneDNN's matmul where the build has it and the library takes
// the product (dnnl/dnnl_kernels.hpp), else our own packed GEMM.
std::unique_ptr<OpKernel> make_matmul_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_gemm_kernel(const KernelSpec& spec);
// The same for a fusion's chain (fusion.hpp); `fused` null computes the op alone.
std::unique_ptr<OpKernel> make_fused_matmul_kernel(const KernelSpec& spec, const FusedRun* fused);
std::unique_ptr<OpKernel> make_fused_gemm_kernel(const KernelSpec& spec, const FusedRun* fused);
// Our own kernels on the packed GEMM (gemm.hpp): every shape; the fallback and the reference the
// library's kernels are tested against.
std::unique_ptr<OpKernel> make_gemm_matmul_kernel(const KernelSpec& spec, const FusedRun* fused = nullptr);
std::unique_ptr<OpKernel> make_gemm_gemm_kernel(const KernelSpec& spec, const FusedRun* fused = nullptr);

}  // namespace loom::backend::cpu
