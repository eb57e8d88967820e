// The chain matcher of the CPU backend's fusion: from the anchor's result, one pattern at a time, as
// long as every reader of the current value is part of the pattern and the value is not needed after
// the Step.
#include "backend/cpu/fusion.hpp"

#include <algorithm>
#include <cmath>

#include "backend/cpu/conv.hpp"
#include "backend/cpu/cpu_stream.hpp"
#include "backend/cpu/matmul.hpp"
#include "graph/ops/elementwise_attrs.hpp"

namespace loom::backend::cpu {
namespace {

bool all_f32(const FusionNode& node) {
  for (const TensorDesc& d : node.spec.inputs)
    if (d.present && d.dtype != DType::f32) return false;
  for (const TensorDesc& d : node.spec.outputs)
    if (d.present && d.dtype != DType::f32) return false;
  return true;
}

const std::string& op_of(const FusionNode& node) { return node.spec.node->op_type; }

// The value of input `index` when it is a constant f32 scalar (an initializer of one element).
std::optional<float> constant_scalar(const FusionNode& node, std::size_t index) {
  if (index >= node.spec.constants.size() || !node.spec.constants[index]) return std::nullopt;
  const Tensor& t = *node.spec.constants[index];
  if (t.dtype() != DType::f32 || t.numel() != 1) return std::nullopt;
  return t.values<float>()[0];
}

// Grows one chain: `members` claimed so far, `value` the chain's current value.
class ChainMatcher {
 public:
  explicit ChainMatcher(const FusionCandidate& candidate) : c_(candidate), value_(candidate.nodes[0].outputs[0]) {}

  // Claims patterns until none fits.
  void grow() {
    while (extend()) {
    }
  }

  const std::vector<std::size_t>& members() const { return members_; }
  Epilogue& epilogue() { return epilogue_; }
  int value() const { return value_; }
  const std::vector<std::pair<std::size_t, std::size_t>>& tensor_operands() const { return tensor_operands_; }

 private:
  // Nodes that are not members (yet) reading `id`.
  std::vector<std::size_t> readers(int id) const {
    std::vector<std::size_t> found;
    for (std::size_t n = 1; n < c_.nodes.size(); ++n) {
      if (is_member(n)) continue;
      const auto& inputs = c_.nodes[n].inputs;
      if (std::find(inputs.begin(), inputs.end(), id) != inputs.end()) found.push_back(n);
    }
    return found;
  }
  bool is_member(std::size_t n) const { return std::find(members_.begin(), members_.end(), n) != members_.end(); }
  bool read_after_step(int id) const {
    return std::find(c_.read_after_step.begin(), c_.read_after_step.end(), id) != c_.read_after_step.end();
  }
  // A pattern-internal value: read only by `reader`, not after the Step.
  bool only_read_by(int id, std::size_t reader) const {
    const auto found = readers(id);
    return !read_after_step(id) && found.size() == 1 && found[0] == reader;
  }
  // Written before the anchor runs: no node of the candidate writes it.
  bool ready_before_anchor(int id) const {
    for (const FusionNode& node : c_.nodes)
      if (std::find(node.outputs.begin(), node.outputs.end(), id) != node.outputs.end()) return false;
    return true;
  }
  const Shape& shape_of_value() const { return c_.nodes[0].spec.outputs[0].shape; }
  // A pointwise node of f32 values with one output of the chain's shape.
  bool fits(std::size_t n, std::size_t input_count) const {
    const FusionNode& node = c_.nodes[n];
    return !node.view && all_f32(node) && node.inputs.size() == input_count && node.outputs.size() == 1 &&
           node.outputs[0] >= 0 && node.spec.outputs[0].shape == shape_of_value();
  }
  // Index of `id` among node n's inputs, or -1.
  int input_position(std::size_t n, int id) const {
    const auto& inputs = c_.nodes[n].inputs;
    const auto it = std::find(inputs.begin(), inputs.end(), id);
    return it == inputs.end() ? -1 : static_cast<int>(it - inputs.begin());
  }

  void claim(std::initializer_list<std::size_t> nodes, EpilogueOp op, int new_value) {
    members_.insert(members_.end(), nodes.begin(), nodes.end());
    std::sort(members_.begin(), members_.end());
    epilogue_.ops.push_back(op);
    value_ = new_value;
  }

  bool extend() {
    if (read_after_step(value_)) return false;  // the fused kernel writes only its last value
    const std::vector<std::size_t> next = readers(value_);
    if (next.size() == 2) return silu(next) || gelu_chain(next);
    if (next.size() == 1) return unary(next[0]) || binary(next[0]);
    return false;
  }

  // Sigmoid(x), then Mul(x, sigmoid) in either order.
  bool silu(const std::vector<std::size_t>& next) {
    for (int flip = 0; flip < 2; ++flip) {
      const std::size_t s = next[flip], m = next[1 - flip];
      if (op_of(c_.nodes[s]) != "Sigmoid" || op_of(c_.nodes[m]) != "Mul" || !fits(s, 1) || !fits(m, 2)) continue;
      const int sigmoid_out = c_.nodes[s].outputs[0];
      const auto& mul_in = c_.nodes[m].inputs;
      const bool pairs =
          (mul_in[0] == value_ && mul_in[1] == sigmoid_out) || (mul_in[1] == value_ && mul_in[0] == sigmoid_out);
      if (!pairs || !only_read_by(sigmoid_out, m)) continue;
      claim({s, m}, EpilogueOp::of(EpilogueKind::silu), c_.nodes[m].outputs[0]);
      return true;
    }
    return false;
  }

  // Div(x, a) -> Erf -> Add(_, b) -> Mul(x, _) -> Mul(_, c), the operands of Add, Mul in any order.
  bool gelu_chain(const std::vector<std::size_t>& next) {
    for (int flip = 0; flip < 2; ++flip) {
      const std::size_t d = next[flip], m1 = next[1 - flip];
      if (op_of(c_.nodes[d]) != "Div" || op_of(c_.nodes[m1]) != "Mul" || !fits(d, 2) || !fits(m1, 2)) continue;
      if (c_.nodes[d].inputs[0] != value_) continue;
      const auto divisor = constant_scalar(c_.nodes[d], 1);
      if (!divisor) continue;
      const auto next_of = [&](int id, std::size_t after) -> std::optional<std::size_t> {
        const auto found = readers(id);
        if (found.size() != 1 || read_after_step(id) || found[0] <= after) return std::nullopt;
        return found[0];
      };
      const auto e = next_of(c_.nodes[d].outputs[0], d);
      if (!e || op_of(c_.nodes[*e]) != "Erf" || !fits(*e, 1)) continue;
      const auto a = next_of(c_.nodes[*e].outputs[0], *e);
      if (!a || op_of(c_.nodes[*a]) != "Add" || !fits(*a, 2)) continue;
      const int erf_at = input_position(*a, c_.nodes[*e].outputs[0]);
      const auto shift = constant_scalar(c_.nodes[*a], erf_at == 0 ? 1 : 0);
      if (!shift) continue;
      if (!only_read_by(c_.nodes[*a].outputs[0], m1)) continue;
      const auto& m1_in = c_.nodes[m1].inputs;
      const int add_out = c_.nodes[*a].outputs[0];
      if (!((m1_in[0] == value_ && m1_in[1] == add_out) || (m1_in[1] == value_ && m1_in[0] == add_out))) continue;
      const auto m2 = next_of(c_.nodes[m1].outputs[0], m1);
      if (!m2 || op_of(c_.nodes[*m2]) != "Mul" || !fits(*m2, 2)) continue;
      const int m1_at = input_position(*m2, c_.nodes[m1].outputs[0]);
      const auto half = constant_scalar(c_.nodes[*m2], m1_at == 0 ? 1 : 0);
      if (!half) continue;
      EpilogueOp op = EpilogueOp::of(EpilogueKind::gelu_erf_chain);
      op.alpha = *divisor;
      op.beta = *shift;
      op.gamma = *half;
      claim({d, *e, *a, m1, *m2}, op, c_.nodes[*m2].outputs[0]);
      return true;
    }
    return false;
  }

  bool unary(std::size_t n) {
    if (!fits(n, 1)) return false;
    const std::string& op = op_of(c_.nodes[n]);
    const Attributes& attrs = c_.nodes[n].spec.node->attrs;
    EpilogueOp e;
    if (op == "Relu") {
      e.kind = EpilogueKind::relu;
    } else if (op == "LeakyRelu") {
      e.kind = EpilogueKind::leaky_relu, e.alpha = attrs.get_float("alpha", 0.01f);
    } else if (op == "Sigmoid") {
      e.kind = EpilogueKind::sigmoid;
    } else if (op == "Tanh") {
      e.kind = EpilogueKind::tanh;
    } else if (op == "HardSigmoid") {
      e.kind = EpilogueKind::hard_sigmoid, e.alpha = attrs.get_float("alpha", 0.2f),
      e.beta = attrs.get_float("beta", 0.5f);
    } else if (op == "HardSwish") {
      e.kind = EpilogueKind::hard_swish;
    } else if (op == "Gelu") {
      const auto approximation = graph::gelu_approximation(attrs);
      if (!approximation) return false;  // the unfused kernel reports it
      e.kind = *approximation == graph::GeluApproximation::tanh ? EpilogueKind::gelu_tanh : EpilogueKind::gelu_erf;
    } else {
      return false;
    }
    claim({n}, e, c_.nodes[n].outputs[0]);
    return true;
  }

  // Add, Sub, Mul, Div of the chain's value and a constant scalar or a tensor ready before the
  // anchor runs (a bias, a residual, a mask) that broadcasts to it.
  bool binary(std::size_t n) {
    const std::string& op = op_of(c_.nodes[n]);
    EpilogueOp e;
    if (op == "Add") {
      e.kind = EpilogueKind::add;
    } else if (op == "Sub") {
      e.kind = EpilogueKind::sub;
    } else if (op == "Mul") {
      e.kind = EpilogueKind::mul;
    } else if (op == "Div") {
      e.kind = EpilogueKind::div;
    } else {
      return false;
    }
    if (!fits(n, 2)) return false;
    const auto& inputs = c_.nodes[n].inputs;
    if (inputs[0] == inputs[1]) return false;  // x op x
    const std::size_t other = inputs[0] == value_ ? 1 : 0;
    EpilogueOperand& operand = e.operand;
    operand.operand_first = other == 0;
    if (const auto scalar = constant_scalar(c_.nodes[n], other)) {
      operand.scalar = *scalar;
    } else {
      if (!ready_before_anchor(inputs[other])) return false;
      operand.is_scalar = false;
      operand.shape = c_.nodes[n].spec.inputs[other].shape;
      operand.constant = c_.nodes[n].spec.constants[other] != nullptr;
      operand.input = other;  // within node n; match_epilogue makes it an index into run()'s inputs
      tensor_operands_.push_back({epilogue_.ops.size(), n});
    }
    claim({n}, e, c_.nodes[n].outputs[0]);
    return true;
  }

 private:
  const FusionCandidate& c_;
  // For each tensor operand: (index of its op, the node reading it).
  std::vector<std::pair<std::size_t, std::size_t>> tensor_operands_;
  std::vector<std::size_t> members_{0};
  Epilogue epilogue_;
  int value_;
};

}  // namespace

std::optional<EpilogueMatch> match_epilogue(const FusionCandidate& candidate) {
  if (candidate.nodes.empty()) return std::nullopt;
  const FusionNode& anchor = candidate.nodes[0];
  const std::string& op = op_of(anchor);
  if (op != "Conv" && op != "MatMul" && op != "Gemm") return std::nullopt;
  if (!all_f32(anchor) || anchor.outputs.empty() || anchor.outputs[0] < 0) return std::nullopt;
  ChainMatcher matcher(candidate);
  matcher.grow();
  if (matcher.epilogue().ops.empty()) return std::nullopt;

  EpilogueMatch match;
  match.members = matcher.members();
  FusedRun& run = match.run;
  run.epilogue = std::move(matcher.epilogue());
  run.spec.node = anchor.spec.node;
  run.spec.backend = anchor.spec.backend;
  run.spec.persistent_grid_max_sms = anchor.spec.persistent_grid_max_sms;
  run.spec.device_float_dtype = anchor.spec.device_float_dtype;
  std::vector<std::size_t> first_input(candidate.nodes.size(), 0);
  for (std::size_t m : match.members) {
    const KernelSpec& spec = candidate.nodes[m].spec;
    first_input[m] = run.spec.inputs.size();
    run.spec.inputs.insert(run.spec.inputs.end(), spec.inputs.begin(), spec.inputs.end());
    run.spec.constants.insert(run.spec.constants.end(), spec.constants.begin(), spec.constants.end());
  }
  for (std::size_t m : match.members) {
    const FusionNode& node = candidate.nodes[m];
    for (std::size_t j = 0; j < node.outputs.size(); ++j) {
      if (node.outputs[j] == matcher.value()) run.output_slot = run.spec.outputs.size();
      run.spec.outputs.push_back(node.spec.outputs[j]);
    }
  }
  for (const auto& [op_index, node] : matcher.tensor_operands())
    run.epilogue.ops[op_index].operand.input += first_input[node];
  return match;
}

std::optional<FusedKernel> create_fused_kernel(const FusionCandidate& candidate) {
  auto match = match_epilogue(candidate);
  if (!match) return std::nullopt;
  const KernelSpec& anchor = candidate.nodes[0].spec;
  const std::string& op = anchor.node->op_type;
  std::unique_ptr<OpKernel> kernel;
  if (op == "Conv")
    kernel = make_fused_conv_kernel(anchor, &match->run);
  else if (op == "MatMul")
    kernel = make_fused_matmul_kernel(anchor, &match->run);
  else
    kernel = make_fused_gemm_kernel(anchor, &match->run);
  FusedKernel fused;
  fused.members = std::move(match->members);
  // Run in its stream's order on the stream's thread count, as every kernel the backend creates.
  fused.kernel = std::make_unique<StreamOrderedKernel>(match->run.spec, std::move(kernel));
  return fused;
}

}  // namespace loom::backend::cpu
