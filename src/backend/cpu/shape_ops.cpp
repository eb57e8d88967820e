// Slice, Expand and Tile as one strided copy each; Split as row copies; the generators write a
// value fixed when the kernel is created (Range computes its elements from its inputs).
#include "backend/cpu/shape_ops.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/shape_strided_copy.hpp"
#include "backend/shape_spec.hpp"

namespace loom::backend::cpu {
namespace {

class StridedViewKernel final : public OpKernel {
 public:
  StridedViewKernel(const KernelSpec& spec, const StridedView& view)
      : OpKernel(spec),
        copy_(view.dims, view.src_strides, dtype_size(spec.inputs[0].dtype)),
        src_offset_bytes_(view.src_offset * static_cast<std::int64_t>(dtype_size(spec.inputs[0].dtype))) {}

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    if (copy_.count() == 0) return;
    copy_.run(static_cast<const std::byte*>(inputs[0]) + src_offset_bytes_, outputs[0]);
  }

 private:
  StridedCopy copy_;
  std::int64_t src_offset_bytes_;
};

class SplitKernel final : public OpKernel {
 public:
  explicit SplitKernel(const KernelSpec& spec) : OpKernel(spec) {
    const SplitSpec split = parse_split_spec(spec);
    const Shape& in = spec.inputs[0].shape;
    const std::size_t inner_bytes =
        static_cast<std::size_t>(product(in.dims(), split.axis + 1, in.rank())) * dtype_size(spec.inputs[0].dtype);
    outer_ = product(in.dims(), 0, split.axis);
    for (const auto size : split.sizes) chunk_bytes_.push_back(static_cast<std::size_t>(size) * inner_bytes);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* src = static_cast<const std::byte*>(inputs[0]);
    for_each_piece_run(outer_, chunk_bytes_,
                       [&](std::size_t i, std::size_t piece_offset, std::size_t packed_offset, std::size_t bytes) {
                         if (outputs[i])
                           std::memcpy(static_cast<std::byte*>(outputs[i]) + piece_offset, src + packed_offset, bytes);
                       });
  }

 private:
  std::int64_t outer_ = 0;
  std::vector<std::size_t> chunk_bytes_;  // bytes each output takes per outer index
};

// Writes a value fixed at creation: Constant and Shape.
class ValueKernel final : public OpKernel {
 public:
  ValueKernel(const KernelSpec& spec, Tensor value) : OpKernel(spec), value_(std::move(value)) {}

 protected:
  void run_impl(std::span<const void* const>, std::span<void* const> outputs, void*, Stream&) override {
    if (value_.bytes() > 0) std::memcpy(outputs[0], value_.data(), value_.bytes());
  }

 private:
  Tensor value_;
};

// ConstantOfShape: the output filled with one element.
class FillKernel final : public OpKernel {
 public:
  FillKernel(const KernelSpec& spec, Tensor element)
      : OpKernel(spec), element_(std::move(element)), count_(spec.outputs[0].shape.numel()) {}

 protected:
  void run_impl(std::span<const void* const>, std::span<void* const> outputs, void*, Stream&) override {
    auto* dst = static_cast<std::byte*>(outputs[0]);
    const std::size_t size = element_.bytes();
    for (std::int64_t i = 0; i < count_; ++i) std::memcpy(dst + i * size, element_.data(), size);
  }

 private:
  Tensor element_;
  std::int64_t count_;
};

class RangeKernel final : public OpKernel {
 public:
  explicit RangeKernel(const KernelSpec& spec) : OpKernel(spec) {
    check_range(spec);
    dtype_ = spec.outputs[0].dtype;
    count_ = spec.outputs[0].shape[0];
  }

 protected:
  // The CPU backend's buffers are host memory, so start and delta are read directly.
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    switch (dtype_) {
      case DType::f32:
        fill<float>(inputs, outputs[0]);
        break;
      case DType::i64:
        fill<std::int64_t>(inputs, outputs[0]);
        break;
      default:
        fill<std::int32_t>(inputs, outputs[0]);
        break;
    }
  }

 private:
  template <class T>
  void fill(std::span<const void* const> inputs, void* output) const {
    const T start = *static_cast<const T*>(inputs[0]);
    const T delta = *static_cast<const T*>(inputs[2]);
    auto* y = static_cast<T*>(output);
    for (std::int64_t i = 0; i < count_; ++i) y[i] = static_cast<T>(start + static_cast<T>(i) * delta);
  }

  DType dtype_ = DType::f32;
  std::int64_t count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_strided_view_kernel(const KernelSpec& spec) {
  const StridedView view = parse_strided_view(spec);
  return std::make_unique<StridedViewKernel>(spec, view);
}
std::unique_ptr<OpKernel> make_split_kernel(const KernelSpec& spec) { return std::make_unique<SplitKernel>(spec); }
std::unique_ptr<OpKernel> make_shape_kernel(const KernelSpec& spec) {
  return std::make_unique<ValueKernel>(spec, parse_shape_value(spec));
}
std::unique_ptr<OpKernel> make_size_kernel(const KernelSpec& spec) {
  require_input_count(spec, 1, 1);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "data");
  require_dtype(spec, spec.outputs[0], DType::i64, "output");
  require_shape(spec, spec.outputs[0].shape, Shape{}, "output");
  const std::int64_t count = spec.inputs[0].shape.numel();
  return std::make_unique<ValueKernel>(spec, Tensor::from<std::int64_t>(Shape{}, {count}));
}
std::unique_ptr<OpKernel> make_constant_kernel(const KernelSpec& spec) {
  return std::make_unique<ValueKernel>(spec, parse_constant_value(spec));
}
std::unique_ptr<OpKernel> make_constant_of_shape_kernel(const KernelSpec& spec) {
  return std::make_unique<FillKernel>(spec, parse_fill_value(spec));
}
std::unique_ptr<OpKernel> make_range_kernel(const KernelSpec& spec) { return std::make_unique<RangeKernel>(spec); }

}  // namespace loom::backend::cpu
