// MaxUnpool: a zero tensor with each X value written at its index in I, which counts over the whole
// flattened tensor of the default output shape (as MaxPool's Indices output does); with
// output_shape, each value keeps its coordinates from that default shape.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/pool.hpp"
#include "graph/ops/conv_window.hpp"

namespace loom::backend::cpu {
namespace {

class MaxUnpoolKernel final : public OpKernel {
 public:
  explicit MaxUnpoolKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 3);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_present(spec, 1, "I");
    require_dtype(spec, spec.inputs[0], DType::f32, "X");
    require_dtype(spec, spec.inputs[1], DType::i64, "I");
    require_shape(spec, spec.inputs[1].shape, spec.inputs[0].shape, "I");
    std::optional<std::vector<std::int64_t>> output_shape;
    if (spec.inputs.size() > 2 && spec.inputs[2].present) output_shape = constant_ints(spec, 2, "output_shape");
    const Shape expected(parse_for_node(spec, [&] {
      return graph::max_unpool_shape(spec.node->attrs, spec.inputs[0].shape, output_shape ? &*output_shape : nullptr);
    }));
    require_dtype(spec, spec.outputs[0], DType::f32, "output");
    require_shape(spec, spec.outputs[0].shape, expected, "output");
    default_dims_ =
        parse_for_node(spec, [&] { return graph::max_unpool_shape(spec.node->attrs, spec.inputs[0].shape, nullptr); });
    out_dims_ = expected.dims();
    count_ = spec.inputs[0].shape.numel();
    out_count_ = expected.numel();
    default_count_ = Shape(default_dims_).numel();
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* indices = static_cast<const std::int64_t*>(inputs[1]);
    for (std::int64_t i = 0; i < count_; ++i)
      if (indices[i] < 0 || indices[i] >= default_count_)
        throw Error(ErrorCode::invalid_argument,
                    "MaxUnpool node '" + node_name() + "': index " + std::to_string(indices[i]) + " at position " +
                        std::to_string(i) + " is outside the unpooled " + std::to_string(default_count_) + " elements");
    auto* y = static_cast<float*>(outputs[0]);
    std::fill(y, y + out_count_, 0.0f);
    for (std::int64_t i = 0; i < count_; ++i) {
      // The index's coordinates in the default shape, placed at the same coordinates of the output.
      std::int64_t rest = indices[i], offset = 0, stride = 1;
      bool inside = true;
      for (std::size_t d = default_dims_.size(); d-- > 0;) {
        const std::int64_t coordinate = rest % default_dims_[d];
        rest /= default_dims_[d];
        inside = inside && coordinate < out_dims_[d];
        offset += coordinate * stride;
        stride *= out_dims_[d];
      }
      if (inside) y[offset] = x[i];
    }
  }

 private:
  std::vector<std::int64_t> default_dims_, out_dims_;
  std::int64_t count_ = 0, out_count_ = 0, default_count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_max_unpool_kernel(const KernelSpec& spec) {
  return std::make_unique<MaxUnpoolKernel>(spec);
}

}  // namespace loom::backend::cpu
