// Shape inference for recurrent layers (LSTM, GRU, RNN); layout, direction and the shapes they imply come
// from rnn_geometry (shared with the kernels). Attribute values the kernels cannot run (unknown
// activations...) are checked when the kernel is created (src/backend/rnn_spec.cpp).
#include <string>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"
#include "graph/ops/rnn_geometry.hpp"

namespace loom::graph {
namespace {

// LSTM (gates = 4), GRU (gates = 3) and RNN (gates = 1): X [T, B, I] (layout 0) or [B, T, I] (layout 1), W
// [D, gates*H, I], R [D, gates*H, H], B [D, 2*gates*H], sequence_lens [B], initial_h (and LSTM's
// initial_c) [D, B, H] or [B, D, H]. Outputs Y, Y_h (and LSTM's Y_c).
std::vector<ValueInfo> infer_recurrent(const Node& node, std::span<const ValueInfo* const> in, std::int64_t gates,
                                       std::size_t state_inputs, std::size_t outputs) {
  const auto& x = need(in, 0, "X");
  const auto& w = need(in, 1, "W");
  const auto& r = need(in, 2, "R");
  need_float(x, "X");
  need_same_dtype(x, w);
  need_same_dtype(x, r);
  need_rank(x, 3, "X");
  need_rank(w, 3, "W");
  need_rank(r, 3, "R");
  const RnnGeometry g = rnn_geometry(rnn_layout(node.attrs), x.shape, node.attrs.get_int("hidden_size", r.shape[2]));
  if (w.shape != g.w_shape(gates))
    fail(ErrorCode::shape_mismatch, "W " + w.shape.to_string() + " must be " + g.w_shape(gates).to_string());
  if (r.shape != g.r_shape(gates))
    fail(ErrorCode::shape_mismatch, "R " + r.shape.to_string() + " must be " + g.r_shape(gates).to_string());
  if (const ValueInfo* b = optional_input(in, 3); b && b->shape != g.b_shape(gates))
    fail(ErrorCode::shape_mismatch, "B " + b->shape.to_string() + " must be " + g.b_shape(gates).to_string());
  if (const ValueInfo* lens = optional_input(in, 4);
      lens && (lens->shape != Shape{g.batch} || (lens->dtype != DType::i32 && lens->dtype != DType::i64)))
    fail(ErrorCode::shape_mismatch, "sequence_lens must be i32 [" + std::to_string(g.batch) + "]");
  const Shape state = g.state_shape();
  for (std::size_t i = 5; i < 5 + state_inputs; ++i)
    if (const ValueInfo* s = optional_input(in, i); s && s->shape != state)
      fail(ErrorCode::shape_mismatch,
           std::string(i == 5 ? "initial_h " : "initial_c ") + s->shape.to_string() + " must be " + state.to_string());
  if (const ValueInfo* p = optional_input(in, 7); gates == 4 && p && p->shape != Shape{g.directions, 3 * g.hidden})
    fail(ErrorCode::shape_mismatch,
         "P " + p->shape.to_string() + " must be " + Shape{g.directions, 3 * g.hidden}.to_string());
  std::vector<ValueInfo> result{out(node, 0, x.dtype, g.y_shape())};
  for (std::size_t o = 1; o < outputs; ++o) result.push_back(out(node, o, x.dtype, state));
  return result;
}

std::vector<ValueInfo> infer_lstm(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
  return infer_recurrent(node, in, 4, 2, 3);
}

std::vector<ValueInfo> infer_rnn(const Node& node, std::span<const ValueInfo* const> in,
                                 std::span<const Tensor* const>) {
  return infer_recurrent(node, in, 1, 1, 2);
}

std::vector<ValueInfo> infer_gru(const Node& node, std::span<const ValueInfo* const> in,
                                 std::span<const Tensor* const>) {
  return infer_recurrent(node, in, 3, 1, 2);
}

// Per time step and direction: the input and recurrent products (2 FLOPs per multiply-add over
// every gate) plus ~`cell_flops` per hidden unit for the gate activations and state update.
double recurrent_flops(std::span<const ValueInfo* const> in, double gate_count, double cell_flops) {
  const auto& x = in[0]->shape;
  const auto& w = in[1]->shape;
  const double dirs = static_cast<double>(w[0]), gates = static_cast<double>(w[1]);
  const double hidden = gates / gate_count, input = static_cast<double>(x[2]);
  // X's first two dims are T and B in either layout; only their product counts.
  const double steps_times_batch = static_cast<double>(x[0]) * static_cast<double>(x[1]);
  const double per_row = 2.0 * gates * (input + hidden) + cell_flops * hidden;
  return dirs * steps_times_batch * per_row;
}

double lstm_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const>) {
  return recurrent_flops(in, 4.0, 10.0);
}

double rnn_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const>) {
  return recurrent_flops(in, 1.0, 2.0);
}

double gru_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const>) {
  return recurrent_flops(in, 3.0, 10.0);
}

}  // namespace

void register_recurrent_schemas(SchemaTable& table) {
  table["LSTM"] = {OpRole::anchor, infer_lstm, lstm_flops, {}};
  table["GRU"] = {OpRole::anchor, infer_gru, gru_flops, {}};
  table["RNN"] = {OpRole::anchor, infer_rnn, rnn_flops, {}};
}

}  // namespace loom::graph
