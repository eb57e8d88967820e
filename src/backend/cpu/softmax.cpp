// Softmax, LogSoftmax and Hardmax along one axis (opset 13 semantics): exp(x - max) / sum and
// x - max - log(sum), the max subtracted so exp never overflows; Hardmax marks the first maximum.
#include "backend/cpu/softmax.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

class SoftmaxKernel final : public OpKernel {
 public:
  explicit SoftmaxKernel(const KernelSpec& spec)
      : OpKernel(spec), log_(spec.node->op_type == "LogSoftmax"), hard_(spec.node->op_type == "Hardmax") {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "input");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    require_shape(spec, spec.outputs[0].shape, x, "output");
    const std::int64_t rank = static_cast<std::int64_t>(x.rank());
    if (rank == 0) throw_bad_shape(spec, "input must have rank >= 1");
    const auto axis = static_cast<std::size_t>(normalize_axis(spec, spec.node->attrs.get_int("axis", -1), rank));
    outer_ = product(x.dims(), 0, axis);
    length_ = x[axis];
    inner_ = product(x.dims(), axis + 1, x.rank());
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    // The kernel's threads take runs of outer indices.
    parallel_for(outer_, std::max<std::int64_t>(1, kChunkElements / std::max<std::int64_t>(length_ * inner_, 1)),
                 [&](std::int64_t begin, std::int64_t end) { run_outer(x, y, begin, end); });
  }

 private:
  // Elements worth a thread of their own (an exp each).
  static constexpr std::int64_t kChunkElements = std::int64_t{1} << 13;

  // Outer indices [outer_begin, outer_end). Elements along the axis are `inner_` apart; each
  // (outer, inner) pair is one softmax.
  void run_outer(const float* x, float* y, std::int64_t outer_begin, std::int64_t outer_end) const {
    for (std::int64_t o = outer_begin; o < outer_end; ++o) {
      for (std::int64_t i = 0; i < inner_; ++i) {
        const float* in = x + o * length_ * inner_ + i;
        float* out = y + o * length_ * inner_ + i;
        if (hard_) {
          // Hardmax: 1 at the first largest element, 0 elsewhere.
          std::int64_t best = 0;
          for (std::int64_t k = 1; k < length_; ++k)
            if (in[k * inner_] > in[best * inner_]) best = k;
          for (std::int64_t k = 0; k < length_; ++k) out[k * inner_] = k == best ? 1.0f : 0.0f;
          continue;
        }
        float max_value = -std::numeric_limits<float>::infinity();
        for (std::int64_t k = 0; k < length_; ++k) max_value = std::max(max_value, in[k * inner_]);
        // The sum in double: the CUDA kernels are compared against this.
        double sum = 0.0;
        if (log_) {
          for (std::int64_t k = 0; k < length_; ++k) sum += std::exp(static_cast<double>(in[k * inner_] - max_value));
          const float log_sum = static_cast<float>(std::log(sum));
          for (std::int64_t k = 0; k < length_; ++k) out[k * inner_] = (in[k * inner_] - max_value) - log_sum;
          continue;
        }
        for (std::int64_t k = 0; k < length_; ++k) {
          const float e = std::exp(in[k * inner_] - max_value);
          out[k * inner_] = e;
          sum += e;
        }
        const float inv_sum = static_cast<float>(1.0 / sum);
        for (std::int64_t k = 0; k < length_; ++k) out[k * inner_] *= inv_sum;
      }
    }
  }

  bool log_, hard_;
  std::int64_t outer_ = 0, length_ = 0, inner_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_softmax_kernel(const KernelSpec& spec) { return std::make_unique<SoftmaxKernel>(spec); }

}  // namespace loom::backend::cpu
