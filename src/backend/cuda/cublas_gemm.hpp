// Row-major GEMM on top of column-major cuBLAS, shared by MatMul, Gemm and LSTM.
#pragma once

#include <cstdint>

#include <cublas_v2.h>

#include "loom/tensor.hpp"

namespace loom::backend::cuda {

// One row-major operand: `data` holds op(X) as stored (transposed or not), with leading
// dimension `ld` (elements per stored row) and `batch_stride` elements between batch entries
// (0 shares one matrix across the batch).
struct GemmOperand {
  const void* data = nullptr;
  bool transposed = false;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;
};

struct GemmOutput {
  void* data = nullptr;
  std::int64_t ld = 0;
  std::int64_t batch_stride = 0;
};

// C[m, n] = alpha * op(A)[m, k] · op(B)[k, n] + beta * C for each of `batch` entries. A and B have
// dtype `ab_dtype` (f32 or f16), C `c_dtype` (f32 or f16); accumulation is always f32
// (CUBLAS_COMPUTE_32F, which never uses TF32 unless the NVIDIA_TF32_OVERRIDE environment
// variable forces it). Throws Error(backend) on a cuBLAS failure, Error(unsupported) when a size
// exceeds cuBLAS's 32-bit arguments.
void gemm_row_major(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const GemmOperand& a, const GemmOperand& b, float beta, const GemmOutput& c, std::int64_t batch,
                    DType ab_dtype, DType c_dtype);

}  // namespace loom::backend::cuda
