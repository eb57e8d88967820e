// MatMul (numpy-batched) and Gemm (transA/transB/alpha/beta with a broadcast C) on cuBLAS.
#include "strided_copy.cuh"

#include "backend/cuda/cublas_gemm.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"

namespace loom::backend::cuda {
namespace {

Shape batch_dims(const Shape& matrix) {
  return Shape(std::vector<std::int64_t>(matrix.dims().begin(), matrix.dims().end() - 2));
}

// Matrix offsets of each batch entry along `batch`, given per-dim strides counted in matrices.
std::vector<std::int64_t> batch_offsets(const Shape& batch, const std::vector<std::int64_t>& strides) {
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(batch.numel()), 0);
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    std::int64_t rest = static_cast<std::int64_t>(i), offset = 0;
    for (std::size_t d = batch.rank(); d-- > 0;) {
      offset += (rest % batch[d]) * strides[d];
      rest /= batch[d];
    }
    offsets[i] = offset;
  }
  return offsets;
}

// The common step when offsets[i] == i * step for every i (what strided-batched GEMM needs).
std::optional<std::int64_t> uniform_step(const std::vector<std::int64_t>& offsets) {
  const std::int64_t step = offsets.size() > 1 ? offsets[1] - offsets[0] : 0;
  for (std::size_t i = 0; i < offsets.size(); ++i)
    if (offsets[i] != static_cast<std::int64_t>(i) * step) return std::nullopt;
  return step;
}

// MatMul has three plans, cheapest first: fold the batch into M when B is one shared matrix and A
// is dense over the batch (one GEMM); one strided-batched GEMM when every operand's batch entries
// are evenly spaced (including a shared operand, step 0); otherwise one GEMM per batch entry.
class MatMulKernel final : public CudaOpKernel {
 public:
  explicit MatMulKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1})) {
    // numpy rules: a 1-D A is a row vector [1, K], a 1-D B a column vector [K, 1] (the same bytes);
    // the added dimension is dropped from Y, which leaves Y's bytes unchanged too.
    std::vector<std::int64_t> a_dims = spec.inputs[0].shape.dims(), b_dims = spec.inputs[1].shape.dims();
    if (a_dims.empty() || b_dims.empty()) throw_bad_shape(spec, "operands must have rank >= 1");
    const bool a_vector = a_dims.size() == 1, b_vector = b_dims.size() == 1;
    if (a_vector) a_dims.insert(a_dims.begin(), 1);
    if (b_vector) b_dims.push_back(1);
    const Shape a(a_dims), b(b_dims);
    m_ = a[a.rank() - 2];
    k_ = a[a.rank() - 1];
    n_ = b[b.rank() - 1];
    if (b[b.rank() - 2] != k_)
      throw_bad_shape(
          spec, "inner dims differ: " + spec.inputs[0].shape.to_string() + " x " + spec.inputs[1].shape.to_string());
    const Shape a_batch = batch_dims(a), b_batch = batch_dims(b);
    const std::optional<Shape> out_batch = broadcast_shapes(a_batch, b_batch);
    if (!out_batch)
      throw_bad_shape(spec, "batch dims do not broadcast: " + spec.inputs[0].shape.to_string() + " x " +
                                spec.inputs[1].shape.to_string());
    std::vector<std::int64_t> out_dims = out_batch->dims();
    if (!a_vector) out_dims.push_back(m_);
    if (!b_vector) out_dims.push_back(n_);
    require_output_shape(spec, 0, Shape(out_dims));
    batch_ = out_batch->numel();

    if (b_batch.numel() == 1 && a_batch.numel() == batch_) {
      fold_batch_ = true;
      return;
    }
    const std::vector<std::int64_t> a_offsets = batch_offsets(*out_batch, *broadcast_strides(a_batch, *out_batch));
    const std::vector<std::int64_t> b_offsets = batch_offsets(*out_batch, *broadcast_strides(b_batch, *out_batch));
    const std::optional<std::int64_t> a_step = uniform_step(a_offsets), b_step = uniform_step(b_offsets);
    if (a_step && b_step) {
      a_step_ = *a_step;
      b_step_ = *b_step;
    } else {
      a_offsets_ = a_offsets;
      b_offsets_ = b_offsets;
    }
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    const auto element = static_cast<std::int64_t>(dtype_size(dtype_));
    const auto* a = static_cast<const std::byte*>(inputs[0]);
    const auto* b = static_cast<const std::byte*>(inputs[1]);
    auto* y = static_cast<std::byte*>(outputs[0]);
    if (fold_batch_) {
      gemm_row_major(stream, batch_ * m_, n_, k_, 1.0f, {a, false, k_, 0}, {b, false, n_, 0}, 0.0f, {y, n_, 0}, 1,
                     dtype_, dtype_);
    } else if (a_offsets_.empty()) {
      gemm_row_major(stream, m_, n_, k_, 1.0f, {a, false, k_, a_step_ * m_ * k_}, {b, false, n_, b_step_ * k_ * n_},
                     0.0f, {y, n_, m_ * n_}, batch_, dtype_, dtype_);
    } else {
      for (std::int64_t i = 0; i < batch_; ++i) {
        const GemmOperand a_i{a + a_offsets_[i] * m_ * k_ * element, false, k_, 0};
        const GemmOperand b_i{b + b_offsets_[i] * k_ * n_ * element, false, n_, 0};
        gemm_row_major(stream, m_, n_, k_, 1.0f, a_i, b_i, 0.0f, {y + i * m_ * n_ * element, n_, 0}, 1, dtype_, dtype_);
      }
    }
  }

 private:
  DType dtype_;
  std::int64_t m_ = 0, n_ = 0, k_ = 0, batch_ = 1;
  bool fold_batch_ = false;
  std::int64_t a_step_ = 0, b_step_ = 0;             // matrices between batch entries
  std::vector<std::int64_t> a_offsets_, b_offsets_;  // per-entry matrix offsets (general plan)
};

class GemmKernel final : public CudaOpKernel {
 public:
  explicit GemmKernel(const KernelSpec& spec) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    const Attributes& attrs = spec.node->attrs;
    const Shape& a = spec.inputs[0].shape;
    const Shape& b = spec.inputs[1].shape;
    if (a.rank() != 2 || b.rank() != 2) throw_bad_shape(spec, "A and B must be matrices");
    trans_a_ = attrs.get_int("transA", 0) != 0;
    trans_b_ = attrs.get_int("transB", 0) != 0;
    alpha_ = attrs.get_float("alpha", 1.0f);
    beta_ = attrs.get_float("beta", 1.0f);
    m_ = trans_a_ ? a[1] : a[0];
    k_ = trans_a_ ? a[0] : a[1];
    n_ = trans_b_ ? b[0] : b[1];
    if ((trans_b_ ? b[1] : b[0]) != k_)
      throw_bad_shape(spec, "inner dims differ: " + a.to_string() + " x " + b.to_string());
    const Shape out{m_, n_};
    require_output_shape(spec, 0, out);

    has_c_ = has_input(spec, 2) && beta_ != 0.0f;
    if (has_c_) {
      const Shape& c = spec.inputs[2].shape;
      const std::optional<std::vector<std::int64_t>> strides = broadcast_strides(c, out);
      if (!strides) throw_bad_shape(spec, "C of shape " + c.to_string() + " does not broadcast to " + out.to_string());
      c_dense_ = c.numel() == out.numel();
      c_layout_ = *make_copy_layout(out.dims(), *strides, contiguous_strides(out.dims()));
    }
  }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void*, CudaStream& stream) override {
    // Y starts as C broadcast to [M, N]; the GEMM then accumulates into it with beta.
    if (has_c_) {
      if (c_dense_)
        stream.copy_on_device(outputs[0], inputs[2], static_cast<std::size_t>(m_ * n_) * dtype_size(dtype_));
      else
        kernels::launch_strided_copy(inputs[2], outputs[0], dtype_size(dtype_), c_layout_, stream.get());
    }
    const GemmOperand a{inputs[0], trans_a_, trans_a_ ? m_ : k_, 0};
    const GemmOperand b{inputs[1], trans_b_, trans_b_ ? k_ : n_, 0};
    gemm_row_major(stream, m_, n_, k_, alpha_, a, b, has_c_ ? beta_ : 0.0f, {outputs[0], n_, 0}, 1, dtype_, dtype_);
  }

 private:
  DType dtype_;
  bool trans_a_ = false, trans_b_ = false;
  float alpha_ = 1.0f, beta_ = 1.0f;
  std::int64_t m_ = 0, n_ = 0, k_ = 0;
  bool has_c_ = false, c_dense_ = false;
  kernels::StridedCopyLayout c_layout_;
};

}  // namespace

std::unique_ptr<OpKernel> create_matmul_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 2, 2, 1, 1);
  return std::make_unique<MatMulKernel>(spec);
}

std::unique_ptr<OpKernel> create_gemm_kernel(const KernelSpec& spec, CudaBackend&) {
  require_arity(spec, 2, 3, 1, 1);
  return std::make_unique<GemmKernel>(spec);
}

}  // namespace loom::backend::cuda
