// Window geometry of Conv, ConvTranspose and pooling: shape inference and both backends use it.
#include "graph/ops/conv_window.hpp"

#include <algorithm>
#include <string>

#include "graph/op_support.hpp"

namespace loom::graph {
namespace {

std::string list(const std::vector<std::int64_t>& values) {
  std::string text = "[";
  for (std::size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

std::vector<std::int64_t> axis_attr(const Attributes& attrs, const char* name, std::size_t count,
                                    std::int64_t fallback) {
  std::vector<std::int64_t> values = attrs.get_ints(name, std::vector<std::int64_t>(count, fallback));
  if (values.size() != count)
    fail(ErrorCode::shape_mismatch, std::string(name) + " " + list(values) + " must have " + std::to_string(count) +
                                        " values (one per spatial dim" +
                                        (std::string(name) == "pads" ? ", twice)" : ")"));
  return values;
}

// Floor division for any sign of a (b > 0), as Python's //.
std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

struct Common {
  std::size_t rank;
  std::string auto_pad;
};

Common check_common(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& kernel) {
  if (x.rank() < 3) fail(ErrorCode::shape_mismatch, "X must be [N, C, spatial...], got " + x.to_string());
  const std::size_t rank = x.rank() - 2;
  if (rank > kMaxWindowRank)
    fail(ErrorCode::unsupported, std::to_string(rank) + "-D windows (1-D to 3-D only), X " + x.to_string());
  if (kernel.size() != rank)
    fail(ErrorCode::shape_mismatch,
         "kernel " + list(kernel) + " does not match the spatial dims of X " + x.to_string());
  if (attrs.has("kernel_shape") && attrs.get_ints("kernel_shape") != kernel)
    fail(ErrorCode::shape_mismatch,
         "kernel_shape " + list(attrs.get_ints("kernel_shape")) + " differs from the kernel " + list(kernel));
  const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    fail(ErrorCode::unsupported, "auto_pad='" + auto_pad + "' (NOTSET, VALID, SAME_UPPER or SAME_LOWER)");
  for (std::int64_t k : kernel)
    if (k < 1) fail(ErrorCode::shape_mismatch, "kernel sizes must be positive, got " + list(kernel));
  return {rank, auto_pad};
}

void check_positive(const std::vector<std::int64_t>& values, const char* name) {
  for (std::int64_t v : values)
    if (v < 1) fail(ErrorCode::shape_mismatch, std::string(name) + " must be positive, got " + list(values));
}

}  // namespace

WindowGeometry WindowGeometry::padded_to(std::size_t rank) const {
  WindowGeometry out = *this;
  while (out.rank() < rank) {
    out.input.insert(out.input.begin(), 1);
    out.output.insert(out.output.begin(), 1);
    out.kernel.insert(out.kernel.begin(), 1);
    out.stride.insert(out.stride.begin(), 1);
    out.dilation.insert(out.dilation.begin(), 1);
    out.pad_begin.insert(out.pad_begin.begin(), 0);
    out.pad_end.insert(out.pad_end.begin(), 0);
  }
  return out;
}

WindowGeometry sliding_window(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& kernel,
                              bool ceil_mode) {
  const Common common = check_common(attrs, x, kernel);
  const std::size_t rank = common.rank;
  WindowGeometry g;
  g.kernel = kernel;
  g.input.assign(x.dims().begin() + 2, x.dims().end());
  g.stride = axis_attr(attrs, "strides", rank, 1);
  g.dilation = axis_attr(attrs, "dilations", rank, 1);
  check_positive(g.stride, "strides");
  check_positive(g.dilation, "dilations");
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.output.assign(rank, 0);
  const bool same = common.auto_pad == "SAME_UPPER" || common.auto_pad == "SAME_LOWER";
  if (common.auto_pad == "NOTSET") {
    const std::vector<std::int64_t> pads = axis_attr(attrs, "pads", 2 * rank, 0);
    for (std::size_t i = 0; i < rank; ++i) {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[rank + i];
    }
    for (std::int64_t p : pads)
      if (p < 0) fail(ErrorCode::shape_mismatch, "pads must not be negative, got " + list(pads));
  }
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    if (same) {
      g.output[i] = (g.input[i] + g.stride[i] - 1) / g.stride[i];
      const std::int64_t total = std::max<std::int64_t>(0, (g.output[i] - 1) * g.stride[i] + span - g.input[i]);
      g.pad_begin[i] = common.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
      continue;
    }
    const std::int64_t room = g.input[i] + g.pad_begin[i] + g.pad_end[i] - span;
    if (room < 0)
      fail(ErrorCode::shape_mismatch, "the window of " + std::to_string(span) +
                                          " is larger than the padded input along axis " + std::to_string(i + 2) +
                                          " of X " + x.to_string());
    if (!ceil_mode) {
      g.output[i] = room / g.stride[i] + 1;
    } else {
      g.output[i] = (room + g.stride[i] - 1) / g.stride[i] + 1;
      if ((g.output[i] - 1) * g.stride[i] >= g.input[i] + g.pad_begin[i]) --g.output[i];
    }
  }
  return g;
}

WindowGeometry transposed_window(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& kernel) {
  const Common common = check_common(attrs, x, kernel);
  const std::size_t rank = common.rank;
  WindowGeometry g;
  g.kernel = kernel;
  g.input.assign(x.dims().begin() + 2, x.dims().end());
  g.stride = axis_attr(attrs, "strides", rank, 1);
  g.dilation = axis_attr(attrs, "dilations", rank, 1);
  check_positive(g.stride, "strides");
  check_positive(g.dilation, "dilations");
  const std::vector<std::int64_t> output_padding = axis_attr(attrs, "output_padding", rank, 0);
  for (std::int64_t p : output_padding)
    if (p < 0) fail(ErrorCode::shape_mismatch, "output_padding must not be negative, got " + list(output_padding));
  const bool has_output_shape = attrs.has("output_shape");
  std::vector<std::int64_t> output_shape;
  if (has_output_shape) {
    output_shape = attrs.get_ints("output_shape");
    // Some exporters write the full [N, C, spatial...] shape; its trailing dims are the spatial ones.
    if (output_shape.size() == rank + 2) output_shape.erase(output_shape.begin(), output_shape.begin() + 2);
    if (output_shape.size() != rank)
      fail(ErrorCode::shape_mismatch,
           "output_shape " + list(output_shape) + " must have " + std::to_string(rank) + " values");
    check_positive(output_shape, "output_shape");
  }
  g.pad_begin.assign(rank, 0);
  g.pad_end.assign(rank, 0);
  g.output.assign(rank, 0);
  const bool same = common.auto_pad == "SAME_UPPER" || common.auto_pad == "SAME_LOWER";
  if (common.auto_pad == "NOTSET") {
    const std::vector<std::int64_t> pads = axis_attr(attrs, "pads", 2 * rank, 0);
    for (std::int64_t p : pads)
      if (p < 0) fail(ErrorCode::shape_mismatch, "pads must not be negative, got " + list(pads));
    for (std::size_t i = 0; i < rank; ++i) {
      g.pad_begin[i] = pads[i];
      g.pad_end[i] = pads[rank + i];
    }
  }
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t span = (g.kernel[i] - 1) * g.dilation[i] + 1;
    const std::int64_t full = g.stride[i] * (g.input[i] - 1) + output_padding[i] + span;
    if (same) {
      g.output[i] = has_output_shape ? output_shape[i] : g.input[i] * g.stride[i];
      const std::int64_t total = full - g.output[i];
      const std::int64_t half = floor_div(total, 2);
      g.pad_begin[i] = common.auto_pad == "SAME_UPPER" ? half : total - half;
      g.pad_end[i] = total - g.pad_begin[i];
    } else if (has_output_shape) {
      g.output[i] = output_shape[i];
      g.pad_end[i] = full - g.pad_begin[i] - g.output[i];  // may be negative: zero-extended
    } else {
      g.output[i] = full - g.pad_begin[i] - g.pad_end[i];
    }
    if (g.output[i] < 1)
      fail(ErrorCode::shape_mismatch,
           "pads leave no output along axis " + std::to_string(i + 2) + " (X " + x.to_string() + ")");
  }
  return g;
}

std::vector<std::int64_t> max_unpool_shape(const Attributes& attrs, const Shape& x,
                                           const std::vector<std::int64_t>* output_shape) {
  if (x.rank() < 3) throw Error(ErrorCode::invalid_model, "X must be [N, C, spatial...], got " + x.to_string());
  const std::size_t spatial = x.rank() - 2;
  if (output_shape) {
    if (output_shape->size() != x.rank())
      throw Error(ErrorCode::invalid_model, "output_shape must have X's rank " + std::to_string(x.rank()));
    return *output_shape;
  }
  const auto kernel = attrs.get_ints("kernel_shape");
  const auto strides = attrs.has("strides") ? attrs.get_ints("strides") : std::vector<std::int64_t>(spatial, 1);
  const auto pads = attrs.has("pads") ? attrs.get_ints("pads") : std::vector<std::int64_t>(2 * spatial, 0);
  if (kernel.size() != spatial || strides.size() != spatial || pads.size() != 2 * spatial)
    throw Error(ErrorCode::invalid_model,
                "kernel_shape, strides and pads must match the " + std::to_string(spatial) + " spatial axes");
  std::vector<std::int64_t> out{x[0], x[1]};
  for (std::size_t d = 0; d < spatial; ++d)
    out.push_back((x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + spatial]);
  return out;
}

}  // namespace loom::graph
