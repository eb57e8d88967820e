// Output types and shapes, Step roles and FLOP counts for every supported op (docs/ops.md).
#include "graph/ops.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

namespace loom::graph {
namespace {

const std::map<std::string, OpRole, std::less<>>& op_table() {
  static const std::map<std::string, OpRole, std::less<>> table = {
      {"MatMul", OpRole::anchor},
      {"Gemm", OpRole::anchor},
      {"Conv", OpRole::anchor},
      {"BatchNormalization", OpRole::pointwise},
      {"Relu", OpRole::pointwise},
      {"Gelu", OpRole::pointwise},
      {"Sigmoid", OpRole::pointwise},
      {"Tanh", OpRole::pointwise},
      {"Add", OpRole::pointwise},
      {"Mul", OpRole::pointwise},
      {"MaxPool", OpRole::anchor},
      {"AveragePool", OpRole::anchor},
      {"GlobalAveragePool", OpRole::anchor},
      {"Softmax", OpRole::anchor},
      {"LayerNormalization", OpRole::anchor},
      {"Reshape", OpRole::view},
      {"Flatten", OpRole::view},
      {"Transpose", OpRole::anchor},
      {"Concat", OpRole::anchor},
      {"Gather", OpRole::anchor},
      {"LSTM", OpRole::anchor},
  };
  return table;
}

[[noreturn]] void fail(ErrorCode code, const std::string& what) { throw Error(code, what); }

const ValueInfo& need(std::span<const ValueInfo* const> inputs, std::size_t i, const char* what) {
  if (i >= inputs.size() || inputs[i] == nullptr)
    fail(ErrorCode::invalid_model, std::string("missing required input ") + std::to_string(i) + " (" + what + ")");
  return *inputs[i];
}

void need_float(const ValueInfo& v, const char* what) {
  if (!is_floating(v.dtype))
    fail(ErrorCode::dtype_mismatch, std::string(what) + " '" + v.name + "' must be a float tensor, got " +
                                        std::string(dtype_name(v.dtype)));
}

void need_rank(const ValueInfo& v, std::size_t rank, const char* what) {
  if (v.shape.rank() != rank)
    fail(ErrorCode::shape_mismatch, std::string(what) + " '" + v.name + "' must have rank " + std::to_string(rank) +
                                        ", got " + v.shape.to_string());
}

void need_same_dtype(const ValueInfo& a, const ValueInfo& b) {
  if (a.dtype != b.dtype)
    fail(ErrorCode::dtype_mismatch, "inputs '" + a.name + "' (" + std::string(dtype_name(a.dtype)) + ") and '" +
                                        b.name + "' (" + std::string(dtype_name(b.dtype)) + ") differ in dtype");
}

ValueInfo out(const Node& node, std::size_t i, DType dtype, Shape shape) {
  return ValueInfo{i < node.outputs.size() ? node.outputs[i] : std::string(), dtype, std::move(shape)};
}

// Spatial output size of a 2-D window op along one axis.
std::int64_t window_out(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad_begin,
                        std::int64_t pad_end, std::int64_t dilation, bool ceil_mode) {
  const std::int64_t span = dilation * (kernel - 1) + 1;
  const std::int64_t padded = in + pad_begin + pad_end - span;
  if (padded < 0) fail(ErrorCode::shape_mismatch, "window of " + std::to_string(span) + " is larger than the padded input " +
                                                      std::to_string(in + pad_begin + pad_end));
  std::int64_t n = (ceil_mode ? (padded + stride - 1) / stride : padded / stride) + 1;
  // The last window must start inside the input or its leading padding.
  if (ceil_mode && (n - 1) * stride >= in + pad_begin) --n;
  return n;
}

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
    fail(ErrorCode::unsupported, "only 2-D windows are supported (kernel_shape, strides, dilations of 2, pads of 4)");
  if (k[0] <= 0 || k[1] <= 0 || s[0] <= 0 || s[1] <= 0 || d[0] <= 0 || d[1] <= 0)
    fail(ErrorCode::invalid_model, "kernel_shape, strides and dilations must be positive");
  for (auto v : p)
    if (v < 0) fail(ErrorCode::invalid_model, "pads must not be negative");
  return {k[0], k[1], s[0], s[1], p[0], p[1], p[2], p[3], d[0], d[1], node.attrs.get_int("ceil_mode", 0) != 0};
}

std::vector<ValueInfo> infer_conv(const Node& node, std::span<const ValueInfo* const> in) {
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
                                        " input channels, X " + x.shape.to_string() + " has " + std::to_string(x.shape[1]));
  if (in.size() > 2 && in[2]) {
    need_rank(*in[2], 1, "B");
    if (in[2]->shape[0] != w.shape[0])
      fail(ErrorCode::shape_mismatch, "bias B " + in[2]->shape.to_string() + " must have " + std::to_string(w.shape[0]) + " elements");
  }
  const auto win = parse_window(node, w.shape[2], w.shape[3]);
  if (win.kh != w.shape[2] || win.kw != w.shape[3])
    fail(ErrorCode::shape_mismatch, "kernel_shape differs from W " + w.shape.to_string());
  const auto ho = window_out(x.shape[2], win.kh, win.sh, win.pt, win.pb, win.dh, false);
  const auto wo = window_out(x.shape[3], win.kw, win.sw, win.pl, win.pr, win.dw, false);
  return {out(node, 0, x.dtype, Shape{x.shape[0], w.shape[0], ho, wo})};
}

std::vector<ValueInfo> infer_pool(const Node& node, std::span<const ValueInfo* const> in) {
  const auto& x = need(in, 0, "X");
  need_float(x, "X");
  need_rank(x, 4, "X (pooling is 2-D only)");
  if (!node.attrs.has("kernel_shape")) fail(ErrorCode::invalid_model, "kernel_shape is required");
  const auto win = parse_window(node, 1, 1);
  if (win.dh != 1 || win.dw != 1) fail(ErrorCode::unsupported, "pooling with dilations other than 1");
  if (node.outputs.size() > 1 && !node.outputs[1].empty())
    fail(ErrorCode::unsupported, "MaxPool Indices output");
  if (node.attrs.get_int("storage_order", 0) != 0) fail(ErrorCode::unsupported, "storage_order=1");
  const auto ho = window_out(x.shape[2], win.kh, win.sh, win.pt, win.pb, 1, win.ceil_mode);
  const auto wo = window_out(x.shape[3], win.kw, win.sw, win.pl, win.pr, 1, win.ceil_mode);
  return {out(node, 0, x.dtype, Shape{x.shape[0], x.shape[1], ho, wo})};
}

std::vector<ValueInfo> infer_matmul(const Node& node, std::span<const ValueInfo* const> in) {
  const auto& a = need(in, 0, "A");
  const auto& b = need(in, 1, "B");
  need_float(a, "A");
  need_same_dtype(a, b);
  if (a.shape.rank() < 2 || b.shape.rank() < 2)
    fail(ErrorCode::unsupported, "MatMul operands of rank 1 (" + a.shape.to_string() + ", " + b.shape.to_string() + ")");
  const auto ra = a.shape.rank(), rb = b.shape.rank();
  if (a.shape[ra - 1] != b.shape[rb - 2])
    fail(ErrorCode::shape_mismatch, "inner dimensions differ: A " + a.shape.to_string() + " B " + b.shape.to_string());
  Shape batch_a(std::vector<std::int64_t>(a.shape.begin(), a.shape.end() - 2));
  Shape batch_b(std::vector<std::int64_t>(b.shape.begin(), b.shape.end() - 2));
  auto dims = broadcast_shapes(batch_a, batch_b).dims();
  dims.push_back(a.shape[ra - 2]);
  dims.push_back(b.shape[rb - 1]);
  return {out(node, 0, a.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_gemm(const Node& node, std::span<const ValueInfo* const> in) {
  const auto& a = need(in, 0, "A");
  const auto& b = need(in, 1, "B");
  need_float(a, "A");
  need_same_dtype(a, b);
  need_rank(a, 2, "A");
  need_rank(b, 2, "B");
  const bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
  const auto m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  const auto kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (ka != kb) fail(ErrorCode::shape_mismatch, "inner dimensions differ: A " + a.shape.to_string() + " B " + b.shape.to_string());
  Shape y{m, n};
  if (in.size() > 2 && in[2]) {
    if (broadcast_shapes(in[2]->shape, y) != y)
      fail(ErrorCode::shape_mismatch, "C " + in[2]->shape.to_string() + " does not broadcast to " + y.to_string());
  }
  return {out(node, 0, a.dtype, y)};
}

std::vector<ValueInfo> infer_reshape(const Node& node, std::span<const ValueInfo* const> in,
                                     std::span<const Tensor* const> constants) {
  const auto& x = need(in, 0, "data");
  need(in, 1, "shape");
  if (constants.size() < 2 || constants[1] == nullptr)
    fail(ErrorCode::unsupported, "the shape input must be a constant initializer");
  const Tensor& spec = *constants[1];
  if (spec.dtype() != DType::i64 || spec.shape().rank() != 1)
    fail(ErrorCode::invalid_model, "the shape input must be a 1-D i64 tensor");
  const bool allow_zero = node.attrs.get_int("allowzero", 0) != 0;
  std::vector<std::int64_t> dims(spec.values<std::int64_t>().begin(), spec.values<std::int64_t>().end());
  std::int64_t known = 1;
  int infer_at = -1;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allow_zero) {
      if (i >= x.shape.rank()) fail(ErrorCode::shape_mismatch, "shape has 0 at axis " + std::to_string(i) + " beyond the input's rank");
      dims[i] = x.shape[i];
    }
    if (dims[i] == -1) {
      if (infer_at >= 0) fail(ErrorCode::invalid_model, "shape has more than one -1");
      infer_at = static_cast<int>(i);
    } else if (dims[i] < 0) {
      fail(ErrorCode::invalid_model, "shape has a negative dimension");
    } else {
      known *= dims[i];
    }
  }
  if (infer_at >= 0) {
    if (known == 0 || x.shape.numel() % known != 0)
      fail(ErrorCode::shape_mismatch, "cannot reshape " + x.shape.to_string() + " to the requested shape");
    dims[infer_at] = x.shape.numel() / known;
  }
  Shape y(dims);
  if (y.numel() != x.shape.numel())
    fail(ErrorCode::shape_mismatch, "cannot reshape " + x.shape.to_string() + " (" + std::to_string(x.shape.numel()) +
                                        " elements) to " + y.to_string());
  return {out(node, 0, x.dtype, y)};
}

std::vector<ValueInfo> infer_lstm(const Node& node, std::span<const ValueInfo* const> in) {
  const auto& x = need(in, 0, "X");
  const auto& w = need(in, 1, "W");
  const auto& r = need(in, 2, "R");
  need_float(x, "X");
  need_same_dtype(x, w);
  need_same_dtype(x, r);
  need_rank(x, 3, "X");
  need_rank(w, 3, "W");
  need_rank(r, 3, "R");
  if (node.attrs.get_int("layout", 0) != 0) fail(ErrorCode::unsupported, "layout=1");
  if (node.attrs.has("activations")) fail(ErrorCode::unsupported, "custom activations");
  if (node.attrs.has("clip")) fail(ErrorCode::unsupported, "clip");
  if (node.attrs.get_int("input_forget", 0) != 0) fail(ErrorCode::unsupported, "input_forget=1");
  if (in.size() > 7 && in[7]) fail(ErrorCode::unsupported, "peephole weights (input P)");
  const std::string direction = node.attrs.get_string("direction", "forward");
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    fail(ErrorCode::invalid_model, "direction '" + direction + "'");
  const std::int64_t hidden = node.attrs.get_int("hidden_size", r.shape[2]);
  const auto t = x.shape[0], batch = x.shape[1], input = x.shape[2];
  if (w.shape != Shape{dirs, 4 * hidden, input})
    fail(ErrorCode::shape_mismatch, "W " + w.shape.to_string() + " must be " + Shape{dirs, 4 * hidden, input}.to_string());
  if (r.shape != Shape{dirs, 4 * hidden, hidden})
    fail(ErrorCode::shape_mismatch, "R " + r.shape.to_string() + " must be " + Shape{dirs, 4 * hidden, hidden}.to_string());
  if (in.size() > 3 && in[3] && in[3]->shape != Shape{dirs, 8 * hidden})
    fail(ErrorCode::shape_mismatch, "B " + in[3]->shape.to_string() + " must be " + Shape{dirs, 8 * hidden}.to_string());
  if (in.size() > 4 && in[4] && (in[4]->shape != Shape{batch} || in[4]->dtype != DType::i32))
    fail(ErrorCode::shape_mismatch, "sequence_lens must be i32 [" + std::to_string(batch) + "]");
  for (std::size_t i = 5; i <= 6 && i < in.size(); ++i)
    if (in[i] && in[i]->shape != Shape{dirs, batch, hidden})
      fail(ErrorCode::shape_mismatch, std::string(i == 5 ? "initial_h " : "initial_c ") + in[i]->shape.to_string() +
                                          " must be " + Shape{dirs, batch, hidden}.to_string());
  return {out(node, 0, x.dtype, Shape{t, dirs, batch, hidden}), out(node, 1, x.dtype, Shape{dirs, batch, hidden}),
          out(node, 2, x.dtype, Shape{dirs, batch, hidden})};
}

}  // namespace

bool is_supported_op(std::string_view op_type) noexcept { return op_table().count(op_type) != 0; }

std::vector<std::string> supported_ops() {
  std::vector<std::string> names;
  for (const auto& [name, role] : op_table()) names.push_back(name);
  return names;
}

OpRole op_role(const Node& node) {
  auto it = op_table().find(node.op_type);
  if (it == op_table().end()) fail(ErrorCode::unsupported, "op type '" + node.op_type + "' is not supported");
  return it->second;
}

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(ErrorCode::invalid_model, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + r : axis;
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.rank() ? 1 : a[i - (rank - a.rank())];
    const std::int64_t db = i < rank - b.rank() ? 1 : b[i - (rank - b.rank())];
    if (da != db && da != 1 && db != 1)
      fail(ErrorCode::shape_mismatch, "shapes " + a.to_string() + " and " + b.to_string() + " do not broadcast");
    dims[i] = da == 1 ? db : da;
  }
  return Shape(dims);
}

std::vector<ValueInfo> infer_node(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const> constants) {
  const std::string& op = node.op_type;
  op_role(node);  // rejects unknown ops
  if (op == "Conv") return infer_conv(node, in);
  if (op == "MaxPool" || op == "AveragePool") return infer_pool(node, in);
  if (op == "MatMul") return infer_matmul(node, in);
  if (op == "Gemm") return infer_gemm(node, in);
  if (op == "Reshape") return infer_reshape(node, in, constants);
  if (op == "LSTM") return infer_lstm(node, in);
  if (op == "Relu" || op == "Sigmoid" || op == "Tanh" || op == "Gelu") {
    const auto& x = need(in, 0, "X");
    need_float(x, "X");
    if (op == "Gelu") {
      const auto mode = node.attrs.get_string("approximate", "none");
      if (mode != "none" && mode != "tanh") fail(ErrorCode::invalid_model, "approximate='" + mode + "'");
    }
    return {out(node, 0, x.dtype, x.shape)};
  }
  if (op == "Add" || op == "Mul") {
    const auto& a = need(in, 0, "A");
    const auto& b = need(in, 1, "B");
    need_same_dtype(a, b);
    if (a.dtype == DType::boolean) fail(ErrorCode::dtype_mismatch, "bool operands");
    return {out(node, 0, a.dtype, broadcast_shapes(a.shape, b.shape))};
  }
  if (op == "BatchNormalization") {
    const auto& x = need(in, 0, "X");
    need_float(x, "X");
    if (x.shape.rank() < 2) fail(ErrorCode::shape_mismatch, "X must have rank >= 2, got " + x.shape.to_string());
    const char* names[] = {"scale", "B", "input_mean", "input_var"};
    for (std::size_t i = 1; i <= 4; ++i) {
      const auto& p = need(in, i, names[i - 1]);
      if (p.shape != Shape{x.shape[1]})
        fail(ErrorCode::shape_mismatch, std::string(names[i - 1]) + " " + p.shape.to_string() + " must be [" + std::to_string(x.shape[1]) + "]");
    }
    if (node.outputs.size() > 1) fail(ErrorCode::unsupported, "training-mode outputs (running mean/var)");
    return {out(node, 0, x.dtype, x.shape)};
  }
  if (op == "GlobalAveragePool") {
    const auto& x = need(in, 0, "X");
    need_float(x, "X");
    if (x.shape.rank() < 3) fail(ErrorCode::shape_mismatch, "X must have rank >= 3, got " + x.shape.to_string());
    auto dims = x.shape.dims();
    std::fill(dims.begin() + 2, dims.end(), 1);
    return {out(node, 0, x.dtype, Shape(dims))};
  }
  if (op == "Softmax") {
    const auto& x = need(in, 0, "X");
    need_float(x, "X");
    normalize_axis(node.attrs.get_int("axis", -1), x.shape.rank());
    return {out(node, 0, x.dtype, x.shape)};
  }
  if (op == "LayerNormalization") {
    const auto& x = need(in, 0, "X");
    const auto& scale = need(in, 1, "Scale");
    need_float(x, "X");
    need_same_dtype(x, scale);
    const auto axis = normalize_axis(node.attrs.get_int("axis", -1), x.shape.rank());
    Shape norm(std::vector<std::int64_t>(x.shape.begin() + axis, x.shape.end()));
    if (broadcast_shapes(scale.shape, norm) != norm)
      fail(ErrorCode::shape_mismatch, "Scale " + scale.shape.to_string() + " does not broadcast to the normalised " + norm.to_string());
    if (in.size() > 2 && in[2] && broadcast_shapes(in[2]->shape, norm) != norm)
      fail(ErrorCode::shape_mismatch, "B " + in[2]->shape.to_string() + " does not broadcast to the normalised " + norm.to_string());
    for (std::size_t i = 1; i < node.outputs.size(); ++i)
      if (!node.outputs[i].empty()) fail(ErrorCode::unsupported, "Mean and InvStdDev outputs");
    return {out(node, 0, x.dtype, x.shape)};
  }
  if (op == "Flatten") {
    const auto& x = need(in, 0, "input");
    const auto r = static_cast<std::int64_t>(x.shape.rank());
    std::int64_t axis = node.attrs.get_int("axis", 1);
    if (axis < -r || axis > r) fail(ErrorCode::invalid_model, "axis " + std::to_string(axis) + " out of range");
    if (axis < 0) axis += r;
    std::int64_t outer = 1;
    for (std::int64_t i = 0; i < axis; ++i) outer *= x.shape[i];
    return {out(node, 0, x.dtype, Shape{outer, outer == 0 ? 0 : x.shape.numel() / std::max<std::int64_t>(outer, 1)})};
  }
  if (op == "Transpose") {
    const auto& x = need(in, 0, "data");
    const auto r = x.shape.rank();
    std::vector<std::int64_t> perm(r);
    std::iota(perm.rbegin(), perm.rend(), 0);
    perm = node.attrs.get_ints("perm", perm);
    if (perm.size() != r) fail(ErrorCode::invalid_model, "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
    std::vector<bool> seen(r, false);
    std::vector<std::int64_t> dims(r);
    for (std::size_t i = 0; i < r; ++i) {
      const auto p = normalize_axis(perm[i], r);
      if (seen[p]) fail(ErrorCode::invalid_model, "perm repeats axis " + std::to_string(p));
      seen[p] = true;
      dims[i] = x.shape[p];
    }
    return {out(node, 0, x.dtype, Shape(dims))};
  }
  if (op == "Concat") {
    if (in.empty() || !in[0]) fail(ErrorCode::invalid_model, "Concat needs at least one input");
    const auto& first = *in[0];
    if (!node.attrs.has("axis")) fail(ErrorCode::invalid_model, "axis is required");
    const auto axis = normalize_axis(node.attrs.get_int("axis", 0), first.shape.rank());
    auto dims = first.shape.dims();
    dims[axis] = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      const auto& v = need(in, i, "input");
      need_same_dtype(first, v);
      if (v.shape.rank() != first.shape.rank())
        fail(ErrorCode::shape_mismatch, "input '" + v.name + "' " + v.shape.to_string() + " differs in rank from " + first.shape.to_string());
      for (std::size_t d = 0; d < dims.size(); ++d)
        if (static_cast<std::int64_t>(d) != axis && v.shape[d] != first.shape[d])
          fail(ErrorCode::shape_mismatch, "input '" + v.name + "' " + v.shape.to_string() + " differs from " +
                                              first.shape.to_string() + " outside axis " + std::to_string(axis));
      dims[axis] += v.shape[axis];
    }
    return {out(node, 0, first.dtype, Shape(dims))};
  }
  if (op == "Gather") {
    const auto& data = need(in, 0, "data");
    const auto& indices = need(in, 1, "indices");
    if (indices.dtype != DType::i64 && indices.dtype != DType::i32)
      fail(ErrorCode::dtype_mismatch, "indices must be i64 or i32, got " + std::string(dtype_name(indices.dtype)));
    const auto axis = normalize_axis(node.attrs.get_int("axis", 0), data.shape.rank());
    std::vector<std::int64_t> dims(data.shape.begin(), data.shape.begin() + axis);
    dims.insert(dims.end(), indices.shape.begin(), indices.shape.end());
    dims.insert(dims.end(), data.shape.begin() + axis + 1, data.shape.end());
    return {out(node, 0, data.dtype, Shape(dims))};
  }
  fail(ErrorCode::internal, "op '" + op + "' has no shape inference");
}

double node_flops(const Node& node, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const> outs) {
  const std::string& op = node.op_type;
  const double y = outs.empty() || !outs[0] ? 0.0 : static_cast<double>(outs[0]->shape.numel());
  if (op == "MatMul") {
    const auto& a = in[0]->shape;
    return 2.0 * y * static_cast<double>(a[a.rank() - 1]);
  }
  if (op == "Gemm") {
    const auto& a = in[0]->shape;
    const double k = static_cast<double>(node.attrs.get_int("transA", 0) ? a[0] : a[1]);
    return 2.0 * y * k + (in.size() > 2 && in[2] ? y : 0.0);
  }
  if (op == "Conv") {
    const auto& w = in[1]->shape;
    return 2.0 * y * static_cast<double>(w[1] * w[2] * w[3]) + (in.size() > 2 && in[2] ? y : 0.0);
  }
  if (op == "MaxPool" || op == "AveragePool") {
    const auto k = node.attrs.get_ints("kernel_shape", {1, 1});
    return y * static_cast<double>(k[0] * k[1]);
  }
  if (op == "GlobalAveragePool") return static_cast<double>(in[0]->shape.numel());
  if (op == "Relu") return y;
  if (op == "Add" || op == "Mul") return y;
  if (op == "BatchNormalization") return 2.0 * y;
  if (op == "Sigmoid" || op == "Tanh") return 4.0 * y;
  if (op == "Gelu") return 8.0 * y;
  if (op == "Softmax") return 5.0 * y;
  if (op == "LayerNormalization") return 8.0 * y;
  if (op == "LSTM") {
    const auto& x = in[0]->shape;
    const auto& w = in[1]->shape;
    const double dirs = static_cast<double>(w[0]), gates = static_cast<double>(w[1]);
    const double hidden = gates / 4.0, input = static_cast<double>(x[2]);
    const double per_step = 2.0 * static_cast<double>(x[1]) * gates * (input + hidden) +
                            10.0 * static_cast<double>(x[1]) * hidden;
    return dirs * static_cast<double>(x[0]) * per_step;
  }
  return 0.0;  // data movement: Reshape, Flatten, Transpose, Concat, Gather
}

}  // namespace loom::graph
