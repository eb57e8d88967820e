// DFT and STFT: X_k = sum_n x_n e^(∓2πi kn/N) along one axis (the sign + and a 1/N scale for inverse); the
// signal is zero-padded or truncated to dft_length. Direct summation in double: the node tests and
// the short windows DFT is used on do not need an FFT.
#include "backend/cpu/dft.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <utility>

#include "backend/cpu/kernel_support.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::backend::cpu {
namespace {

constexpr double kPi = 3.14159265358979323846;

// out[k] (k < out_length) = scale * sum_{n < count} v(n) e^(sign 2πi kn/length), v(n) = (re, im) of
// sample n; written as (re, im) pairs `out_stride` floats apart.
template <class Sample>
void transform(Sample v, std::int64_t count, std::int64_t length, std::int64_t out_length, double sign, double scale,
               float* out, std::int64_t out_stride) {
  for (std::int64_t k = 0; k < out_length; ++k) {
    double re = 0.0, im = 0.0;
    for (std::int64_t n = 0; n < count; ++n) {
      const double angle = sign * 2.0 * kPi * static_cast<double>((k * n) % length) / static_cast<double>(length);
      const double c = std::cos(angle), s = std::sin(angle);
      const auto [a, b] = v(n);
      re += a * c - b * s;
      im += a * s + b * c;
    }
    out[k * out_stride] = static_cast<float>(re * scale);
    out[k * out_stride + 1] = static_cast<float>(im * scale);
  }
}

class DftKernel final : public OpKernel {
 public:
  explicit DftKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "input");
    require_dtype(spec, spec.inputs[0], DType::f32, "input");
    std::optional<std::int64_t> length;
    if (spec.inputs.size() > 1 && spec.inputs[1].present) {
      const auto values = constant_ints(spec, 1, "dft_length");
      if (values.size() != 1) throw_bad_shape(spec, "dft_length must be a scalar");
      length = values[0];
    }
    const Shape& x = spec.inputs[0].shape;
    const Shape expected(parse_for_node(spec, [&] { return graph::dft_output_dims(spec.node->attrs, x, length); }));
    require_dtype(spec, spec.outputs[0], DType::f32, "output");
    require_shape(spec, spec.outputs[0].shape, expected, "output");
    const auto axis = static_cast<std::size_t>(
        normalize_axis(spec, spec.node->attrs.get_int("axis", 1), static_cast<std::int64_t>(x.rank())));
    inverse_ = spec.node->attrs.get_int("inverse", 0) != 0;
    complex_in_ = x[x.rank() - 1] == 2;
    outer_ = product(x.dims(), 0, axis);
    in_length_ = x[axis];
    inner_ = product(x.dims(), axis + 1, x.rank() - 1);
    length_ = length.value_or(in_length_);
    out_length_ = expected[axis];
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t in_width = complex_in_ ? 2 : 1;
    const std::int64_t used = std::min(in_length_, length_);  // samples past dft_length are dropped
    const double sign = inverse_ ? 1.0 : -1.0;
    const double scale = inverse_ ? 1.0 / static_cast<double>(length_) : 1.0;
    for (std::int64_t o = 0; o < outer_; ++o)
      for (std::int64_t i = 0; i < inner_; ++i) {
        const auto sample = [&](std::int64_t n) {
          const float* v = x + ((o * in_length_ + n) * inner_ + i) * in_width;
          return std::pair<double, double>(v[0], complex_in_ ? v[1] : 0.0);
        };
        transform(sample, used, length_, out_length_, sign, scale, y + (o * out_length_ * inner_ + i) * 2, inner_ * 2);
      }
  }

 private:
  bool inverse_ = false, complex_in_ = false;
  std::int64_t outer_ = 0, in_length_ = 0, inner_ = 0, length_ = 0, out_length_ = 0;
};

// STFT: each frame (frame_step apart, times the window when there is one) transformed like DFT.
class StftKernel final : public OpKernel {
 public:
  explicit StftKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 4);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "signal");
    require_present(spec, 1, "frame_step");
    require_dtype(spec, spec.inputs[0], DType::f32, "signal");
    has_window_ = spec.inputs.size() > 2 && spec.inputs[2].present;
    std::optional<std::int64_t> window_length, frame_length;
    if (has_window_) {
      require_dtype(spec, spec.inputs[2], DType::f32, "window");
      if (spec.inputs[2].shape.rank() != 1) throw_bad_shape(spec, "window must be 1-D");
      window_length = spec.inputs[2].shape[0];
    }
    if (spec.inputs.size() > 3 && spec.inputs[3].present) {
      const auto values = constant_ints(spec, 3, "frame_length");
      if (values.size() != 1) throw_bad_shape(spec, "frame_length must be a scalar");
      frame_length = values[0];
    }
    const auto step = constant_ints(spec, 1, "frame_step");
    if (step.size() != 1) throw_bad_shape(spec, "frame_step must be a scalar");
    g_ = parse_for_node(spec, [&] {
      return graph::stft_geometry(spec.node->attrs, spec.inputs[0].shape, step[0], window_length, frame_length);
    });
    require_dtype(spec, spec.outputs[0], DType::f32, "output");
    require_shape(spec, spec.outputs[0].shape, Shape{g_.batch, g_.frames, g_.bins, 2}, "output");
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* window = has_window_ ? static_cast<const float*>(inputs[2]) : nullptr;
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t width = g_.complex_input ? 2 : 1;
    for (std::int64_t b = 0; b < g_.batch; ++b)
      for (std::int64_t f = 0; f < g_.frames; ++f) {
        const float* frame = x + (b * g_.length + f * g_.step) * width;
        const auto sample = [&](std::int64_t n) {
          const double w = window ? window[n] : 1.0;
          return std::pair<double, double>(frame[n * width] * w, g_.complex_input ? frame[n * width + 1] * w : 0.0);
        };
        transform(sample, g_.frame_length, g_.frame_length, g_.bins, -1.0, 1.0, y + ((b * g_.frames + f) * g_.bins) * 2,
                  2);
      }
  }

 private:
  bool has_window_ = false;
  graph::StftGeometry g_;
};

}  // namespace

std::unique_ptr<OpKernel> make_stft_kernel(const KernelSpec& spec) { return std::make_unique<StftKernel>(spec); }
std::unique_ptr<OpKernel> make_dft_kernel(const KernelSpec& spec) { return std::make_unique<DftKernel>(spec); }

}  // namespace loom::backend::cpu
