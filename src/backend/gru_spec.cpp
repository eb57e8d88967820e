// parse_gru_spec(): the checks every backend's GRU kernel shares.
#include "backend/gru_spec.hpp"

#include <string>

namespace loom::backend {

GruSpec parse_gru_spec(const KernelSpec& spec) {
  constexpr RnnDirectionActivations kDefaults{
      {{RnnActivationKind::sigmoid}, {RnnActivationKind::tanh}, {RnnActivationKind::tanh}}};
  if (spec.outputs.size() > 2) throw_bad_shape(spec, "GRU has at most 2 outputs");
  GruSpec s;
  static_cast<RnnSpec&>(s) = parse_rnn_spec(spec, 3, 6, 2, kDefaults);
  const std::int64_t linear = spec.node->attrs.get_int("linear_before_reset", 0);
  if (linear != 0 && linear != 1) throw_unsupported(spec, "linear_before_reset=" + std::to_string(linear));
  s.linear_before_reset = linear == 1;
  return s;
}

}  // namespace loom::backend
