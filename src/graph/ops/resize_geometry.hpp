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

}  // namespace loom::graph
