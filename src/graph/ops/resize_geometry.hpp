// Resize's output extents and coordinate mapping (ONNX opset 11-19 forms), shared by shape
// inference and the kernels of every backend so they agree on every index and weight.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

enum class ResizeMode { nearest, linear, cubic };

// One axis: output index o reads input indices index[o * taps + t] with weights weight[o * taps +
// t], t < taps (1 for nearest and untouched axes, 2 for linear, 4 for cubic). Indices are already
// clamped into the input; the value is the product of the per-axis weights summed over all taps.
struct ResizeAxisMap {
  int taps = 1;
  std::vector<std::int64_t> index;
  std::vector<float> weight;
};

struct ResizePlan {
  ResizeMode mode = ResizeMode::nearest;
  std::vector<std::int64_t> output;  // output dims, one per axis of X
  std::vector<ResizeAxisMap> axes;   // one per axis of X (single-tap identity on untouched axes)
};

// Output dims from `scales` (floor(input * scale)) or `sizes`; an empty scales tensor counts as
// absent (opset 11 passes one with sizes). Throws Error(unsupported|shape_mismatch|invalid_model).
std::vector<std::int64_t> resize_output_dims(const Shape& x, const Tensor* scales, const Tensor* sizes);

// The whole mapping for Resize attributes `attrs`: mode nearest, linear or cubic (cubic_coeff_a,
// exclude_outside); coordinate transformation half_pixel, half_pixel_symmetric, asymmetric,
// align_corners, pytorch_half_pixel, tf_half_pixel_for_nn; nearest_mode round_prefer_floor,
// round_prefer_ceil, floor, ceil. tf_crop_and_resize, antialias, axes and keep_aspect_ratio_policy
// other than stretch throw Error(unsupported). Coordinates and weights are computed in double, as
// the ONNX reference does; neighbours outside the input take the edge value.
ResizePlan plan_resize(const Attributes& attrs, const Shape& x, const Tensor* scales, const Tensor* sizes);

// GridSample (opset 16): mode bilinear (default), nearest or bicubic; padding_mode zeros
// (default), border or reflection; align_corners. Throws Error(invalid_model) for another value.
enum class GridSampleMode { bilinear, nearest, bicubic };
enum class GridSamplePadding { zeros, border, reflection };
struct GridSampleAttrs {
  GridSampleMode mode = GridSampleMode::bilinear;
  GridSamplePadding padding = GridSamplePadding::zeros;
  bool align_corners = false;
};
GridSampleAttrs grid_sample_attrs(const Attributes& attrs);

// RoiAlign (opset 16): coordinate_transformation_mode half_pixel (default) or output_half_pixel,
// mode avg (max is not supported: Error(unsupported)), output_height/width (default 1),
// sampling_ratio (0: adaptive), spatial_scale. Throws Error(invalid_model) for other values.
struct RoiAlignAttrs {
  bool half_pixel = true;
  std::int64_t output_height = 1, output_width = 1, sampling_ratio = 0;
  float spatial_scale = 1.0f;
};
RoiAlignAttrs roi_align_attrs(const Attributes& attrs);

}  // namespace loom::graph
