// MatMul and Gemm on top of the shared packed GEMM. MatMul with an unbatched B (a linear layer
// applied to [batch, seq, features]) runs as one tall GEMM instead of one per batch entry.
#include "backend/cpu/matmul.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/dnnl/dnnl_kernels.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {

MatMulGeometry parse_matmul(const KernelSpec& spec) {
  require_input_count(spec, 2, 2);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "A");
  require_present(spec, 1, "B");
  require_f32(spec);
  std::vector<std::int64_t> a = spec.inputs[0].shape.dims();
  std::vector<std::int64_t> b = spec.inputs[1].shape.dims();
  if (a.empty() || b.empty()) throw_bad_shape(spec, "inputs must have rank >= 1");
  MatMulGeometry g;
  // numpy rules: a 1-D A is a row vector and a 1-D B a column vector; the added dim is dropped.
  g.a_vector = a.size() == 1;
  g.b_vector = b.size() == 1;
  if (g.a_vector) a.insert(a.begin(), 1);
  if (g.b_vector) b.push_back(1);
  g.m = a[a.size() - 2];
  g.k = a[a.size() - 1];
  g.n = b[b.size() - 1];
  if (b[b.size() - 2] != g.k)
    throw_bad_shape(spec, "inner dimensions differ: A " + spec.inputs[0].shape.to_string() + ", B " +
                              spec.inputs[1].shape.to_string());

  g.a_batch = Shape(std::vector<std::int64_t>(a.begin(), a.end() - 2));
  g.b_batch = Shape(std::vector<std::int64_t>(b.begin(), b.end() - 2));
  std::vector<std::int64_t> batch(std::max(g.a_batch.rank(), g.b_batch.rank()), 1);
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto dim_of = [&](const Shape& s) {
      const std::size_t offset = batch.size() - s.rank();
      return i >= offset ? s[i - offset] : std::int64_t{1};
    };
    const std::int64_t da = dim_of(g.a_batch);
    const std::int64_t db = dim_of(g.b_batch);
    if (da != db && da != 1 && db != 1)
      throw_bad_shape(spec, "batch dimensions do not broadcast: A " + spec.inputs[0].shape.to_string() + ", B " +
                                spec.inputs[1].shape.to_string());
    batch[i] = da == 1 ? db : da;
  }
  std::vector<std::int64_t> expected = batch;
  if (!g.a_vector) expected.push_back(g.m);
  if (!g.b_vector) expected.push_back(g.n);
  require_shape(spec, spec.outputs[0].shape, Shape(expected), "output Y");
  g.batch_shape = Shape(batch);
  return g;
}

GemmGeometry parse_gemm(const KernelSpec& spec) {
  require_input_count(spec, 2, 3);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "A");
  require_present(spec, 1, "B");
  require_f32(spec);
  const Attributes& attrs = spec.node->attrs;
  GemmGeometry g;
  g.alpha = attrs.get_float("alpha", 1.0f);
  g.beta = attrs.get_float("beta", 1.0f);
  g.trans_a = attrs.get_int("transA", 0) != 0;
  g.trans_b = attrs.get_int("transB", 0) != 0;
  const Shape& a = spec.inputs[0].shape;
  const Shape& b = spec.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2)
    throw_bad_shape(spec, "A and B must be rank 2, got " + a.to_string() + " and " + b.to_string());
  g.m = g.trans_a ? a[1] : a[0];
  g.k = g.trans_a ? a[0] : a[1];
  g.n = g.trans_b ? b[0] : b[1];
  const std::int64_t k_of_b = g.trans_b ? b[1] : b[0];
  if (k_of_b != g.k)
    throw_bad_shape(spec, "inner dimensions differ: A " + a.to_string() + (g.trans_a ? " (transposed)" : "") + ", B " +
                              b.to_string() + (g.trans_b ? " (transposed)" : ""));
  const Shape y_shape{g.m, g.n};
  require_shape(spec, spec.outputs[0].shape, y_shape, "output Y");
  g.has_c = spec.inputs.size() == 3 && spec.inputs[2].present;
  if (g.has_c) {
    const auto strides = broadcast_strides(spec.inputs[2].shape, y_shape);
    if (!strides)
      throw_bad_shape(spec, "C " + spec.inputs[2].shape.to_string() + " does not broadcast to " + y_shape.to_string());
    g.c_row_stride = (*strides)[0];
    g.c_col_stride = (*strides)[1];
  }
  return g;
}

namespace {

// Multiply-adds of a run of batch entries worth a thread of its own.
constexpr std::int64_t kBatchChunkMacs = std::int64_t{1} << 18;

class MatMulKernel final : public OpKernel {
 public:
  MatMulKernel(const KernelSpec& spec, const FusedRun* fused) : OpKernel(run_spec(spec, fused)) {
    const MatMulGeometry g = parse_matmul(spec);
    m_ = g.m;
    k_ = g.k;
    n_ = g.n;
    batch_shape_ = g.batch_shape;
    batch_count_ = batch_shape_.numel();
    a_strides_ = *broadcast_strides(g.a_batch, batch_shape_);
    b_strides_ = *broadcast_strides(g.b_batch, batch_shape_);
    // One tall GEMM when B is shared by every batch entry and A is not broadcast.
    fold_batch_ = g.b_batch.numel() == 1 && g.a_batch.numel() == batch_count_;
    output_shape_ = spec.outputs[0].shape;
    if (fused) {
      fused_ = *fused;
      plan_epilogue(spec, fused_->epilogue, output_shape_);
    }
  }

  std::size_t workspace_bytes() const override {
    return fold_batch_ ? gemm_workspace_bytes(batch_count_ * m_, n_, k_) : gemm_workspace_bytes(m_, n_, k_);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* a = static_cast<const float*>(inputs[0]);
    const float* b = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[fused_ ? fused_->output_slot : 0]);
    multiply(a, b, y, workspace);
    if (fused_) apply_epilogue(fused_->epilogue, 0, output_shape_, y, inputs);
  }

 private:
  void multiply(const float* a, const float* b, float* y, void* workspace) const {
    if (fold_batch_) {
      gemm(batch_count_ * m_, n_, k_, 1.0f, row_major(a, k_), row_major(b, n_), 0.0f, y, n_, workspace);
      return;
    }
    // Batch entries are independent GEMMs: the kernel's threads take runs of them, each packing
    // into scratch of its own (one run alone uses the workspace, and its GEMMs split inside).
    const std::int64_t min_entries =
        std::max<std::int64_t>(1, kBatchChunkMacs / std::max<std::int64_t>(m_ * n_ * k_, 1));
    parallel_for(batch_count_, min_entries, [&](std::int64_t begin, std::int64_t end) {
      void* scratch = end - begin == batch_count_ ? workspace : thread_scratch(gemm_workspace_bytes(m_, n_, k_));
      for (std::int64_t batch = begin; batch < end; ++batch) {
        std::int64_t a_matrix = 0;
        std::int64_t b_matrix = 0;
        for (std::size_t d = batch_shape_.rank(), rest = static_cast<std::size_t>(batch); d-- > 0;) {
          const std::int64_t index = static_cast<std::int64_t>(rest % static_cast<std::size_t>(batch_shape_[d]));
          rest /= static_cast<std::size_t>(batch_shape_[d]);
          a_matrix += index * a_strides_[d];
          b_matrix += index * b_strides_[d];
        }
        gemm(m_, n_, k_, 1.0f, row_major(a + a_matrix * m_ * k_, k_), row_major(b + b_matrix * k_ * n_, n_), 0.0f,
             y + batch * m_ * n_, n_, scratch);
      }
    });
  }

  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  Shape batch_shape_;
  std::int64_t batch_count_ = 1;
  std::vector<std::int64_t> a_strides_;  // in matrices, per batch dim
  std::vector<std::int64_t> b_strides_;
  bool fold_batch_ = false;
  Shape output_shape_;
  std::optional<FusedRun> fused_;  // computing a fusion's chain (fusion.hpp)
};

class GemmKernel final : public OpKernel {
 public:
  GemmKernel(const KernelSpec& spec, const FusedRun* fused) : OpKernel(run_spec(spec, fused)) {
    const GemmGeometry g = parse_gemm(spec);
    alpha_ = g.alpha;
    beta_ = g.beta;
    trans_a_ = g.trans_a;
    trans_b_ = g.trans_b;
    m_ = g.m;
    k_ = g.k;
    n_ = g.n;
    has_c_ = g.has_c;
    c_row_stride_ = g.c_row_stride;
    c_col_stride_ = g.c_col_stride;
    if (fused) {
      fused_ = *fused;
      plan_epilogue(spec, fused_->epilogue, Shape{m_, n_});
    }
  }

  std::size_t workspace_bytes() const override { return gemm_workspace_bytes(m_, n_, k_); }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* a = static_cast<const float*>(inputs[0]);
    const float* b = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[fused_ ? fused_->output_slot : 0]);
    float gemm_beta = 0.0f;
    if (has_c_ && beta_ != 0.0f) {
      // Y starts as beta * broadcast(C); the product is then accumulated onto it.
      const float* c = static_cast<const float*>(inputs[2]);
      for (std::int64_t i = 0; i < m_; ++i)
        for (std::int64_t j = 0; j < n_; ++j) y[i * n_ + j] = beta_ * c[i * c_row_stride_ + j * c_col_stride_];
      gemm_beta = 1.0f;
    }
    const MatrixRef a_ref = trans_a_ ? transposed(a, m_) : row_major(a, k_);
    const MatrixRef b_ref = trans_b_ ? transposed(b, k_) : row_major(b, n_);
    gemm(m_, n_, k_, alpha_, a_ref, b_ref, gemm_beta, y, n_, workspace);
    if (fused_) apply_epilogue(fused_->epilogue, 0, Shape{m_, n_}, y, inputs);
  }

 private:
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false;
  std::int64_t c_row_stride_ = 0, c_col_stride_ = 0;
  std::optional<FusedRun> fused_;  // computing a fusion's chain (fusion.hpp)
};

}  // namespace

std::unique_ptr<OpKernel> make_gemm_matmul_kernel(const KernelSpec& spec, const FusedRun* fused) {
  return std::make_unique<MatMulKernel>(spec, fused);
}
std::unique_ptr<OpKernel> make_gemm_gemm_kernel(const KernelSpec& spec, const FusedRun* fused) {
  return std::make_unique<GemmKernel>(spec, fused);
}

std::unique_ptr<OpKernel> make_fused_matmul_kernel(const KernelSpec& spec, const FusedRun* fused) {
  if (auto library = make_dnnl_matmul_kernel(spec, fused)) return library;
  return make_gemm_matmul_kernel(spec, fused);
}
std::unique_ptr<OpKernel> make_fused_gemm_kernel(const KernelSpec& spec, const FusedRun* fused) {
  if (auto library = make_dnnl_gemm_kernel(spec, fused)) return library;
  return make_gemm_gemm_kernel(spec, fused);
}
std::unique_ptr<OpKernel> make_matmul_kernel(const KernelSpec& spec) { return make_fused_matmul_kernel(spec, nullptr); }
std::unique_ptr<OpKernel> make_gemm_kernel(const KernelSpec& spec) { return make_fused_gemm_kernel(spec, nullptr); }

}  // namespace loom::backend::cpu
