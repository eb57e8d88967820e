// The one f32 matrix multiply of the CPU backend. Conv (after im2col), MatMul, Gemm and LSTM all
// call it, so its speed is the CPU backend's speed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::backend::cpu {

// A read-only matrix with arbitrary element strides, so a transpose is just swapped strides.
struct MatrixRef {
  const float* data = nullptr;
  std::int64_t row_stride = 0;
  std::int64_t col_stride = 1;
};

// Row-major [rows, ld] storage read as-is.
inline MatrixRef row_major(const float* data, std::int64_t ld) { return {data, ld, 1}; }
// Row-major [cols, ld] storage read as its transpose.
inline MatrixRef transposed(const float* data, std::int64_t ld) { return {data, 1, ld}; }

// Scratch bytes gemm() needs for these sizes (its packed copies of A and B blocks).
std::size_t gemm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k);

// C[m, n] = alpha * A[m, k] · B[k, n] + beta * C, with C row-major with leading dimension ldc.
// beta == 0 never reads C, so C may hold garbage (NaN) on entry. `workspace` holds at least
// gemm_workspace_bytes(m, n, k) bytes (any alignment; 64 bytes is fastest). C must not overlap
// A, B or the workspace.
void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, MatrixRef a, MatrixRef b, float beta, float* c,
          std::int64_t ldc, void* workspace);

}  // namespace loom::backend::cpu
