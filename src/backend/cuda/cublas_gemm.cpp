// cuBLAS is column-major: a row-major matrix read column-major is its transpose. So the row-major
// C = op(A)·op(B) is computed as the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, i.e. the operands swap places
// and keep their own transpose flags. The algorithm of each problem is pinned (see the header).
#include "backend/cuda/cublas_gemm.hpp"

#include <algorithm>
#include <climits>
#include <compare>
#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "backend/cuda/cuda_backend.hpp"
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

// The alignment (a power of two up to 256 bytes) every batch entry of an operand keeps.
std::uint32_t alignment(const void* data, std::int64_t batch_stride, std::int64_t batch, std::size_t element) {
  auto bits = reinterpret_cast<std::uintptr_t>(data) | std::uintptr_t{256};
  if (batch > 1) bits |= static_cast<std::uintptr_t>(batch_stride) * element;
  return static_cast<std::uint32_t>(bits & (~bits + 1));
}

// One GEMM problem in cuBLAS's column-major terms: "A" is the row-major B and "B" the row-major A.
struct Problem {
  int device = 0;
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  int m = 0, n = 0, k = 0;
  int lda = 1, ldb = 1, ldc = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  int batch = 1;
  cudaDataType_t ab_type = CUDA_R_32F, c_type = CUDA_R_32F;
  std::uint32_t align_a = 256, align_b = 256, align_c = 256;
  std::size_t workspace_bytes = 0;
  auto operator<=>(const Problem&) const = default;
};

struct Pinned {
  bool found = false;  // false: this problem always runs on cublasGemmEx
  cublasLtMatmulAlgo_t algo{};
};

// The cuBLASLt descriptors of a problem: host objects, created per call (cheap, no device work)
// so that no descriptor is shared between threads.
class Descriptors {
 public:
  explicit Descriptors(const Problem& p) {
    try {
      create(p);
    } catch (...) {
      destroy();
      throw;
    }
  }
  ~Descriptors() { destroy(); }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  cublasLtMatmulDesc_t op() const noexcept { return op_; }
  cublasLtMatrixLayout_t a() const noexcept { return a_; }
  cublasLtMatrixLayout_t b() const noexcept { return b_; }
  cublasLtMatrixLayout_t c() const noexcept { return c_; }

 private:
  void create(const Problem& p) {
    LOOM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LOOM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &p.op_a, sizeof(p.op_a)));
    LOOM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &p.op_b, sizeof(p.op_b)));
    // Stored shapes: op(A) is m x k, so A is stored m x k (N) or k x m (T); likewise B.
    a_ = layout(p.ab_type, p.op_a == CUBLAS_OP_N ? p.m : p.k, p.op_a == CUBLAS_OP_N ? p.k : p.m, p.lda, p.batch,
                p.stride_a);
    b_ = layout(p.ab_type, p.op_b == CUBLAS_OP_N ? p.k : p.n, p.op_b == CUBLAS_OP_N ? p.n : p.k, p.ldb, p.batch,
                p.stride_b);
    c_ = layout(p.c_type, p.m, p.n, p.ldc, p.batch, p.stride_c);
  }
  void destroy() noexcept {
    for (cublasLtMatrixLayout_t l : {a_, b_, c_})
      if (l) LOOM_CUBLAS_CHECK_NOTHROW(cublasLtMatrixLayoutDestroy(l));
    if (op_) LOOM_CUBLAS_CHECK_NOTHROW(cublasLtMatmulDescDestroy(op_));
    a_ = b_ = c_ = nullptr;
    op_ = nullptr;
  }
  static cublasLtMatrixLayout_t layout(cudaDataType_t type, int rows, int cols, int ld, int batch,
                                       std::int64_t stride) {
    cublasLtMatrixLayout_t l = nullptr;
    LOOM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows),
                                                 static_cast<std::uint64_t>(cols), static_cast<std::int64_t>(ld)));
    if (batch > 1) {
      const std::int32_t count = batch;
      if (cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)) !=
              CUBLAS_STATUS_SUCCESS ||
          cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)) !=
              CUBLAS_STATUS_SUCCESS) {
        LOOM_CUBLAS_CHECK_NOTHROW(cublasLtMatrixLayoutDestroy(l));
        LOOM_CUBLAS_CHECK(CUBLAS_STATUS_INTERNAL_ERROR);
      }
    }
    return l;
  }

  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
};

// Pinned algorithms of every problem seen, per process (the heuristic is a pure function of the
// problem; asking it once makes every call of a problem run the same kernel). Never destroyed:
// kernels may run GEMMs from static destructors' threads at exit.
struct PinnedTable {
  std::mutex mutex;
  std::map<Problem, Pinned> pinned;
  PinnedGemmCounts counts;
};
PinnedTable& pinned_table() {
  static auto* table = new PinnedTable();
  return *table;
}

// cuBLASLt's choice for `p`, asked once. Whatever cuBLASLt cannot express or answer for this
// problem (a layout it refuses, such as a shared operand's zero batch stride on some versions,
// or no algorithm at these alignments) pins the problem to cublasGemmEx instead: a refusal is
// an answer, and a broken library shows in the fallback call itself.
Pinned ask_heuristic(const Problem& p, cublasLtHandle_t lt) noexcept {
  Pinned chosen;
  if (p.k == 0) return chosen;
  cublasLtMatmulPreference_t preference = nullptr;
  if (cublasLtMatmulPreferenceCreate(&preference) != CUBLAS_STATUS_SUCCESS) return chosen;
  try {
    const Descriptors d(p);
    const std::uint64_t workspace = p.workspace_bytes;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &workspace, sizeof(workspace));
    // Only algorithms that work at the alignment the operands have.
    const std::pair<cublasLtMatmulPreferenceAttributes_t, std::uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, p.align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, p.align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, p.align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, p.align_c}};
    for (const auto& [attribute, value] : alignments)
      if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    if (status == CUBLAS_STATUS_SUCCESS)
      status =
          cublasLtMatmulAlgoGetHeuristic(lt, d.op(), d.a(), d.b(), d.c(), d.c(), preference, 1, &result, &returned);
    if (status == CUBLAS_STATUS_SUCCESS && returned > 0 && result.state == CUBLAS_STATUS_SUCCESS) {
      chosen.found = true;
      chosen.algo = result.algo;
    }
  } catch (...) {
    // A descriptor cuBLASLt refused: this problem runs on cublasGemmEx.
  }
  LOOM_CUBLAS_CHECK_NOTHROW(cublasLtMatmulPreferenceDestroy(preference));
  return chosen;
}

const Pinned& pin(const Problem& p, cublasLtHandle_t lt) {
  PinnedTable& table = pinned_table();
  std::lock_guard lock(table.mutex);
  auto it = table.pinned.find(p);
  if (it != table.pinned.end()) return it->second;
  const Pinned chosen = ask_heuristic(p, lt);
  ++(chosen.found ? table.counts.pinned : table.counts.fallback);
  return table.pinned.emplace(p, chosen).first->second;
}

}  // namespace

PinnedGemmCounts pinned_gemm_counts() {
  PinnedTable& table = pinned_table();
  std::lock_guard lock(table.mutex);
  return table.counts;
}

void gemm_row_major(CudaStream& stream, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const GemmOperand& a, const GemmOperand& b, float beta, const GemmOutput& c, std::int64_t batch,
                    DType ab_dtype, DType c_dtype) {
  if (m == 0 || n == 0 || batch == 0) return;
  const CudaStream::CublasLt lt = stream.cublas_lt();
  const std::size_t ab_size = dtype_size(ab_dtype), c_size = dtype_size(c_dtype);
  Problem p;
  p.device = stream.device();
  p.op_a = b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.op_b = a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.m = to_int(n, "N");
  p.n = to_int(m, "M");
  p.k = to_int(k, "K");
  // cuBLAS rejects a leading dimension below 1 even when k or n is 0.
  p.lda = to_int(std::max<std::int64_t>(b.ld, 1), "ldb");
  p.ldb = to_int(std::max<std::int64_t>(a.ld, 1), "lda");
  p.ldc = to_int(std::max<std::int64_t>(c.ld, 1), "ldc");
  p.batch = to_int(batch, "batch");
  if (p.batch > 1) {
    p.stride_a = b.batch_stride;
    p.stride_b = a.batch_stride;
    p.stride_c = c.batch_stride;
  }
  p.ab_type = cuda_data_type(ab_dtype);
  p.c_type = cuda_data_type(c_dtype);
  p.align_a = alignment(b.data, b.batch_stride, batch, ab_size);
  p.align_b = alignment(a.data, a.batch_stride, batch, ab_size);
  p.align_c = alignment(c.data, c.batch_stride, batch, c_size);
  p.workspace_bytes = lt.workspace_bytes;

  const Pinned& pinned = pin(p, lt.handle);
  if (pinned.found) {
    const Descriptors descriptors(p);
    LOOM_CUBLAS_CHECK(cublasLtMatmul(lt.handle, descriptors.op(), &alpha, b.data, descriptors.a(), a.data,
                                     descriptors.b(), &beta, c.data, descriptors.c(), c.data, descriptors.c(),
                                     &pinned.algo, lt.workspace, lt.workspace_bytes, stream.get()));
    return;
  }
  cublasHandle_t handle = stream.cublas();
  if (p.batch == 1) {
    LOOM_CUBLAS_CHECK(cublasGemmEx(handle, p.op_a, p.op_b, p.m, p.n, p.k, &alpha, b.data, p.ab_type, p.lda, a.data,
                                   p.ab_type, p.ldb, &beta, c.data, p.c_type, p.ldc, CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
  } else {
    LOOM_CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle, p.op_a, p.op_b, p.m, p.n, p.k, &alpha, b.data, p.ab_type,
                                                 p.lda, b.batch_stride, a.data, p.ab_type, p.ldb, a.batch_stride, &beta,
                                                 c.data, p.c_type, p.ldc, c.batch_stride, p.batch, CUBLAS_COMPUTE_32F,
                                                 CUBLAS_GEMM_DEFAULT));
  }
}

}  // namespace loom::backend::cuda
