// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: SoftmaxCrossEntropyLoss is the NLL loss
// of log_softmax(scores) along the class axis, so both share one loop over (n, d) positions.
// Sums accumulate in double; an out-of-range target that is not ignore_index throws.
#include "backend/cpu/loss.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "graph/ops/reduce_geometry.hpp"

namespace loom::backend::cpu {
namespace {

class LossKernel final : public OpKernel {
 public:
  explicit LossKernel(const KernelSpec& spec) : OpKernel(spec) {
    softmax_ = spec.node->op_type == "SoftmaxCrossEntropyLoss";
    require_input_count(spec, 2, 3);
    require_output_count(spec, 1, softmax_ ? 2 : 1);
    require_present(spec, 0, softmax_ ? "scores" : "input");
    require_present(spec, 1, softmax_ ? "labels" : "target");
    require_dtype(spec, spec.inputs[0], DType::f32, "input");
    target_dtype_ = spec.inputs[1].dtype;
    if (target_dtype_ != DType::i64 && target_dtype_ != DType::i32)
      throw_unsupported(spec, "target dtype " + std::string(dtype_name(target_dtype_)) + " (expects i64 or i32)");
    geometry_ = parse_for_node(
        spec, [&] { return graph::loss_geometry(spec.node->attrs, spec.inputs[0].shape, spec.inputs[1].shape); });
    has_weight_ = spec.inputs.size() > 2 && spec.inputs[2].present;
    if (has_weight_) {
      require_dtype(spec, spec.inputs[2], DType::f32, "weight");
      require_shape(spec, spec.inputs[2].shape, Shape{geometry_.classes}, "weight");
    }
    require_dtype(spec, spec.outputs[0], DType::f32, "output");
    require_shape(spec, spec.outputs[0].shape, Shape(geometry_.output), "output");
    has_log_prob_ = spec.outputs.size() > 1 && spec.outputs[1].present;
    if (has_log_prob_) {
      require_dtype(spec, spec.outputs[1], DType::f32, "log_prob");
      require_shape(spec, spec.outputs[1].shape, spec.inputs[0].shape, "log_prob");
    }
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    std::vector<std::int64_t> target(static_cast<std::size_t>(geometry_.batch * geometry_.inner));
    if (target_dtype_ == DType::i64)
      std::copy_n(static_cast<const std::int64_t*>(inputs[1]), target.size(), target.begin());
    else
      std::copy_n(static_cast<const std::int32_t*>(inputs[1]), target.size(), target.begin());
    for (std::size_t j = 0; j < target.size(); ++j)
      if (!ignored(target[j]) && (target[j] < 0 || target[j] >= geometry_.classes))
        throw Error(ErrorCode::invalid_argument,
                    spec_op() + " node '" + node_name() + "': target " + std::to_string(target[j]) + " at position " +
                        std::to_string(j) + " is out of range for " + std::to_string(geometry_.classes) + " classes");
    const auto* x = static_cast<const float*>(inputs[0]);
    std::vector<float> log_prob;
    if (softmax_) {
      log_prob.resize(static_cast<std::size_t>(geometry_.batch * geometry_.classes * geometry_.inner));
      log_softmax(x, log_prob.data());
      x = log_prob.data();
    }
    const auto* weight = has_weight_ ? static_cast<const float*>(inputs[2]) : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    double loss_sum = 0.0, weight_sum = 0.0;
    const std::int64_t c_count = geometry_.classes, inner = geometry_.inner;
    for (std::int64_t n = 0; n < geometry_.batch; ++n)
      for (std::int64_t d = 0; d < inner; ++d) {
        const std::int64_t t = target[static_cast<std::size_t>(n * inner + d)];
        float loss = 0.0f, w = 0.0f;
        if (!ignored(t)) {
          w = weight ? weight[t] : 1.0f;
          loss = -x[(n * c_count + t) * inner + d] * w;
        }
        if (geometry_.reduction == graph::LossReduction::none) y[n * inner + d] = loss;
        loss_sum += loss;
        weight_sum += w;
      }
    if (geometry_.reduction == graph::LossReduction::sum) y[0] = static_cast<float>(loss_sum);
    if (geometry_.reduction == graph::LossReduction::mean) y[0] = static_cast<float>(loss_sum / weight_sum);
    if (has_log_prob_) std::copy(log_prob.begin(), log_prob.end(), static_cast<float*>(outputs[1]));
  }

 private:
  bool ignored(std::int64_t t) const { return geometry_.ignore_index && t == *geometry_.ignore_index; }
  std::string spec_op() const { return softmax_ ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss"; }

  // log_softmax along the class axis (axis 1) of (N, C, inner).
  void log_softmax(const float* x, float* out) const {
    const std::int64_t c_count = geometry_.classes, inner = geometry_.inner;
    for (std::int64_t n = 0; n < geometry_.batch; ++n)
      for (std::int64_t d = 0; d < inner; ++d) {
        const float* base = x + n * c_count * inner + d;
        float max = base[0];
        for (std::int64_t c = 1; c < c_count; ++c) max = std::max(max, base[c * inner]);
        double sum = 0.0;
        for (std::int64_t c = 0; c < c_count; ++c) sum += std::exp(static_cast<double>(base[c * inner] - max));
        const float log_sum = static_cast<float>(std::log(sum));
        for (std::int64_t c = 0; c < c_count; ++c) out[(n * c_count + c) * inner + d] = base[c * inner] - max - log_sum;
      }
  }

  bool softmax_ = false, has_weight_ = false, has_log_prob_ = false;
  DType target_dtype_ = DType::i64;
  graph::LossGeometry geometry_;
};

}  // namespace

std::unique_ptr<OpKernel> make_loss_kernel(const KernelSpec& spec) { return std::make_unique<LossKernel>(spec); }

}  // namespace loom::backend::cpu
