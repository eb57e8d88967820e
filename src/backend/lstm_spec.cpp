// parse_lstm_spec(): the checks every backend's LSTM kernel shares.
#include "backend/lstm_spec.hpp"

#include <string>

namespace loom::backend {

LstmSpec parse_lstm_spec(const KernelSpec& spec) {
  constexpr RnnDirectionActivations kDefaults{
      {{RnnActivationKind::sigmoid}, {RnnActivationKind::tanh}, {RnnActivationKind::tanh}}};
  if (spec.outputs.size() > 3) throw_bad_shape(spec, "LSTM has at most 3 outputs");
  LstmSpec s;
  static_cast<RnnSpec&>(s) = parse_rnn_spec(spec, 4, 8, 3, kDefaults);
  const std::int64_t input_forget = spec.node->attrs.get_int("input_forget", 0);
  if (input_forget != 0 && input_forget != 1) throw_unsupported(spec, "input_forget=" + std::to_string(input_forget));
  s.input_forget = input_forget == 1;
  s.has_initial_c = rnn_input_present(spec, kLstmInitialC);
  if (s.has_initial_c) require_rnn_shape(spec, spec.inputs[kLstmInitialC].shape, s.state_shape(), "initial_c");
  s.has_peepholes = rnn_input_present(spec, kLstmP);
  if (s.has_peepholes) require_rnn_shape(spec, spec.inputs[kLstmP].shape, Shape{s.directions, 3 * s.hidden}, "P");
  if (s.has_output(spec, kLstmYc)) require_rnn_shape(spec, spec.outputs[kLstmYc].shape, s.state_shape(), "Y_c");
  return s;
}

}  // namespace loom::backend
