// parse_rnn_spec(): the checks LSTM and GRU kernels of every backend share.
#include "backend/rnn_spec.hpp"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace loom::backend {
namespace {

struct ActivationInfo {
  const char* name;  // lower case; ONNX names are matched case-insensitively (as onnxruntime does)
  RnnActivationKind kind;
  bool takes_alpha, takes_beta;
  float default_alpha, default_beta;
};

constexpr ActivationInfo kActivations[] = {
    {"sigmoid", RnnActivationKind::sigmoid, false, false, 0.0f, 0.0f},
    {"tanh", RnnActivationKind::tanh, false, false, 0.0f, 0.0f},
    {"relu", RnnActivationKind::relu, false, false, 0.0f, 0.0f},
    {"affine", RnnActivationKind::affine, true, true, 1.0f, 0.0f},
    {"leakyrelu", RnnActivationKind::leaky_relu, true, false, 0.01f, 0.0f},
    {"thresholdedrelu", RnnActivationKind::thresholded_relu, true, false, 1.0f, 0.0f},
    {"scaledtanh", RnnActivationKind::scaled_tanh, true, true, 1.0f, 1.0f},
    {"hardsigmoid", RnnActivationKind::hard_sigmoid, true, true, 0.2f, 0.5f},
    {"elu", RnnActivationKind::elu, true, false, 1.0f, 0.0f},
    {"softsign", RnnActivationKind::softsign, false, false, 0.0f, 0.0f},
    {"softplus", RnnActivationKind::softplus, false, false, 0.0f, 0.0f},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::array<RnnDirectionActivations, 2> parse_activations(const KernelSpec& spec, std::int64_t directions,
                                                         std::size_t functions,
                                                         const RnnDirectionActivations& defaults) {
  std::array<RnnDirectionActivations, 2> out{defaults, defaults};
  const Attributes& attrs = spec.node->attrs;
  if (!attrs.has("activations")) {
    if (attrs.has("activation_alpha") || attrs.has("activation_beta"))
      throw_unsupported(spec, "activation_alpha/activation_beta without an activations list");
    return out;
  }
  const std::vector<std::string> names = attrs.get_strings("activations");
  const std::size_t wanted = functions * static_cast<std::size_t>(directions);
  // A bidirectional node may list one direction's functions; both directions then use them.
  if (names.size() != wanted && names.size() != functions)
    throw_unsupported(
        spec, "activations lists " + std::to_string(names.size()) + " functions, expected " + std::to_string(wanted));
  const std::vector<float> alphas = attrs.get_floats("activation_alpha");
  const std::vector<float> betas = attrs.get_floats("activation_beta");
  std::size_t next_alpha = 0, next_beta = 0;
  std::vector<RnnActivation> parsed;
  for (const std::string& name : names) {
    const std::string key = lower(name);
    const auto* info = std::find_if(std::begin(kActivations), std::end(kActivations),
                                    [&](const ActivationInfo& a) { return key == a.name; });
    if (info == std::end(kActivations)) throw_unsupported(spec, "activation function '" + name + "'");
    RnnActivation f{info->kind, info->default_alpha, info->default_beta};
    if (info->takes_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (info->takes_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    parsed.push_back(f);
  }
  for (std::int64_t d = 0; d < directions; ++d)
    for (std::size_t i = 0; i < functions; ++i)
      out[static_cast<std::size_t>(d)][i] =
          parsed[(names.size() == functions ? 0 : static_cast<std::size_t>(d) * functions) + i];
  return out;
}

}  // namespace

bool rnn_input_present(const KernelSpec& spec, std::size_t i) {
  return i < spec.inputs.size() && spec.inputs[i].present;
}
bool rnn_output_present(const KernelSpec& spec, std::size_t o) {
  return o < spec.outputs.size() && spec.outputs[o].present;
}

void require_rnn_shape(const KernelSpec& spec, const Shape& got, const Shape& want, const char* what) {
  if (got != want)
    throw_bad_shape(spec, std::string(what) + " is " + got.to_string() + ", expected " + want.to_string());
}

RnnSpec parse_rnn_spec(const KernelSpec& spec, std::int64_t gates, std::size_t max_inputs, std::size_t functions,
                       const RnnDirectionActivations& defaults) {
  const std::string& op = spec.node->op_type;
  if (spec.inputs.size() < 3 || spec.inputs.size() > max_inputs)
    throw_bad_shape(spec, op + " takes 3 to " + std::to_string(max_inputs) + " inputs");
  for (std::size_t i = 0; i < 3; ++i)
    if (!rnn_input_present(spec, i)) throw_bad_shape(spec, "inputs X, W and R are required");

  const Attributes& attrs = spec.node->attrs;
  RnnSpec s;
  // A layout or direction outside ONNX is an attribute this backend cannot run.
  graph::RnnLayout layout;
  try {
    layout = graph::rnn_layout(attrs);
  } catch (const Error& e) {
    throw_unsupported(spec, e.what());
  }
  static_cast<graph::RnnLayout&>(s) = layout;
  if (attrs.has("clip")) {
    s.clip = attrs.get_float("clip", 0.0f);
    if (!(s.clip > 0.0f)) throw_unsupported(spec, "clip must be positive, got " + std::to_string(s.clip));
  }
  s.activations = parse_activations(spec, s.directions, functions, defaults);

  const Shape& x = spec.inputs[0].shape;
  const Shape& w = spec.inputs[1].shape;
  const Shape& r = spec.inputs[2].shape;
  if (x.rank() != 3 || w.rank() != 3 || r.rank() != 3)
    throw_bad_shape(spec,
                    "X, W and R must have rank 3, got " + x.to_string() + ", " + w.to_string() + ", " + r.to_string());
  static_cast<graph::RnnGeometry&>(s) = graph::rnn_geometry(layout, x, r[2]);
  if (attrs.has("hidden_size") && attrs.get_int("hidden_size", 0) != s.hidden)
    throw_bad_shape(
        spec, "hidden_size " + std::to_string(attrs.get_int("hidden_size", 0)) + " does not match R " + r.to_string());
  require_rnn_shape(spec, w, s.w_shape(gates), "W");
  require_rnn_shape(spec, r, s.r_shape(gates), "R");
  s.has_bias = rnn_input_present(spec, 3);
  if (s.has_bias) require_rnn_shape(spec, spec.inputs[3].shape, s.b_shape(gates), "B");
  s.has_sequence_lens = rnn_input_present(spec, 4);
  if (s.has_sequence_lens) {
    s.sequence_lens_dtype = spec.inputs[4].dtype;
    if (s.sequence_lens_dtype != DType::i32 && s.sequence_lens_dtype != DType::i64)
      throw_unsupported(
          spec, "sequence_lens dtype " + std::string(dtype_name(s.sequence_lens_dtype)) + " (expects i32 or i64)");
    require_rnn_shape(spec, spec.inputs[4].shape, Shape{s.batch}, "sequence_lens");
  }
  s.has_initial_h = rnn_input_present(spec, 5);
  if (s.has_initial_h) require_rnn_shape(spec, spec.inputs[5].shape, s.state_shape(), "initial_h");
  if (rnn_output_present(spec, 0)) require_rnn_shape(spec, spec.outputs[0].shape, s.y_shape(), "Y");
  if (rnn_output_present(spec, 1)) require_rnn_shape(spec, spec.outputs[1].shape, s.state_shape(), "Y_h");
  return s;
}

void RnnSpec::read_lengths(const void* sequence_lens, const std::string& op, const std::string& node,
                           std::int64_t* lengths) const {
  for (std::int64_t b = 0; b < batch; ++b) {
    if (!has_sequence_lens || !sequence_lens) {
      lengths[b] = steps;
      continue;
    }
    const std::int64_t length = sequence_lens_dtype == DType::i32 ? static_cast<const std::int32_t*>(sequence_lens)[b]
                                                                  : static_cast<const std::int64_t*>(sequence_lens)[b];
    if (length < 0 || length > steps)
      throw Error(ErrorCode::invalid_argument, op + " node '" + node + "': sequence_lens[" + std::to_string(b) +
                                                   "] = " + std::to_string(length) + " is outside [0, " +
                                                   std::to_string(steps) + "]");
    lengths[b] = length;
  }
}

}  // namespace loom::backend
