// Row-major GEMM on top of column-major cuBLASLt, shared by MatMul, Gemm, LSTM, GRU and the
// recurrent device loops; every problem's algorithm is chosen once and pinned.
#pragma once

#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::backend::cuda {

class CudaStream;

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

// C[m, n] = alpha * op(A)[m, k] · op(B)[k, n] + beta * C for each of `batch` entries, enqueued on
// `stream`. A and B have dtype `ab_dtype` (f32 or f16), C `c_dtype` (f32 or f16); accumulation
// is always f32 (CUBLAS_COMPUTE_32F: no TF32 unless the NVIDIA_TF32_OVERRIDE environment
// variable forces it).
//
// Bit-identical by construction: the algorithm for a problem (device, sizes, transposes, leading
// dimensions, batch strides, dtypes, the operands' address alignment and the workspace limit) is
// asked of cuBLASLt's heuristic once per process and kept, and every later call of that problem
// runs it with the stream's own workspace. So the same GEMM computes the same bits whether it
// runs plainly or inside a captured graph, on any stream, before or after a pause, whatever
// cuBLAS would pick under concurrent load. A problem cuBLASLt refuses or has no answer for (and k = 0)
// always takes cublasGemmEx instead, which for identical calls on one device is deterministic.
// Throws Error(backend) on a cuBLAS failure, Error(unsupported) when a size exceeds cuBLAS's
// 32-bit arguments.
void gemm_row_major(CudaStream& stream, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const GemmOperand& a, const GemmOperand& b, float beta, const GemmOutput& c, std::int64_t batch,
                    DType ab_dtype, DType c_dtype);

// How many distinct GEMM problems have a pinned cuBLASLt algorithm, and how many fell back to
// cublasGemmEx (for tests and diagnostics).
struct PinnedGemmCounts {
  std::uint64_t pinned = 0;
  std::uint64_t fallback = 0;
};
PinnedGemmCounts pinned_gemm_counts();

}  // namespace loom::backend::cuda
