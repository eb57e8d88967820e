// GridSample (opset 16) on 4-D input, following PyTorch's grid_sample (which the ONNX op and its
// node tests follow): normalised grid coordinates are mapped to pixels (align_corners or not),
// border and reflection padding move the coordinate inside the image, zeros padding reads 0
// outside it; bicubic uses A = -0.75 on the 4x4 neighbourhood, padding each tap's index.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/pad.hpp"
#include "graph/ops/resize_geometry.hpp"

namespace loom::backend::cpu {
namespace {

using graph::GridSampleMode;
using graph::GridSamplePadding;

class GridSampleKernel final : public OpKernel {
 public:
  explicit GridSampleKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_present(spec, 1, "grid");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    const Shape& grid = spec.inputs[1].shape;
    if (x.rank() != 4 || grid.rank() != 4 || grid[0] != x[0] || grid[3] != 2)
      throw_bad_shape(spec, "expects X (N, C, H, W) and grid (N, H_out, W_out, 2), got " + x.to_string() + " and " +
                                grid.to_string());
    require_shape(spec, spec.outputs[0].shape, Shape{x[0], x[1], grid[1], grid[2]}, "output");
    attrs_ = parse_for_node(spec, [&] { return graph::grid_sample_attrs(spec.node->attrs); });
    batch_ = x[0], channels_ = x[1], height_ = x[2], width_ = x[3], out_h_ = grid[1], out_w_ = grid[2];
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* grid = static_cast<const float*>(inputs[1]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t out_plane = out_h_ * out_w_;
    for (std::int64_t n = 0; n < batch_; ++n)
      for (std::int64_t p = 0; p < out_plane; ++p) {
        const float* g = grid + (n * out_plane + p) * 2;
        for (std::int64_t c = 0; c < channels_; ++c) {
          const float* plane = x + (n * channels_ + c) * height_ * width_;
          y[(n * channels_ + c) * out_plane + p] = sample(plane, g[0], g[1]);
        }
      }
  }

 private:
  double unnormalize(double coord, std::int64_t size) const {
    return attrs_.align_corners ? (coord + 1.0) / 2.0 * static_cast<double>(size - 1)
                                : ((coord + 1.0) * static_cast<double>(size) - 1.0) / 2.0;
  }

  static double reflect(double v, double twice_low, double twice_high) {
    if (twice_low == twice_high) return 0.0;
    const double low = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
    v = std::fabs(v - low);
    const double extra = std::fmod(v, span);
    const auto flips = static_cast<std::int64_t>(std::floor(v / span));
    return flips % 2 == 0 ? extra + low : span - extra + low;
  }

  // Border and reflection padding move a coordinate inside [0, size - 1]; zeros leaves it.
  double pad_coordinate(double v, std::int64_t size) const {
    const double last = static_cast<double>(size - 1);
    if (attrs_.padding == GridSamplePadding::border) return std::clamp(v, 0.0, last);
    if (attrs_.padding == GridSamplePadding::reflection) {
      v = attrs_.align_corners ? reflect(v, 0.0, 2.0 * last) : reflect(v, -1.0, 2.0 * static_cast<double>(size) - 1.0);
      return std::clamp(v, 0.0, last);
    }
    return v;
  }

  double pixel(const float* plane, std::int64_t ix, std::int64_t iy) const {
    if (ix < 0 || ix >= width_ || iy < 0 || iy >= height_) return 0.0;
    return plane[iy * width_ + ix];
  }

  // Bicubic taps pad their integer index the way the coordinate is padded.
  double padded_pixel(const float* plane, std::int64_t ix, std::int64_t iy) const {
    const auto px = static_cast<std::int64_t>(pad_coordinate(static_cast<double>(ix), width_));
    const auto py = static_cast<std::int64_t>(pad_coordinate(static_cast<double>(iy), height_));
    return pixel(plane, px, py);
  }

  static void cubic_weights(double t, double w[4]) {
    constexpr double a = -0.75;
    const auto near = [](double v) { return ((a + 2.0) * v - (a + 3.0)) * v * v + 1.0; };
    const auto far = [](double v) { return ((a * v - 5.0 * a) * v + 8.0 * a) * v - 4.0 * a; };
    w[0] = far(t + 1.0), w[1] = near(t), w[2] = near(1.0 - t), w[3] = far(2.0 - t);
  }

  float sample(const float* plane, float gx, float gy) const {
    double ix = unnormalize(gx, width_), iy = unnormalize(gy, height_);
    if (attrs_.mode == GridSampleMode::bicubic) {
      const double fx = std::floor(ix), fy = std::floor(iy);
      double wx[4], wy[4];
      cubic_weights(ix - fx, wx);
      cubic_weights(iy - fy, wy);
      double sum = 0.0;
      for (int j = 0; j < 4; ++j)
        for (int i = 0; i < 4; ++i)
          sum += wx[i] * wy[j] *
                 padded_pixel(plane, static_cast<std::int64_t>(fx) - 1 + i, static_cast<std::int64_t>(fy) - 1 + j);
      return static_cast<float>(sum);
    }
    ix = pad_coordinate(ix, width_);
    iy = pad_coordinate(iy, height_);
    if (attrs_.mode == GridSampleMode::nearest)
      return static_cast<float>(
          pixel(plane, static_cast<std::int64_t>(std::nearbyint(ix)), static_cast<std::int64_t>(std::nearbyint(iy))));
    const double fx = std::floor(ix), fy = std::floor(iy);
    const double tx = ix - fx, ty = iy - fy;
    const auto x0 = static_cast<std::int64_t>(fx), y0 = static_cast<std::int64_t>(fy);
    return static_cast<float>(pixel(plane, x0, y0) * (1 - tx) * (1 - ty) + pixel(plane, x0 + 1, y0) * tx * (1 - ty) +
                              pixel(plane, x0, y0 + 1) * (1 - tx) * ty + pixel(plane, x0 + 1, y0 + 1) * tx * ty);
  }

  graph::GridSampleAttrs attrs_;
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, out_h_ = 0, out_w_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_grid_sample_kernel(const KernelSpec& spec) {
  return std::make_unique<GridSampleKernel>(spec);
}

}  // namespace loom::backend::cpu
