// Resize (nearest, linear, cubic over any axes) from the shared plan: every output element sums
// its neighbours over all axes' taps, each weighted by the product of the per-axis weights; where
// every axis has one tap (nearest) the output is a plain gather, row by row.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"
#include "backend/cpu/pad.hpp"

namespace loom::backend::cpu {
namespace {

class ResizeKernel final : public OpKernel {
 public:
  explicit ResizeKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 4);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    if (spec.inputs[0].dtype != DType::f32 || spec.outputs[0].dtype != DType::f32)
      throw_unsupported(spec, "X of dtype " + std::string(dtype_name(spec.inputs[0].dtype)) +
                                  " (the CPU backend computes Resize in f32 only)");
    plan_ = parse_resize(spec);
    input_ = spec.inputs[0].shape.dims();
    in_strides_.assign(input_.size(), 1);
    for (std::size_t a = input_.size(); a-- > 1;) in_strides_[a - 1] = in_strides_[a] * input_[a];
    for (std::size_t a = 0; a < input_.size(); ++a)
      if (plan_.axes[a].taps > 1) multi_tap_axes_.push_back(a);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const std::int64_t total = product(plan_.output, 0, plan_.output.size());
    if (total == 0) return;
    if (multi_tap_axes_.empty() && !plan_.output.empty()) {
      const std::int64_t inner = plan_.output.back();
      parallel_for(total / inner, std::max<std::int64_t>(1, kChunkElements / inner),
                   [&](std::int64_t begin, std::int64_t end) { gather(x, y, begin, end); });
      return;
    }
    parallel_for(total, kChunkElements, [&](std::int64_t begin, std::int64_t end) { resize(x, y, begin, end); });
  }

 private:
  // Output elements below which Resize stays on one thread.
  static constexpr std::int64_t kChunkElements = std::int64_t{1} << 14;

  // Output elements [begin, end).
  void resize(const float* x, float* y, std::int64_t begin, std::int64_t end) const {
    const std::size_t rank = plan_.output.size();
    std::vector<std::int64_t> index(rank, 0);
    for (std::size_t a = rank, rest = static_cast<std::size_t>(begin); a-- > 0;) {
      index[a] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(plan_.output[a]));
      rest /= static_cast<std::size_t>(plan_.output[a]);
    }
    std::vector<int> tap(multi_tap_axes_.size(), 0);
    for (std::int64_t i = begin; i < end; ++i) {
      // Single-tap axes fix part of the offset; the others are walked with an odometer over taps.
      std::int64_t base = 0;
      for (std::size_t a = 0; a < rank; ++a)
        if (plan_.axes[a].taps == 1) base += plan_.axes[a].index[static_cast<std::size_t>(index[a])] * in_strides_[a];
      float value = 0.0f;
      for (;;) {
        std::int64_t offset = base;
        float weight = 1.0f;
        for (std::size_t j = 0; j < multi_tap_axes_.size(); ++j) {
          const graph::ResizeAxisMap& map = plan_.axes[multi_tap_axes_[j]];
          const std::size_t k = static_cast<std::size_t>(index[multi_tap_axes_[j]] * map.taps + tap[j]);
          offset += map.index[k] * in_strides_[multi_tap_axes_[j]];
          weight *= map.weight[k];
        }
        value += weight * x[offset];
        std::size_t j = multi_tap_axes_.size();
        while (j > 0 && ++tap[j - 1] == plan_.axes[multi_tap_axes_[j - 1]].taps) tap[--j] = 0;
        if (j == 0) break;
      }
      y[i] = value;
      for (std::size_t a = rank; a-- > 0;) {
        if (++index[a] < plan_.output[a]) break;
        index[a] = 0;
      }
    }
  }

  // Every axis reads one input element (nearest, or an identity): each output row is a gather from
  // one input row, copied as it is. Output rows [begin, end).
  void gather(const float* x, float* y, std::int64_t begin, std::int64_t end) const {
    const std::size_t rank = plan_.output.size();
    const std::int64_t inner = plan_.output[rank - 1];
    const std::vector<std::int64_t>& columns = plan_.axes[rank - 1].index;
    std::vector<std::int64_t> index(rank - 1, 0);
    for (std::size_t a = rank - 1, rest = static_cast<std::size_t>(begin); a-- > 0;) {
      index[a] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(plan_.output[a]));
      rest /= static_cast<std::size_t>(plan_.output[a]);
    }
    for (std::int64_t row = begin; row < end; ++row) {
      std::int64_t base = 0;
      for (std::size_t a = 0; a + 1 < rank; ++a)
        base += plan_.axes[a].index[static_cast<std::size_t>(index[a])] * in_strides_[a];
      const float* in = x + base;
      float* out = y + row * inner;
      for (std::int64_t j = 0; j < inner; ++j) out[j] = in[columns[static_cast<std::size_t>(j)]];
      for (std::size_t a = rank - 1; a-- > 0;) {
        if (++index[a] < plan_.output[a]) break;
        index[a] = 0;
      }
    }
  }

  graph::ResizePlan plan_;
  std::vector<std::int64_t> input_, in_strides_;
  std::vector<std::size_t> multi_tap_axes_;  // axes with more than one tap
};

}  // namespace

std::unique_ptr<OpKernel> make_resize_kernel(const KernelSpec& spec) { return std::make_unique<ResizeKernel>(spec); }

}  // namespace loom::backend::cpu
