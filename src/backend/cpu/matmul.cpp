// MatMul and Gemm on top of the shared packed GEMM. MatMul with an unbatched B (a linear layer
// applied to [batch, seq, features]) runs as one tall GEMM instead of one per batch entry.
#include "backend/cpu/matmul.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

// Multiply-adds of a run of batch entries worth a thread of its own.
constexpr std::int64_t kBatchChunkMacs = std::int64_t{1} << 18;

class MatMulKernel final : public OpKernel {
 public:
  explicit MatMulKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "A");
    require_present(spec, 1, "B");
    require_f32(spec);
    std::vector<std::int64_t> a = spec.inputs[0].shape.dims();
    std::vector<std::int64_t> b = spec.inputs[1].shape.dims();
    if (a.empty() || b.empty()) throw_bad_shape(spec, "inputs must have rank >= 1");
    // numpy rules: a 1-D A is a row vector and a 1-D B a column vector; the added dim is dropped.
    const bool a_vector = a.size() == 1;
    const bool b_vector = b.size() == 1;
    if (a_vector) a.insert(a.begin(), 1);
    if (b_vector) b.push_back(1);
    m_ = a[a.size() - 2];
    k_ = a[a.size() - 1];
    n_ = b[b.size() - 1];
    if (b[b.size() - 2] != k_)
      throw_bad_shape(spec, "inner dimensions differ: A " + spec.inputs[0].shape.to_string() + ", B " +
                                spec.inputs[1].shape.to_string());

    const Shape a_batch(std::vector<std::int64_t>(a.begin(), a.end() - 2));
    const Shape b_batch(std::vector<std::int64_t>(b.begin(), b.end() - 2));
    std::vector<std::int64_t> batch(std::max(a_batch.rank(), b_batch.rank()), 1);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const auto dim_of = [&](const Shape& s) {
        const std::size_t offset = batch.size() - s.rank();
        return i >= offset ? s[i - offset] : std::int64_t{1};
      };
      const std::int64_t da = dim_of(a_batch);
      const std::int64_t db = dim_of(b_batch);
      if (da != db && da != 1 && db != 1)
        throw_bad_shape(spec, "batch dimensions do not broadcast: A " + spec.inputs[0].shape.to_string() + ", B " +
                                  spec.inputs[1].shape.to_string());
      batch[i] = da == 1 ? db : da;
    }
    std::vector<std::int64_t> expected = batch;
    if (!a_vector) expected.push_back(m_);
    if (!b_vector) expected.push_back(n_);
    require_shape(spec, spec.outputs[0].shape, Shape(expected), "output Y");

    batch_shape_ = Shape(batch);
    batch_count_ = batch_shape_.numel();
    a_strides_ = *broadcast_strides(a_batch, batch_shape_);
    b_strides_ = *broadcast_strides(b_batch, batch_shape_);
    // One tall GEMM when B is shared by every batch entry and A is not broadcast.
    fold_batch_ = b_batch.numel() == 1 && a_batch.numel() == batch_count_;
  }

  std::size_t workspace_bytes() const override {
    return fold_batch_ ? gemm_workspace_bytes(batch_count_ * m_, n_, k_) : gemm_workspace_bytes(m_, n_, k_);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* a = static_cast<const float*>(inputs[0]);
    const float* b = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
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

 private:
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  Shape batch_shape_;
  std::int64_t batch_count_ = 1;
  std::vector<std::int64_t> a_strides_;  // in matrices, per batch dim
  std::vector<std::int64_t> b_strides_;
  bool fold_batch_ = false;
};

class GemmKernel final : public OpKernel {
 public:
  explicit GemmKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 3);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "A");
    require_present(spec, 1, "B");
    require_f32(spec);
    const Attributes& attrs = spec.node->attrs;
    alpha_ = attrs.get_float("alpha", 1.0f);
    beta_ = attrs.get_float("beta", 1.0f);
    trans_a_ = attrs.get_int("transA", 0) != 0;
    trans_b_ = attrs.get_int("transB", 0) != 0;
    const Shape& a = spec.inputs[0].shape;
    const Shape& b = spec.inputs[1].shape;
    if (a.rank() != 2 || b.rank() != 2)
      throw_bad_shape(spec, "A and B must be rank 2, got " + a.to_string() + " and " + b.to_string());
    m_ = trans_a_ ? a[1] : a[0];
    k_ = trans_a_ ? a[0] : a[1];
    n_ = trans_b_ ? b[0] : b[1];
    const std::int64_t k_of_b = trans_b_ ? b[1] : b[0];
    if (k_of_b != k_)
      throw_bad_shape(spec, "inner dimensions differ: A " + a.to_string() + (trans_a_ ? " (transposed)" : "") + ", B " +
                                b.to_string() + (trans_b_ ? " (transposed)" : ""));
    const Shape y_shape{m_, n_};
    require_shape(spec, spec.outputs[0].shape, y_shape, "output Y");
    has_c_ = spec.inputs.size() == 3 && spec.inputs[2].present;
    if (has_c_) {
      const auto strides = broadcast_strides(spec.inputs[2].shape, y_shape);
      if (!strides)
        throw_bad_shape(spec,
                        "C " + spec.inputs[2].shape.to_string() + " does not broadcast to " + y_shape.to_string());
      c_row_stride_ = (*strides)[0];
      c_col_stride_ = (*strides)[1];
    }
  }

  std::size_t workspace_bytes() const override { return gemm_workspace_bytes(m_, n_, k_); }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* a = static_cast<const float*>(inputs[0]);
    const float* b = static_cast<const float*>(inputs[1]);
    float* y = static_cast<float*>(outputs[0]);
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
  }

 private:
  float alpha_ = 1.0f, beta_ = 1.0f;
  bool trans_a_ = false, trans_b_ = false;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false;
  std::int64_t c_row_stride_ = 0, c_col_stride_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_matmul_kernel(const KernelSpec& spec) { return std::make_unique<MatMulKernel>(spec); }
std::unique_ptr<OpKernel> make_gemm_kernel(const KernelSpec& spec) { return std::make_unique<GemmKernel>(spec); }

}  // namespace loom::backend::cpu
