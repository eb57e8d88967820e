// Resize's coordinate mapping, computed once on the host.
#include "graph/ops/resize_geometry.hpp"

#include <algorithm>
#include <cmath>

#include "graph/op_support.hpp"

namespace loom::graph {
namespace {

bool present(const Tensor* t) { return t != nullptr && t->numel() > 0; }

// Output dims, the scale each coordinate transform divides by (output / input when `sizes` is
// given, as the spec says) and the unrounded output length input * scale (align_corners and
// pytorch_half_pixel use it, as the ONNX reference does).
void dims_and_scales(const Shape& x, const Tensor* scales, const Tensor* sizes, std::vector<std::int64_t>& dims,
                     std::vector<double>& scale, std::vector<double>& length) {
  const std::size_t rank = x.rank();
  dims.assign(rank, 0);
  scale.assign(rank, 1.0);
  length.assign(rank, 0.0);
  if (present(scales)) {
    if (present(sizes)) fail(ErrorCode::invalid_model, "Resize takes scales or sizes, not both");
    if (static_cast<std::size_t>(scales->numel()) != rank)
      fail(ErrorCode::shape_mismatch,
           "scales has " + std::to_string(scales->numel()) + " values for X " + x.to_string());
    const Tensor f = scales->to(DType::f32);
    const auto values = f.values<float>();
    for (std::size_t i = 0; i < rank; ++i) {
      if (!(values[i] > 0.0f))
        fail(ErrorCode::invalid_model, "scales must be positive, got " + std::to_string(values[i]));
      scale[i] = values[i];
      length[i] = static_cast<double>(x[i]) * scale[i];
      dims[i] = static_cast<std::int64_t>(std::floor(length[i]));
    }
    return;
  }
  if (!present(sizes)) fail(ErrorCode::invalid_model, "Resize needs scales or sizes");
  const std::vector<std::int64_t> values = constant_ints(*sizes, "sizes");
  if (values.size() != rank)
    fail(ErrorCode::shape_mismatch, "sizes has " + std::to_string(values.size()) + " values for X " + x.to_string());
  for (std::size_t i = 0; i < rank; ++i) {
    if (values[i] < 0) fail(ErrorCode::invalid_model, "sizes must not be negative");
    dims[i] = values[i];
    length[i] = static_cast<double>(values[i]);
    scale[i] = x[i] > 0 ? static_cast<double>(values[i]) / static_cast<double>(x[i]) : 1.0;
  }
}

}  // namespace

std::vector<std::int64_t> resize_output_dims(const Shape& x, const Tensor* scales, const Tensor* sizes) {
  std::vector<std::int64_t> dims;
  std::vector<double> scale, length;
  dims_and_scales(x, scales, sizes, dims, scale, length);
  return dims;
}

ResizePlan plan_resize(const Attributes& attrs, const Shape& x, const Tensor* scales, const Tensor* sizes) {
  const std::string mode = attrs.get_string("mode", "nearest");
  const std::string transform = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  const std::string nearest_mode = attrs.get_string("nearest_mode", "round_prefer_floor");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    fail(ErrorCode::invalid_model, "unknown mode '" + mode + "'");
  if (transform == "tf_crop_and_resize")
    fail(ErrorCode::unsupported, "coordinate_transformation_mode='tf_crop_and_resize'");
  if (transform != "half_pixel" && transform != "asymmetric" && transform != "align_corners" &&
      transform != "pytorch_half_pixel" && transform != "tf_half_pixel_for_nn" && transform != "half_pixel_symmetric")
    fail(ErrorCode::unsupported, "coordinate_transformation_mode='" + transform + "'");
  if (nearest_mode != "round_prefer_floor" && nearest_mode != "round_prefer_ceil" && nearest_mode != "floor" &&
      nearest_mode != "ceil")
    fail(ErrorCode::unsupported, "nearest_mode='" + nearest_mode + "'");
  if (attrs.get_int("antialias", 0) != 0) fail(ErrorCode::unsupported, "antialias=1");
  if (attrs.has("axes")) fail(ErrorCode::unsupported, "the axes attribute (opset 18)");
  if (attrs.get_string("keep_aspect_ratio_policy", "stretch") != "stretch")
    fail(ErrorCode::unsupported, "keep_aspect_ratio_policy other than 'stretch'");

  ResizePlan plan;
  plan.mode = mode == "linear" ? ResizeMode::linear : mode == "cubic" ? ResizeMode::cubic : ResizeMode::nearest;
  const double cubic_a = attrs.get_float("cubic_coeff_a", -0.75f);
  const bool exclude_outside = attrs.get_int("exclude_outside", 0) != 0;
  std::vector<double> scale, length;
  dims_and_scales(x, scales, sizes, plan.output, scale, length);
  const std::size_t rank = x.rank();
  plan.axes.resize(rank);
  for (std::size_t a = 0; a < rank; ++a) {
    const std::int64_t in = x[a], out = plan.output[a];
    const double s = scale[a], out_length = length[a];
    const bool resized = in != out || s != 1.0;
    ResizeAxisMap& map = plan.axes[a];
    map.taps = !resized || plan.mode == ResizeMode::nearest ? 1 : plan.mode == ResizeMode::linear ? 2 : 4;
    map.index.reserve(static_cast<std::size_t>(out * map.taps));
    map.weight.reserve(static_cast<std::size_t>(out * map.taps));
    for (std::int64_t o = 0; o < out; ++o) {
      double c;  // the output index's coordinate in the input
      if (!resized) {
        c = static_cast<double>(o);
      } else if (transform == "asymmetric") {
        c = o / s;
      } else if (transform == "align_corners") {
        c = out_length == 1.0 ? 0.0 : static_cast<double>(o) * static_cast<double>(in - 1) / (out_length - 1.0);
      } else if (transform == "pytorch_half_pixel") {
        c = out_length == 1.0 ? -0.5 : (o + 0.5) / s - 0.5;
      } else if (transform == "tf_half_pixel_for_nn") {
        c = (o + 0.5) / s;
      } else if (transform == "half_pixel_symmetric") {
        const double adjustment = static_cast<double>(out) / out_length;
        const double center = static_cast<double>(in) / 2.0;
        const double offset = center * (1.0 - adjustment);
        c = offset + (o + 0.5) / s - 0.5;
      } else {  // half_pixel
        c = (o + 0.5) / s - 0.5;
      }
      if (map.taps == 1) {
        double r = c;  // untouched axes: c is the index itself
        if (plan.mode != ResizeMode::nearest || !resized) {
        } else if (nearest_mode == "floor") {
          r = std::floor(c);
        } else if (nearest_mode == "ceil") {
          r = std::ceil(c);
        } else if (c == std::floor(c) + 0.5) {  // a tie
          r = nearest_mode == "round_prefer_ceil" ? std::ceil(c) : std::floor(c);
        } else {
          r = std::round(c);
        }
        map.index.push_back(std::clamp<std::int64_t>(static_cast<std::int64_t>(r), 0, in - 1));
        map.weight.push_back(1.0f);
        continue;
      }
      const double base = std::floor(c);
      const double t = c - base;  // in [0, 1)
      std::vector<std::int64_t> neighbours;
      std::vector<double> weights;
      if (map.taps == 2) {
        neighbours = {static_cast<std::int64_t>(base), static_cast<std::int64_t>(base) + 1};
        weights = {1.0 - t, t};
      } else {
        const double A = cubic_a;
        const auto near = [A](double d) { return ((A + 2) * d - (A + 3)) * d * d + 1; };       // |d| <= 1
        const auto far = [A](double d) { return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A; };  // 1 < |d| < 2
        const std::int64_t i0 = static_cast<std::int64_t>(base);
        neighbours = {i0 - 1, i0, i0 + 1, i0 + 2};
        weights = {far(t + 1), near(t), near(1 - t), far(2 - t)};
        if (exclude_outside) {
          double sum = 0;
          for (std::size_t k = 0; k < 4; ++k) {
            if (neighbours[k] < 0 || neighbours[k] >= in) weights[k] = 0;
            sum += weights[k];
          }
          for (double& w : weights) w = sum != 0 ? w / sum : 0;
        }
      }
      for (std::size_t k = 0; k < neighbours.size(); ++k) {
        map.index.push_back(std::clamp<std::int64_t>(neighbours[k], 0, in - 1));
        map.weight.push_back(static_cast<float>(weights[k]));
      }
    }
  }
  return plan;
}

GridSampleAttrs grid_sample_attrs(const Attributes& attrs) {
  GridSampleAttrs g;
  const std::string mode = attrs.get_string("mode", "bilinear");
  if (mode == "nearest")
    g.mode = GridSampleMode::nearest;
  else if (mode == "bicubic")
    g.mode = GridSampleMode::bicubic;
  else if (mode != "bilinear")
    throw Error(ErrorCode::invalid_model, "mode='" + mode + "' (expects bilinear, nearest or bicubic)");
  const std::string padding = attrs.get_string("padding_mode", "zeros");
  if (padding == "border")
    g.padding = GridSamplePadding::border;
  else if (padding == "reflection")
    g.padding = GridSamplePadding::reflection;
  else if (padding != "zeros")
    throw Error(ErrorCode::invalid_model, "padding_mode='" + padding + "' (expects zeros, border or reflection)");
  g.align_corners = attrs.get_int("align_corners", 0) != 0;
  return g;
}

RoiAlignAttrs roi_align_attrs(const Attributes& attrs) {
  RoiAlignAttrs r;
  const std::string mode = attrs.get_string("coordinate_transformation_mode", "half_pixel");
  if (mode != "half_pixel" && mode != "output_half_pixel")
    throw Error(ErrorCode::invalid_model,
                "coordinate_transformation_mode='" + mode + "' (expects half_pixel or output_half_pixel)");
  r.half_pixel = mode == "half_pixel";
  const std::string pooling = attrs.get_string("mode", "avg");
  if (pooling == "max") throw Error(ErrorCode::unsupported, "mode='max' (only avg is supported)");
  if (pooling != "avg") throw Error(ErrorCode::invalid_model, "mode='" + pooling + "' (expects avg or max)");
  r.output_height = attrs.get_int("output_height", 1);
  r.output_width = attrs.get_int("output_width", 1);
  r.sampling_ratio = attrs.get_int("sampling_ratio", 0);
  r.spatial_scale = attrs.get_float("spatial_scale", 1.0f);
  if (r.output_height < 1 || r.output_width < 1 || r.sampling_ratio < 0)
    throw Error(ErrorCode::invalid_model, "output_height and output_width must be >= 1, sampling_ratio >= 0");
  return r;
}

}  // namespace loom::graph
