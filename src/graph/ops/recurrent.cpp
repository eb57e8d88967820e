// Shape inference for recurrent layers.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
std::vector<ValueInfo> infer_lstm(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
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
    fail(ErrorCode::shape_mismatch,
         "W " + w.shape.to_string() + " must be " + Shape{dirs, 4 * hidden, input}.to_string());
  if (r.shape != Shape{dirs, 4 * hidden, hidden})
    fail(ErrorCode::shape_mismatch,
         "R " + r.shape.to_string() + " must be " + Shape{dirs, 4 * hidden, hidden}.to_string());
  if (in.size() > 3 && in[3] && in[3]->shape != Shape{dirs, 8 * hidden})
    fail(ErrorCode::shape_mismatch,
         "B " + in[3]->shape.to_string() + " must be " + Shape{dirs, 8 * hidden}.to_string());
  if (in.size() > 4 && in[4] && (in[4]->shape != Shape{batch} || in[4]->dtype != DType::i32))
    fail(ErrorCode::shape_mismatch, "sequence_lens must be i32 [" + std::to_string(batch) + "]");
  for (std::size_t i = 5; i <= 6 && i < in.size(); ++i)
    if (in[i] && in[i]->shape != Shape{dirs, batch, hidden})
      fail(ErrorCode::shape_mismatch, std::string(i == 5 ? "initial_h " : "initial_c ") + in[i]->shape.to_string() +
                                          " must be " + Shape{dirs, batch, hidden}.to_string());
  return {out(node, 0, x.dtype, Shape{t, dirs, batch, hidden}), out(node, 1, x.dtype, Shape{dirs, batch, hidden}),
          out(node, 2, x.dtype, Shape{dirs, batch, hidden})};
}

double lstm_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const>) {
  const auto& x = in[0]->shape;
  const auto& w = in[1]->shape;
  const double dirs = static_cast<double>(w[0]), gates = static_cast<double>(w[1]);
  const double hidden = gates / 4.0, input = static_cast<double>(x[2]);
  const double per_step =
      2.0 * static_cast<double>(x[1]) * gates * (input + hidden) + 10.0 * static_cast<double>(x[1]) * hidden;
  return dirs * static_cast<double>(x[0]) * per_step;
}

}  // namespace

void register_recurrent_schemas(SchemaTable& table) { table["LSTM"] = {OpRole::anchor, infer_lstm, lstm_flops, {}}; }

}  // namespace loom::graph
