// RoiAlign (avg) as onnxruntime computes it: each output bin averages a grid of bilinear samples
// (sampling_ratio per axis, or ceil(roi extent / output extent) when 0); samples more than one
// pixel outside the image count as 0, others clamp to the border.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/pool.hpp"
#include "graph/ops/resize_geometry.hpp"

namespace loom::backend::cpu {
namespace {

class RoiAlignKernel final : public OpKernel {
 public:
  explicit RoiAlignKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 3, 3);
    require_output_count(spec, 1, 1);
    for (std::size_t i = 0; i < 3; ++i) require_present(spec, i, i == 0 ? "X" : i == 1 ? "rois" : "batch_indices");
    require_dtype(spec, spec.inputs[0], DType::f32, "X");
    require_dtype(spec, spec.inputs[1], DType::f32, "rois");
    require_dtype(spec, spec.inputs[2], DType::i64, "batch_indices");
    const Shape& x = spec.inputs[0].shape;
    const Shape& rois = spec.inputs[1].shape;
    if (x.rank() != 4 || rois.rank() != 2 || rois[1] != 4)
      throw_bad_shape(spec,
                      "expects X (N, C, H, W) and rois (R, 4), got " + x.to_string() + " and " + rois.to_string());
    require_shape(spec, spec.inputs[2].shape, Shape{rois[0]}, "batch_indices");
    attrs_ = parse_for_node(spec, [&] { return graph::roi_align_attrs(spec.node->attrs); });
    require_dtype(spec, spec.outputs[0], DType::f32, "output");
    require_shape(spec, spec.outputs[0].shape, Shape{rois[0], x[1], attrs_.output_height, attrs_.output_width},
                  "output");
    batch_ = x[0], channels_ = x[1], height_ = x[2], width_ = x[3], roi_count_ = rois[0];
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    const auto* rois = static_cast<const float*>(inputs[1]);
    const auto* batch_indices = static_cast<const std::int64_t*>(inputs[2]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t out_h = attrs_.output_height, out_w = attrs_.output_width;
    const float offset = attrs_.half_pixel ? 0.5f : 0.0f;
    for (std::int64_t r = 0; r < roi_count_; ++r) {
      const std::int64_t n = batch_indices[r];
      if (n < 0 || n >= batch_)
        throw Error(ErrorCode::invalid_argument, "RoiAlign node '" + node_name() + "': batch index " +
                                                     std::to_string(n) + " is out of range for batch " +
                                                     std::to_string(batch_));
      const float* roi = rois + r * 4;
      const float start_w = roi[0] * attrs_.spatial_scale - offset, start_h = roi[1] * attrs_.spatial_scale - offset;
      float roi_w = roi[2] * attrs_.spatial_scale - offset - start_w;
      float roi_h = roi[3] * attrs_.spatial_scale - offset - start_h;
      if (!attrs_.half_pixel) roi_w = std::max(roi_w, 1.0f), roi_h = std::max(roi_h, 1.0f);
      const float bin_h = roi_h / static_cast<float>(out_h), bin_w = roi_w / static_cast<float>(out_w);
      const std::int64_t grid_h = attrs_.sampling_ratio > 0
                                      ? attrs_.sampling_ratio
                                      : static_cast<std::int64_t>(std::ceil(roi_h / static_cast<float>(out_h)));
      const std::int64_t grid_w = attrs_.sampling_ratio > 0
                                      ? attrs_.sampling_ratio
                                      : static_cast<std::int64_t>(std::ceil(roi_w / static_cast<float>(out_w)));
      const float count = static_cast<float>(std::max<std::int64_t>(grid_h * grid_w, 1));
      for (std::int64_t c = 0; c < channels_; ++c) {
        const float* plane = x + (n * channels_ + c) * height_ * width_;
        for (std::int64_t ph = 0; ph < out_h; ++ph)
          for (std::int64_t pw = 0; pw < out_w; ++pw) {
            float sum = 0.0f;
            for (std::int64_t iy = 0; iy < grid_h; ++iy) {
              const float sy = start_h + static_cast<float>(ph) * bin_h +
                               (static_cast<float>(iy) + 0.5f) * bin_h / static_cast<float>(grid_h);
              for (std::int64_t ix = 0; ix < grid_w; ++ix) {
                const float sx = start_w + static_cast<float>(pw) * bin_w +
                                 (static_cast<float>(ix) + 0.5f) * bin_w / static_cast<float>(grid_w);
                sum += bilinear(plane, sy, sx);
              }
            }
            y[((r * channels_ + c) * out_h + ph) * out_w + pw] = sum / count;
          }
      }
    }
  }

 private:
  float bilinear(const float* plane, float y, float x) const {
    if (y < -1.0f || y > static_cast<float>(height_) || x < -1.0f || x > static_cast<float>(width_)) return 0.0f;
    y = std::max(y, 0.0f);
    x = std::max(x, 0.0f);
    auto y_low = static_cast<std::int64_t>(y), x_low = static_cast<std::int64_t>(x);
    std::int64_t y_high = y_low + 1, x_high = x_low + 1;
    if (y_low >= height_ - 1) y_high = y_low = height_ - 1, y = static_cast<float>(y_low);
    if (x_low >= width_ - 1) x_high = x_low = width_ - 1, x = static_cast<float>(x_low);
    const float ly = y - static_cast<float>(y_low), lx = x - static_cast<float>(x_low);
    const float hy = 1.0f - ly, hx = 1.0f - lx;
    return hy * hx * plane[y_low * width_ + x_low] + hy * lx * plane[y_low * width_ + x_high] +
           ly * hx * plane[y_high * width_ + x_low] + ly * lx * plane[y_high * width_ + x_high];
  }

  graph::RoiAlignAttrs attrs_;
  std::int64_t batch_ = 0, channels_ = 0, height_ = 0, width_ = 0, roi_count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_roi_align_kernel(const KernelSpec& spec) {
  return std::make_unique<RoiAlignKernel>(spec);
}

}  // namespace loom::backend::cpu
