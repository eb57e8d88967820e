// 2-D max and average pooling with explicit pads and ceil_mode, and global average pooling.
// Windows are clipped to the input, so padding never enters a max and only counts towards an
// average's divisor when count_include_pad is set.
#include "backend/cpu/pool.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"

namespace loom::backend::cpu {
namespace {

// One spatial axis of a pooling window: output o covers input [o * stride - pad_begin, + kernel).
struct PoolAxis {
  std::int64_t input = 0;
  std::int64_t output = 0;
  std::int64_t kernel = 1;
  std::int64_t stride = 1;
  std::int64_t pad_begin = 0;
  std::int64_t pad_end = 0;
};

// Output length per ONNX: floor or ceil of (input + pads - kernel) / stride + 1; with ceil_mode a
// window that would start past the input and its leading pad is dropped (as current ONNX and
// PyTorch do), so every window holds at least one input element.
std::int64_t pooled_length(const PoolAxis& axis, bool ceil_mode) {
  const std::int64_t room = axis.input + axis.pad_begin + axis.pad_end - axis.kernel;
  if (!ceil_mode) return room / axis.stride + 1;
  std::int64_t length = (room + axis.stride - 1) / axis.stride + 1;
  if ((length - 1) * axis.stride >= axis.input + axis.pad_begin) --length;
  return length;
}

enum class PoolKind { max, average };

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const KernelSpec& spec, PoolKind kind) : OpKernel(spec), kind_(kind) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);  // MaxPool's Indices output is not supported
    require_present(spec, 0, "X");
    require_f32(spec);
    const Attributes& attrs = spec.node->attrs;
    const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET") throw_unsupported(spec, "auto_pad='" + auto_pad + "' (only NOTSET; give explicit pads)");
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() != 4) throw_unsupported(spec, "only 2-D pooling (X rank 4), got X " + x.to_string());
    if (!attrs.has("kernel_shape")) throw_bad_shape(spec, "kernel_shape is required");
    const auto kernel = attrs.get_ints("kernel_shape");
    const auto strides = attrs.get_ints("strides", {1, 1});
    const auto pads = attrs.get_ints("pads", {0, 0, 0, 0});
    const auto dilations = attrs.get_ints("dilations", {1, 1});
    if (kernel.size() != 2 || strides.size() != 2 || pads.size() != 4 || dilations.size() != 2)
      throw_unsupported(spec, "kernel_shape, strides, dilations need 2 values and pads 4 (2-D pooling only)");
    if (dilations[0] != 1 || dilations[1] != 1) throw_unsupported(spec, "dilations other than 1");
    const bool ceil_mode = attrs.get_int("ceil_mode", 0) != 0;
    count_include_pad_ = attrs.get_int("count_include_pad", 0) != 0;
    planes_ = x[0] * x[1];
    for (int i = 0; i < 2; ++i) {
      PoolAxis& axis = i == 0 ? rows_ : cols_;
      axis.input = x[2 + i];
      axis.kernel = kernel[i];
      axis.stride = strides[i];
      axis.pad_begin = pads[i];
      axis.pad_end = pads[2 + i];
      if (axis.kernel < 1 || axis.stride < 1)
        throw_unsupported(spec, "kernel_shape and strides must be >= 1");
      // A pad as large as the kernel would allow windows holding only padding.
      if (axis.pad_begin < 0 || axis.pad_end < 0 || axis.pad_begin >= axis.kernel || axis.pad_end >= axis.kernel)
        throw_unsupported(spec, "pads must be >= 0 and smaller than kernel_shape");
      if (axis.input + axis.pad_begin + axis.pad_end < axis.kernel)
        throw_bad_shape(spec, "kernel larger than the padded input " + x.to_string());
      axis.output = pooled_length(axis, ceil_mode);
    }
    require_shape(spec, spec.outputs[0].shape, Shape{x[0], x[1], rows_.output, cols_.output}, "output Y");
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    for (std::int64_t plane = 0; plane < planes_; ++plane) {
      const float* in = x + plane * rows_.input * cols_.input;
      float* out = y + plane * rows_.output * cols_.output;
      for (std::int64_t oh = 0; oh < rows_.output; ++oh) {
        const std::int64_t h0 = oh * rows_.stride - rows_.pad_begin;
        const std::int64_t h_begin = std::max<std::int64_t>(h0, 0);
        const std::int64_t h_end = std::min(h0 + rows_.kernel, rows_.input);
        const std::int64_t padded_rows = std::min(h0 + rows_.kernel, rows_.input + rows_.pad_end) - h0;
        for (std::int64_t ow = 0; ow < cols_.output; ++ow) {
          const std::int64_t w0 = ow * cols_.stride - cols_.pad_begin;
          const std::int64_t w_begin = std::max<std::int64_t>(w0, 0);
          const std::int64_t w_end = std::min(w0 + cols_.kernel, cols_.input);
          float result;
          if (kind_ == PoolKind::max) {
            result = -std::numeric_limits<float>::infinity();
            for (std::int64_t h = h_begin; h < h_end; ++h)
              for (std::int64_t w = w_begin; w < w_end; ++w) result = std::max(result, in[h * cols_.input + w]);
          } else {
            float sum = 0.0f;
            for (std::int64_t h = h_begin; h < h_end; ++h)
              for (std::int64_t w = w_begin; w < w_end; ++w) sum += in[h * cols_.input + w];
            const std::int64_t count =
                count_include_pad_
                    ? padded_rows * (std::min(w0 + cols_.kernel, cols_.input + cols_.pad_end) - w0)
                    : (h_end - h_begin) * (w_end - w_begin);
            result = sum / static_cast<float>(count);
          }
          out[oh * cols_.output + ow] = result;
        }
      }
    }
  }

 private:
  PoolKind kind_;
  bool count_include_pad_ = false;
  std::int64_t planes_ = 0;
  PoolAxis rows_;
  PoolAxis cols_;
};

class GlobalAveragePoolKernel final : public OpKernel {
 public:
  explicit GlobalAveragePoolKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 3) throw_bad_shape(spec, "X must have rank >= 3, got " + x.to_string());
    std::vector<std::int64_t> expected(x.rank(), 1);
    expected[0] = x[0];
    expected[1] = x[1];
    require_shape(spec, spec.outputs[0].shape, Shape(expected), "output Y");
    planes_ = x[0] * x[1];
    plane_size_ = product(x.dims(), 2, x.rank());
    if (plane_size_ == 0) throw_bad_shape(spec, "empty spatial dims in X " + x.to_string());
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    for (std::int64_t plane = 0; plane < planes_; ++plane) {
      const float* in = x + plane * plane_size_;
      float sum = 0.0f;
      for (std::int64_t i = 0; i < plane_size_; ++i) sum += in[i];
      y[plane] = sum / static_cast<float>(plane_size_);
    }
  }

 private:
  std::int64_t planes_ = 0;
  std::int64_t plane_size_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_max_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<PoolKernel>(spec, PoolKind::max);
}
std::unique_ptr<OpKernel> make_average_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<PoolKernel>(spec, PoolKind::average);
}
std::unique_ptr<OpKernel> make_global_average_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<GlobalAveragePoolKernel>(spec);
}

}  // namespace loom::backend::cpu
