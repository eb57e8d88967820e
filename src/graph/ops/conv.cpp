// Shape inference for convolution, pooling and batch normalisation.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
struct Window2d {
  std::int64_t kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  bool ceil_mode;
};

Window2d parse_window(const Node& node, std::int64_t kh_default, std::int64_t kw_default) {
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (auto_pad != "NOTSET")
    fail(ErrorCode::unsupported, "auto_pad=" + auto_pad + " is not supported (only NOTSET, with explicit pads)");
  auto k = node.attrs.get_ints("kernel_shape", {kh_default, kw_default});
  auto s = node.attrs.get_ints("strides", {1, 1});
  auto p = node.attrs.get_ints("pads", {0, 0, 0, 0});
  auto d = node.attrs.get_ints("dilations", {1, 1});
  if (k.size() != 2 || s.size() != 2 || p.size() != 4 || d.size() != 2)
    fail(ErrorCode::unsupported,
         "only 2-D windows are supported (kernel_shape, strides, dilations of "
         "2, pads of 4)");
  if (k[0] <= 0 || k[1] <= 0 || s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0)
    fail(ErrorCode::invalid_model, "kernel_shape, strides and dilations must be positive");
  for (auto v : p)
    if (v < 0) fail(ErrorCode::invalid_model, "pads must not be negative");
  return {k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1], node.attrs.get_int("ceil_mode", 0) != 0};
}

std::vector<ValueInfo> infer_conv(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  const auto& w = need(in, 1, "W");
  need_float(x, "X");
  need_same_dtype(x, w);
  need_rank(x, 4, "X (Conv is 2-D only)");
  need_rank(w, 4, "W");
  const std::int64_t group = node.attrs.get_int("group", 1);
  if (group <= 0 || x.shape[1] % group != 0 || w.shape[0] % group != 0)
    fail(ErrorCode::shape_mismatch, "group " + std::to_string(group) + " does not divide channels of X " +
                                        x.shape.to_string() + " and W " + w.shape.to_string());
  if (w.shape[1] * group != x.shape[1])
    fail(ErrorCode::shape_mismatch, "W " + w.shape.to_string() + " expects " + std::to_string(w.shape[1] * group) +
                                        " input channels, X " + x.shape.to_string() + " has " +
                                        std::to_string(x.shape[1]));
  if (in.size() > 2 && in[2]) {
    need_rank(*in[2], 1, "B");
    if (in[2]->shape[0] != w.shape[0])
      fail(ErrorCode::shape_mismatch,
           "bias B " + in[2]->shape.to_string() + " must have " + std::to_string(w.shape[0]) + " elements");
  }
  const auto win = parse_window(node, w.shape[2], w.shape[3]);
  if (win.kh != w.shape[2] || win.kw != w.shape[3])
    fail(ErrorCode::shape_mismatch, "kernel_shape differs from W " + w.shape.to_string());
  const auto ho = window_out(x.shape[2], win.kh, win.sh, win.pt, win.pb, win.dh, false);
  const auto wo = window_out(x.shape[3], win.kw, win.sw, win.pl, win.pr, win.dw, false);
  return {out(node, 0, x.dtype, Shape{x.shape[0], w.shape[0], ho, wo})};
}

std::vector<ValueInfo> infer_pool(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  need_rank(x, 4, "X (pooling is 2-D only)");
  if (!node.attrs.has("kernel_shape")) fail(ErrorCode::invalid_model, "kernel_shape is required");
  const auto win = parse_window(node, 1, 1);
  if (win.dh != 1 || win.dw != 1) fail(ErrorCode::unsupported, "pooling with dilations other than 1");
  if (node.outputs.size() > 1 && !node.outputs[1].empty()) fail(ErrorCode::unsupported, "MaxPool Indices output");
  if (node.attrs.get_int("storage_order", 0) != 0) fail(ErrorCode::unsupported, "storage_order=1");
  const auto ho = window_out(x.shape[2], win.kh, win.sh, win.pt, win.pb, 1, win.ceil_mode);
  const auto wo = window_out(x.shape[3], win.kw, win.sw, win.pl, win.pr, 1, win.ceil_mode);
  return {out(node, 0, x.dtype, Shape{x.shape[0], x.shape[1], ho, wo})};
}

std::vector<ValueInfo> infer_global_average_pool(const Node& node, std::span<const ValueInfo* const> in,
                                                 std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  if (x.shape.rank() < 3) fail(ErrorCode::shape_mismatch, "X must have rank >= 3, got " + x.shape.to_string());
  auto dims = x.shape.dims();
  std::fill(dims.begin() + 2, dims.end(), 1);
  return {out(node, 0, x.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_batch_norm(const Node& node, std::span<const ValueInfo* const> in,
                                        std::span<const Tensor* const>) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  if (x.shape.rank() < 2) fail(ErrorCode::shape_mismatch, "X must have rank >= 2, got " + x.shape.to_string());
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 1; i <= 4; ++i) {
    const auto& p = need(in, i, names[i - 1]);
    if (p.shape != Shape{x.shape[1]})
      fail(ErrorCode::shape_mismatch,
           std::string(names[i - 1]) + " " + p.shape.to_string() + " must be [" + std::to_string(x.shape[1]) + "]");
  }
  if (node.outputs.size() > 1) fail(ErrorCode::unsupported, "training-mode outputs (running mean/var)");
  return {out(node, 0, x.dtype, x.shape)};
}

double conv_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const> outs) {
  const double y = static_cast<double>(outs[0]->shape.numel());
  const auto& w = in[1]->shape;
  double per_output = 1;
  for (std::size_t i = 1; i < w.rank(); ++i) per_output *= static_cast<double>(w[i]);
  return 2.0 * y * per_output + (in.size() > 2 && in[2] ? y : 0.0);
}

double pool_flops(const Node& node, std::span<const ValueInfo* const>, std::span<const ValueInfo* const> outs) {
  double window = 1;
  for (auto k : node.attrs.get_ints("kernel_shape", {1})) window *= static_cast<double>(k);
  return static_cast<double>(outs[0]->shape.numel()) * window;
}

double input_elements(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const>) {
  return static_cast<double>(in[0]->shape.numel());
}

double two_per_output(const Node&, std::span<const ValueInfo* const>, std::span<const ValueInfo* const> outs) {
  return 2.0 * static_cast<double>(outs[0]->shape.numel());
}

}  // namespace

void register_conv_schemas(SchemaTable& table) {
  table["Conv"] = {OpRole::anchor, infer_conv, conv_flops, {}};
  table["MaxPool"] = {OpRole::anchor, infer_pool, pool_flops, {}};
  table["AveragePool"] = {OpRole::anchor, infer_pool, pool_flops, {}};
  table["GlobalAveragePool"] = {OpRole::anchor, infer_global_average_pool, input_elements, {}};
  table["BatchNormalization"] = {OpRole::pointwise, infer_batch_norm, two_per_output, {}};
}

}  // namespace loom::graph
