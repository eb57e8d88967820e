// cuBLAS is column-major: a row-major matrix read column-major is its transpose. So the row-major
// C = op(A)·op(B) is computed as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. the operands swap places
// and keep their own transpose flags.
#include "backend/cuda/cublas_gemm.hpp"

#include <algorithm>
#include <climits>
#include <string>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "loom/error.hpp"

namespace loom::backend::cuda {
namespace {

int to_int(std::int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw Error(ErrorCode::unsupported,
                std::string("GEMM ") + what + " " + std::to_string(value) + " exceeds cuBLAS's 32-bit range");
  return static_cast<int>(value);
}

}  // namespace

void gemm_row_major(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const GemmOperand& a, const GemmOperand& b, float beta, const GemmOutput& c, std::int64_t batch,
                    DType ab_dtype, DType c_dtype) {
  if (m == 0 || n == 0 || batch == 0) return;
  const cudaDataType_t ab_type = cuda_data_type(ab_dtype);
  const cudaDataType_t c_type = cuda_data_type(c_dtype);
  const cublasOperation_t op_b = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int cm = to_int(n, "N"), cn = to_int(m, "M"), ck = to_int(k, "K");
  // cuBLAS rejects a leading dimension below 1 even when k or n is 0.
  const int ldb = to_int(std::max<std::int64_t>(b.ld, 1), "ldb");
  const int lda = to_int(std::max<std::int64_t>(a.ld, 1), "lda");
  const int ldc = to_int(std::max<std::int64_t>(c.ld, 1), "ldc");
  if (batch == 1) {
    LOOM_CUBLAS_CHECK(cublasGemmEx(handle, op_b, op_a, cm, cn, ck, &alpha, b.data, ab_type, ldb, a.data, ab_type, lda,
                                   &beta, c.data, c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    LOOM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, op_b, op_a, cm, cn, ck, &alpha, b.data, ab_type, ldb,
                                                 b.batch_stride, a.data, ab_type, lda, a.batch_stride, &beta, c.data,
                                                 c_type, ldc, c.batch_stride, to_int(batch, "batch"),
                                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace loom::backend::cuda
