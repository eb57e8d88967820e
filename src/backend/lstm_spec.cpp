// parse_lstm_spec(): the checks every backend's LSTM kernel shares.
#include "backend/lstm_spec.hpp"

#include <string>

namespace loom::backend {
namespace {
bool present(const KernelSpec& spec, std::size_t i) { return i < spec.inputs.size() && spec.inputs[i].present; }

void require_shape(const KernelSpec& spec, const Shape& got, const Shape& want, const char* what) {
  if (got != want) throw_bad_shape(spec, std::string(what) + " is " + got.to_string() + ", expected " + want.to_string());
}
}  // namespace

LstmSpec parse_lstm_spec(const KernelSpec& spec) {
  if (spec.inputs.size() < 3 || spec.inputs.size() > 8) throw_bad_shape(spec, "LSTM takes 3 to 8 inputs");
  if (spec.outputs.size() > 3) throw_bad_shape(spec, "LSTM has at most 3 outputs");
  for (std::size_t i : {kLstmX, kLstmW, kLstmR})
    if (!present(spec, i)) throw_bad_shape(spec, "inputs X, W and R are required");
  if (present(spec, kLstmP)) throw_unsupported(spec, "peephole weights (input P)");

  const Attributes& attrs = spec.node->attrs;
  if (attrs.get_int("layout", 0) != 0) throw_unsupported(spec, "layout=1 (only layout 0: [seq, batch, ...])");
  if (attrs.has("clip")) throw_unsupported(spec, "clip");
  if (attrs.get_int("input_forget", 0) != 0) throw_unsupported(spec, "input_forget=1");
  // Kernels hard-code ONNX's default activations (sigmoid, tanh, tanh).
  if (attrs.has("activations") || attrs.has("activation_alpha") || attrs.has("activation_beta"))
    throw_unsupported(spec, "custom activations (only the default sigmoid, tanh, tanh)");

  LstmSpec s;
  const std::string direction = attrs.get_string("direction", "forward");
  if (direction == "reverse") {
    s.reverse_only = true;
  } else if (direction == "bidirectional") {
    s.directions = 2;
  } else if (direction != "forward") {
    throw_unsupported(spec, "direction='" + direction + "'");
  }

  const Shape& x = spec.inputs[kLstmX].shape;
  const Shape& w = spec.inputs[kLstmW].shape;
  const Shape& r = spec.inputs[kLstmR].shape;
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3)
    throw_bad_shape(spec, "X, W and R must have rank 3, got " + x.to_string() + ", " + w.to_string() + ", " + r.to_string());
  s.steps = x[0];
  s.batch = x[1];
  s.input_size = x[2];
  s.hidden = r[2];
  if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) != s.hidden)
    throw_bad_shape(spec, "hidden_size " + std::to_string(attrs.get_int("hidden_size", 0)) + " does not match R " + r.to_string());
  require_shape(spec, w, Shape{s.directions, 4 * s.hidden, s.input_size}, "W");
  require_shape(spec, r, Shape{s.directions, 4 * s.hidden, s.hidden}, "R");
  s.has_bias = present(spec, kLstmB);
  if (s.has_bias) require_shape(spec, spec.inputs[kLstmB].shape, Shape{s.directions, 8 * s.hidden}, "B");
  s.has_sequence_lens = present(spec, kLstmSequenceLens);
  if (s.has_sequence_lens) {
    s.sequence_lens_dtype = spec.inputs[kLstmSequenceLens].dtype;
    if (s.sequence_lens_dtype != DType::i32 && s.sequence_lens_dtype != DType::i64)
      throw_unsupported(spec, "sequence_lens dtype " + std::string(dtype_name(s.sequence_lens_dtype)) + " (expects i32 or i64)");
    require_shape(spec, spec.inputs[kLstmSequenceLens].shape, Shape{s.batch}, "sequence_lens");
  }
  const Shape state{s.directions, s.batch, s.hidden};
  s.has_initial_h = present(spec, kLstmInitialH);
  s.has_initial_c = present(spec, kLstmInitialC);
  if (s.has_initial_h) require_shape(spec, spec.inputs[kLstmInitialH].shape, state, "initial_h");
  if (s.has_initial_c) require_shape(spec, spec.inputs[kLstmInitialC].shape, state, "initial_c");
  if (s.has_output(spec, kLstmY)) require_shape(spec, spec.outputs[kLstmY].shape, Shape{s.steps, s.directions, s.batch, s.hidden}, "Y");
  if (s.has_output(spec, kLstmYh)) require_shape(spec, spec.outputs[kLstmYh].shape, state, "Y_h");
  if (s.has_output(spec, kLstmYc)) require_shape(spec, spec.outputs[kLstmYc].shape, state, "Y_c");
  return s;
}

}  // namespace loom::backend
