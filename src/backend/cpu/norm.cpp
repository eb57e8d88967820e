// BatchNormalization with running statistics (inference only), LayerNormalization over the
// trailing dims from `axis`, with its optional Mean and InvStdDev outputs, InstanceNormalization,
// MeanVarianceNormalization and LRN. Statistics are
// accumulated in double so the CPU result can serve as the reference for the CUDA kernels.
#include "backend/cpu/norm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"
#include "graph/ops/reduce_geometry.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::backend::cpu {
namespace {

class BatchNormKernel final : public OpKernel {
 public:
  explicit BatchNormKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 5, 5);
    require_output_count(spec, 1, 1);  // running mean/var outputs exist only in training mode
    const char* roles[] = {"X", "scale", "B", "input_mean", "input_var"};
    for (std::size_t i = 0; i < 5; ++i) require_present(spec, i, roles[i]);
    require_f32(spec);
    const Attributes& attrs = spec.node->attrs;
    if (attrs.get_int("training_mode", 0) != 0) throw_unsupported(spec, "training_mode=1 (inference only)");
    epsilon_ = attrs.get_float("epsilon", 1e-5f);
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 2) throw_bad_shape(spec, "X must have rank >= 2, got " + x.to_string());
    batch_ = x[0];
    channels_ = x[1];
    spatial_ = product(x.dims(), 2, x.rank());
    for (std::size_t i = 1; i < 5; ++i) require_shape(spec, spec.inputs[i].shape, Shape{channels_}, roles[i]);
    require_shape(spec, spec.outputs[0].shape, x, "output Y");
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const float* bias = static_cast<const float*>(inputs[2]);
    const float* mean = static_cast<const float*>(inputs[3]);
    const float* var = static_cast<const float*>(inputs[4]);
    float* y = static_cast<float*>(outputs[0]);
    for (std::int64_t c = 0; c < channels_; ++c) {
      // y = (x - mean) / sqrt(var + eps) * scale + B, folded into one multiply-add per element.
      const double multiplier = scale[c] / std::sqrt(static_cast<double>(var[c]) + epsilon_);
      const float a = static_cast<float>(multiplier);
      const float b = static_cast<float>(bias[c] - mean[c] * multiplier);
      for (std::int64_t n = 0; n < batch_; ++n) {
        const std::int64_t offset = (n * channels_ + c) * spatial_;
        const float* in = x + offset;
        float* out = y + offset;
        for (std::int64_t i = 0; i < spatial_; ++i) out[i] = in[i] * a + b;
      }
    }
  }

 private:
  float epsilon_ = 1e-5f;
  std::int64_t batch_ = 0, channels_ = 0, spatial_ = 0;
};

// How Scale or B lines up with the normalised block: one value per element, one for all, or a
// broadcast along part of it (expanded into the workspace at run time).
enum class ParamLayout { absent, per_element, scalar, partial };

// LayerNormalization over dims [axis, rank). The optional Mean and InvStdDev outputs hold the
// statistics of each normalised block (X's shape with the normalised dims set to 1).
class LayerNormKernel final : public OpKernel {
 public:
  explicit LayerNormKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 3);
    require_output_count(spec, 1, 3);
    require_present(spec, 0, "X");
    require_present(spec, 1, "Scale");
    require_f32(spec);
    const Attributes& attrs = spec.node->attrs;
    if (attrs.get_int("stash_type", 1) != 1) throw_unsupported(spec, "stash_type other than 1 (float)");
    epsilon_ = attrs.get_float("epsilon", 1e-5f);
    const Shape& x = spec.inputs[0].shape;
    const std::int64_t rank = static_cast<std::int64_t>(x.rank());
    if (rank == 0) throw_bad_shape(spec, "X must have rank >= 1");
    const std::int64_t axis = normalize_axis(spec, attrs.get_int("axis", -1), rank);
    rows_ = product(x.dims(), 0, static_cast<std::size_t>(axis));
    width_ = product(x.dims(), static_cast<std::size_t>(axis), x.rank());
    normalized_ = Shape(std::vector<std::int64_t>(x.dims().begin() + axis, x.dims().end()));
    scale_layout_ = param_layout(spec, 1, scale_strides_);
    bias_layout_ = spec.inputs.size() == 3 ? param_layout(spec, 2, bias_strides_) : ParamLayout::absent;
    require_shape(spec, spec.outputs[0].shape, x, "output Y");
    std::vector<std::int64_t> stat_dims = x.dims();
    std::fill(stat_dims.begin() + axis, stat_dims.end(), 1);
    const char* stat_roles[] = {"", "output Mean", "output InvStdDev"};
    for (std::size_t i = 1; i < spec.outputs.size(); ++i)
      if (spec.outputs[i].present) require_shape(spec, spec.outputs[i].shape, Shape(stat_dims), stat_roles[i]);
  }

  std::size_t workspace_bytes() const override {
    const std::size_t expanded =
        (scale_layout_ == ParamLayout::partial ? 1 : 0) + (bias_layout_ == ParamLayout::partial ? 1 : 0);
    return expanded * static_cast<std::size_t>(width_) * sizeof(float);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* scale = static_cast<const float*>(inputs[1]);
    const float* bias = bias_layout_ == ParamLayout::absent ? nullptr : static_cast<const float*>(inputs[2]);
    float* y = static_cast<float*>(outputs[0]);
    float* mean_out = outputs.size() > 1 ? static_cast<float*>(outputs[1]) : nullptr;
    float* inv_std_out = outputs.size() > 2 ? static_cast<float*>(outputs[2]) : nullptr;
    float* expanded = static_cast<float*>(workspace);
    if (scale_layout_ == ParamLayout::partial) {
      expand(scale, scale_strides_, expanded);
      scale = expanded;
      expanded += width_;
    }
    if (bias_layout_ == ParamLayout::partial) {
      expand(bias, bias_strides_, expanded);
      bias = expanded;
    }
    // Rows are independent (each keeps its own sums): the kernel's threads take runs of them.
    parallel_for(rows_, std::max<std::int64_t>(1, kChunkElements / std::max<std::int64_t>(width_, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   normalize_rows(x, scale, bias, y, mean_out, inv_std_out, begin, end);
                 });
  }

 private:
  // Elements of a run of rows worth a thread of their own.
  static constexpr std::int64_t kChunkElements = std::int64_t{1} << 14;

  // Rows [row_begin, row_end), with Scale and B expanded to the width where they were partial.
  void normalize_rows(const float* x, const float* scale, const float* bias, float* y, float* mean_out,
                      float* inv_std_out, std::int64_t row_begin, std::int64_t row_end) const {
    const std::int64_t scale_step = scale_layout_ == ParamLayout::scalar ? 0 : 1;
    const std::int64_t bias_step = bias_layout_ == ParamLayout::scalar ? 0 : 1;
    for (std::int64_t r = row_begin; r < row_end; ++r) {
      const float* in = x + r * width_;
      float* out = y + r * width_;
      double sum = 0.0;
      for (std::int64_t i = 0; i < width_; ++i) sum += in[i];
      const double mean = sum / static_cast<double>(width_);
      double squares = 0.0;
      for (std::int64_t i = 0; i < width_; ++i) {
        const double d = in[i] - mean;
        squares += d * d;
      }
      const float inv_std = static_cast<float>(1.0 / std::sqrt(squares / static_cast<double>(width_) + epsilon_));
      const float mean_f = static_cast<float>(mean);
      if (mean_out) mean_out[r] = mean_f;
      if (inv_std_out) inv_std_out[r] = inv_std;
      if (bias) {
        for (std::int64_t i = 0; i < width_; ++i)
          out[i] = (in[i] - mean_f) * inv_std * scale[i * scale_step] + bias[i * bias_step];
      } else {
        for (std::int64_t i = 0; i < width_; ++i) out[i] = (in[i] - mean_f) * inv_std * scale[i * scale_step];
      }
    }
  }

  ParamLayout param_layout(const KernelSpec& spec, std::size_t index, std::vector<std::int64_t>& strides) const {
    const TensorDesc& desc = spec.inputs[index];
    if (!desc.present) return ParamLayout::absent;
    const char* role = index == 1 ? "Scale" : "B";
    auto found = broadcast_strides(desc.shape, normalized_);
    if (!found)
      throw_bad_shape(spec, std::string(role) + " " + desc.shape.to_string() +
                                " does not broadcast to the normalised shape " + normalized_.to_string());
    if (desc.shape.numel() == normalized_.numel()) return ParamLayout::per_element;
    if (desc.shape.numel() == 1) return ParamLayout::scalar;
    strides = std::move(*found);
    return ParamLayout::partial;
  }

  // Writes the broadcast of `param` (element strides `strides` over the normalised dims) to `dst`.
  void expand(const float* param, const std::vector<std::int64_t>& strides, float* dst) const {
    const std::size_t rank = normalized_.rank();
    std::vector<std::int64_t> index(rank, 0);
    std::int64_t offset = 0;
    for (std::int64_t e = 0; e < width_; ++e) {
      dst[e] = param[offset];
      for (std::size_t d = rank; d-- > 0;) {
        offset += strides[d];
        if (++index[d] < normalized_[d]) break;
        offset -= strides[d] * normalized_[d];
        index[d] = 0;
      }
    }
  }

  float epsilon_ = 1e-5f;
  std::int64_t rows_ = 0, width_ = 0;
  Shape normalized_;
  ParamLayout scale_layout_ = ParamLayout::per_element;
  ParamLayout bias_layout_ = ParamLayout::absent;
  std::vector<std::int64_t> scale_strides_, bias_strides_;
};

// InstanceNormalization (per (n, c) over the spatial axes, eps inside the square root, then
// scale[c] and B[c]) and MeanVarianceNormalization ((x - mean) / (std + 1e-9) over `axes`): each
// element belongs to the group its kept axes name; statistics accumulate in double.
class GroupNormKernel final : public OpKernel {
 public:
  explicit GroupNormKernel(const KernelSpec& spec) : OpKernel(spec) {
    instance_ = spec.node->op_type == "InstanceNormalization";
    require_input_count(spec, instance_ ? 3 : 1, instance_ ? 3 : 1);
    require_output_count(spec, 1, 1);
    for (std::size_t i = 0; i < spec.inputs.size(); ++i)
      require_present(spec, i, i == 0 ? "input" : i == 1 ? "scale" : "B");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    require_shape(spec, spec.outputs[0].shape, x, "output");
    if (instance_) {
      if (x.rank() < 2) throw_bad_shape(spec, "input must be (N, C, ...), got " + x.to_string());
      for (std::size_t i = 1; i < 3; ++i)
        require_shape(spec, spec.inputs[i].shape, Shape{x[1]}, i == 1 ? "scale" : "B");
      reduced_.assign(x.rank(), true);
      reduced_[0] = reduced_[1] = false;
      epsilon_ = spec.node->attrs.get_float("epsilon", 1e-5f);
    } else {
      reduced_ = parse_for_node(spec, [&] { return graph::axis_mask(graph::mvn_axes(spec.node->attrs), x.rank()); });
    }
    dims_ = x.dims();
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::size_t rank = dims_.size();
    std::int64_t groups = 1, count = 1;
    for (std::size_t d = 0; d < rank; ++d) (reduced_[d] ? count : groups) *= dims_[d];
    const std::vector<std::int64_t> group = group_of_elements();
    std::vector<double> sum(static_cast<std::size_t>(groups), 0.0), square(static_cast<std::size_t>(groups), 0.0);
    for (std::size_t i = 0; i < group.size(); ++i) {
      sum[static_cast<std::size_t>(group[i])] += x[i];
      square[static_cast<std::size_t>(group[i])] += static_cast<double>(x[i]) * x[i];
    }
    std::vector<float> mean(sum.size()), inv(sum.size());
    for (std::size_t g = 0; g < sum.size(); ++g) {
      const double m = sum[g] / static_cast<double>(count);
      const double variance = std::max(0.0, square[g] / static_cast<double>(count) - m * m);
      mean[g] = static_cast<float>(m);
      inv[g] =
          static_cast<float>(instance_ ? 1.0 / std::sqrt(variance + epsilon_) : 1.0 / (std::sqrt(variance) + 1e-9));
    }
    const auto* scale = instance_ ? static_cast<const float*>(inputs[1]) : nullptr;
    const auto* bias = instance_ ? static_cast<const float*>(inputs[2]) : nullptr;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const auto g = static_cast<std::size_t>(group[i]);
      const float normalized = (x[i] - mean[g]) * inv[g];
      // Instance groups are (n, c) in order, so the channel is the group modulo C.
      y[i] = instance_ ? normalized * scale[g % static_cast<std::size_t>(dims_[1])] +
                             bias[g % static_cast<std::size_t>(dims_[1])]
                       : normalized;
    }
  }

 private:
  // For each element (row-major), the row-major index of its group over the kept axes.
  std::vector<std::int64_t> group_of_elements() const {
    const std::size_t rank = dims_.size();
    std::int64_t total = 1;
    for (const auto d : dims_) total *= d;
    std::vector<std::int64_t> group(static_cast<std::size_t>(total));
    std::vector<std::int64_t> position(rank, 0);
    for (std::int64_t i = 0; i < total; ++i) {
      std::int64_t g = 0;
      for (std::size_t d = 0; d < rank; ++d)
        if (!reduced_[d]) g = g * dims_[d] + position[d];
      group[static_cast<std::size_t>(i)] = g;
      for (std::size_t d = rank; d-- > 0;) {
        if (++position[d] < dims_[d]) break;
        position[d] = 0;
      }
    }
    return group;
  }

  bool instance_ = true;
  float epsilon_ = 1e-5f;
  std::vector<bool> reduced_;
  std::vector<std::int64_t> dims_;
};

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channels c - floor((size - 1) / 2) ..
// c + ceil((size - 1) / 2))^beta.
class LrnKernel final : public OpKernel {
 public:
  explicit LrnKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 2) throw_bad_shape(spec, "X must be (N, C, ...), got " + x.to_string());
    require_shape(spec, spec.outputs[0].shape, x, "output");
    const Attributes& attrs = spec.node->attrs;
    size_ = attrs.get_int("size", 0);
    if (size_ < 1) throw_bad_shape(spec, "size must be >= 1");
    alpha_ = attrs.get_float("alpha", 1e-4f);
    beta_ = attrs.get_float("beta", 0.75f);
    bias_ = attrs.get_float("bias", 1.0f);
    batch_ = x[0];
    channels_ = x[1];
    inner_ = product(x.dims(), 2, x.rank());
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t before = (size_ - 1) / 2, after = size_ - 1 - before;
    for (std::int64_t n = 0; n < batch_; ++n)
      for (std::int64_t c = 0; c < channels_; ++c)
        for (std::int64_t i = 0; i < inner_; ++i) {
          double square_sum = 0.0;
          for (std::int64_t k = std::max<std::int64_t>(0, c - before); k <= std::min(channels_ - 1, c + after); ++k) {
            const double v = x[(n * channels_ + k) * inner_ + i];
            square_sum += v * v;
          }
          const std::int64_t at = (n * channels_ + c) * inner_ + i;
          y[at] = static_cast<float>(x[at] / std::pow(bias_ + alpha_ / static_cast<double>(size_) * square_sum, beta_));
        }
  }

 private:
  std::int64_t size_ = 1, batch_ = 0, channels_ = 0, inner_ = 0;
  float alpha_ = 0.0f, beta_ = 0.0f, bias_ = 0.0f;
};

}  // namespace

std::unique_ptr<OpKernel> make_batch_norm_kernel(const KernelSpec& spec) {
  return std::make_unique<BatchNormKernel>(spec);
}
std::unique_ptr<OpKernel> make_group_norm_kernel(const KernelSpec& spec) {
  return std::make_unique<GroupNormKernel>(spec);
}
std::unique_ptr<OpKernel> make_lrn_kernel(const KernelSpec& spec) { return std::make_unique<LrnKernel>(spec); }
std::unique_ptr<OpKernel> make_layer_norm_kernel(const KernelSpec& spec) {
  return std::make_unique<LayerNormKernel>(spec);
}

}  // namespace loom::backend::cpu
