// CPU backend: GRU against a hand-computed step and a per-row double-precision loop written
// straight from the ONNX equations (gate order z, r, h), for every direction, both
// linear_before_reset modes, both layouts, sequence lengths and the activations attribute.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/ops.hpp"
#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

struct GruReference {
  std::vector<double> y, y_h;
};

double activate(std::string name, double x) {
  name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));  // ONNX names match in any case
  if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return x > 0 ? x : 0;
  ADD_FAILURE() << "reference has no activation " << name;
  return x;
}

struct GruCase {
  std::int64_t steps = 4, batch = 3, input = 3, hidden = 5;
  std::string direction = "forward";
  bool linear_before_reset = false, bias = true, initial_h = true, batch_major = false;
  std::optional<std::vector<std::int64_t>> lengths;
  std::vector<std::string> activations;  // empty: Sigmoid, Tanh; else 2 per direction
  float clip = 0.0f;
  std::uint32_t seed = 1;
};

// Tensors in layout 0 ([T, B, ...] and [D, B, H]) are indexed through these for layout 1.
struct Layout {
  const GruCase& c;
  std::int64_t dirs;
  std::int64_t x(std::int64_t t, std::int64_t b, std::int64_t i) const {
    return (c.batch_major ? b * c.steps + t : t * c.batch + b) * c.input + i;
  }
  std::int64_t y(std::int64_t t, std::int64_t d, std::int64_t b, std::int64_t j) const {
    return (c.batch_major ? (b * c.steps + t) * dirs + d : (t * dirs + d) * c.batch + b) * c.hidden + j;
  }
  std::int64_t state(std::int64_t d, std::int64_t b, std::int64_t j) const {
    return (c.batch_major ? b * dirs + d : d * c.batch + b) * c.hidden + j;
  }
};

GruReference gru_reference(const GruCase& c, const Tensor& x, const Tensor& w, const Tensor& r, const Tensor& bias,
                           const Tensor& h0) {
  const std::int64_t dirs = w.shape()[0], H = c.hidden;
  const Layout at{c, dirs};
  const auto xv = x.values<float>(), wv = w.values<float>(), rv = r.values<float>();
  const auto bv = bias.values<float>(), hv = h0.values<float>();
  GruReference out;
  out.y.assign(static_cast<std::size_t>(c.steps * dirs * c.batch * H), 0.0);
  out.y_h.assign(static_cast<std::size_t>(dirs * c.batch * H), 0.0);
  for (std::int64_t d = 0; d < dirs; ++d) {
    const bool reverse = c.direction == "reverse" || d == 1;
    const std::string f = c.activations.empty() ? "Sigmoid" : c.activations[2 * d];
    const std::string g = c.activations.empty() ? "Tanh" : c.activations[2 * d + 1];
    const auto clip = [&](double v) { return c.clip > 0 ? std::fmin(std::fmax(v, -c.clip), c.clip) : v; };
    // W·x, R·h and the biases for gate `gate` (0 z, 1 r, 2 h), unit j.
    const auto wx = [&](std::int64_t gate, std::int64_t j, std::int64_t t, std::int64_t b) {
      double s = 0;
      for (std::int64_t i = 0; i < c.input; ++i)
        s += double(xv[at.x(t, b, i)]) * wv[(d * 3 * H + gate * H + j) * c.input + i];
      return s;
    };
    const auto rh = [&](std::int64_t gate, std::int64_t j, const std::vector<double>& h) {
      double s = 0;
      for (std::int64_t k = 0; k < H; ++k) s += h[k] * rv[(d * 3 * H + gate * H + j) * H + k];
      return s;
    };
    const auto wb = [&](std::int64_t gate, std::int64_t j) {
      return c.bias ? double(bv[d * 6 * H + gate * H + j]) : 0.0;
    };
    const auto rb = [&](std::int64_t gate, std::int64_t j) {
      return c.bias ? double(bv[d * 6 * H + 3 * H + gate * H + j]) : 0.0;
    };
    for (std::int64_t b = 0; b < c.batch; ++b) {
      std::vector<double> h(H, 0.0);
      if (c.initial_h)
        for (std::int64_t j = 0; j < H; ++j) h[j] = hv[at.state(d, b, j)];
      const std::int64_t length = c.lengths ? (*c.lengths)[b] : c.steps;
      for (std::int64_t s = 0; s < length; ++s) {
        const std::int64_t t = reverse ? length - 1 - s : s;
        std::vector<double> z(H), rr(H), next(H);
        for (std::int64_t j = 0; j < H; ++j) {
          z[j] = activate(f, clip(wx(0, j, t, b) + rh(0, j, h) + wb(0, j) + rb(0, j)));
          rr[j] = activate(f, clip(wx(1, j, t, b) + rh(1, j, h) + wb(1, j) + rb(1, j)));
        }
        std::vector<double> reset_h(H);
        for (std::int64_t j = 0; j < H; ++j) reset_h[j] = rr[j] * h[j];
        for (std::int64_t j = 0; j < H; ++j) {
          const double pre = c.linear_before_reset ? wx(2, j, t, b) + rr[j] * (rh(2, j, h) + rb(2, j)) + wb(2, j)
                                                   : wx(2, j, t, b) + rh(2, j, reset_h) + rb(2, j) + wb(2, j);
          const double cand = activate(g, clip(pre));
          next[j] = (1 - z[j]) * cand + z[j] * h[j];
        }
        h = next;
        for (std::int64_t j = 0; j < H; ++j) out.y[at.y(t, d, b, j)] = h[j];
      }
      for (std::int64_t j = 0; j < H; ++j) out.y_h[at.state(d, b, j)] = h[j];
    }
  }
  return out;
}

void check_gru(const GruCase& c) {
  const std::int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  const Shape x_shape = c.batch_major ? Shape{c.batch, c.steps, c.input} : Shape{c.steps, c.batch, c.input};
  const Shape state = c.batch_major ? Shape{c.batch, dirs, c.hidden} : Shape{dirs, c.batch, c.hidden};
  const Shape y_shape =
      c.batch_major ? Shape{c.batch, c.steps, dirs, c.hidden} : Shape{c.steps, dirs, c.batch, c.hidden};
  const Tensor x = random_tensor(x_shape, c.seed);
  const Tensor w = random_tensor(Shape{dirs, 3 * c.hidden, c.input}, c.seed + 1, -0.6f, 0.6f);
  const Tensor r = random_tensor(Shape{dirs, 3 * c.hidden, c.hidden}, c.seed + 2, -0.6f, 0.6f);
  const Tensor b = random_tensor(Shape{dirs, 6 * c.hidden}, c.seed + 3, -0.5f, 0.5f);
  const Tensor h0 = random_tensor(state, c.seed + 4);
  std::vector<std::int32_t> lengths32;
  if (c.lengths)
    for (auto v : *c.lengths) lengths32.push_back(static_cast<std::int32_t>(v));
  std::vector<OpInput> inputs{x, w, r};
  inputs.push_back(c.bias ? OpInput(b) : OpInput::absent());
  inputs.push_back(c.lengths ? OpInput(Tensor::from<std::int32_t>(Shape{c.batch}, lengths32)) : OpInput::absent());
  inputs.push_back(c.initial_h ? OpInput(h0) : OpInput::absent());
  Attributes attrs{{"hidden_size", c.hidden},
                   {"direction", c.direction},
                   {"linear_before_reset", std::int64_t{c.linear_before_reset}},
                   {"layout", std::int64_t{c.batch_major}}};
  if (!c.activations.empty()) attrs.set("activations", c.activations);
  if (c.clip > 0) attrs.set("clip", c.clip);
  const OpResult result = run_cpu_op("GRU", attrs, inputs, {{DType::f32, y_shape}, {DType::f32, state}});
  const GruReference ref = gru_reference(c, x, w, r, b, h0);
  const std::string label = c.direction + " lbr " + std::to_string(c.linear_before_reset) + (c.bias ? " bias" : "") +
                            (c.initial_h ? " initial" : "") + (c.lengths ? " lengths" : "") +
                            (c.batch_major ? " layout 1" : "") + (c.clip > 0 ? " clip" : "");
  EXPECT_TRUE(all_close(result[0], ref.y, 1e-5, 1e-4)) << "Y, " << label;
  EXPECT_TRUE(all_close(result[1], ref.y_h, 1e-5, 1e-4)) << "Y_h, " << label;
}

}  // namespace

TEST(CpuOps, GruOneStepByHand) {
  // I = H = 1, x = 1, h0 = 0.5, W = [wz wr wh] = [0.5 -0.5 1], R = [0.25 0.5 -1], no bias.
  // z = σ(0.5 + 0.125) = σ(0.625), r = σ(-0.5 + 0.25) = σ(-0.25).
  // linear_before_reset 0: h~ = tanh(1 + (r·0.5)·(-1)); 1: h~ = tanh(1 + r·(0.5·(-1))) (same without bias).
  // h1 = (1 - z)·h~ + z·0.5.
  const Tensor x = Tensor::from<float>(Shape{1, 1, 1}, {1.0f});
  const Tensor w = Tensor::from<float>(Shape{1, 3, 1}, {0.5f, -0.5f, 1.0f});
  const Tensor r = Tensor::from<float>(Shape{1, 3, 1}, {0.25f, 0.5f, -1.0f});
  const Tensor h0 = Tensor::from<float>(Shape{1, 1, 1}, {0.5f});
  const double z = 1 / (1 + std::exp(-0.625)), rg = 1 / (1 + std::exp(0.25));
  const double cand = std::tanh(1 - rg * 0.5);
  const double h1 = (1 - z) * cand + z * 0.5;
  for (std::int64_t lbr : {0, 1}) {
    const OpResult out = run_cpu_op("GRU", {{"hidden_size", std::int64_t{1}}, {"linear_before_reset", lbr}},
                                    {x, w, r, OpInput::absent(), OpInput::absent(), h0},
                                    {{DType::f32, Shape{1, 1, 1, 1}}, {DType::f32, Shape{1, 1, 1}}});
    EXPECT_TRUE(all_close(out[0], {h1}, 1e-6, 1e-5)) << "lbr " << lbr;
    EXPECT_TRUE(all_close(out[1], {h1}, 1e-6, 1e-5)) << "lbr " << lbr;
  }
  // With Rbh = 2 the modes differ: 0 adds it outside r, 1 scales it by r.
  const Tensor b = Tensor::from<float>(Shape{1, 6}, {0, 0, 0, 0, 0, 2.0f});
  const double cand0 = std::tanh(1 - rg * 0.5 + 2), cand1 = std::tanh(1 + rg * (-0.5 + 2));
  const OpResult out0 =
      run_cpu_op("GRU", {{"linear_before_reset", std::int64_t{0}}}, {x, w, r, b, OpInput::absent(), h0},
                 {OpOutput::absent(), {DType::f32, Shape{1, 1, 1}}});
  const OpResult out1 =
      run_cpu_op("GRU", {{"linear_before_reset", std::int64_t{1}}}, {x, w, r, b, OpInput::absent(), h0},
                 {OpOutput::absent(), {DType::f32, Shape{1, 1, 1}}});
  EXPECT_TRUE(all_close(out0[1], {(1 - z) * cand0 + z * 0.5}, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(out1[1], {(1 - z) * cand1 + z * 0.5}, 1e-6, 1e-5));
}

TEST(CpuOps, GruDirectionsAndLinearBeforeReset) {
  std::uint32_t seed = 100;
  for (const std::string direction : {"forward", "reverse", "bidirectional"})
    for (const bool lbr : {false, true})
      for (const bool bias : {false, true})
        for (const bool initial : {false, true})
          check_gru(
              {.direction = direction, .linear_before_reset = lbr, .bias = bias, .initial_h = initial, .seed = seed++});
}

TEST(CpuOps, GruBatchMajorLayout) {
  std::uint32_t seed = 200;
  for (const std::string direction : {"forward", "reverse", "bidirectional"})
    for (const bool lbr : {false, true})
      check_gru({.direction = direction, .linear_before_reset = lbr, .batch_major = true, .seed = seed++});
  check_gru(
      {.direction = "bidirectional", .batch_major = true, .lengths = std::vector<std::int64_t>{4, 1, 3}, .seed = 210});
}

TEST(CpuOps, GruSequenceLengths) {
  std::uint32_t seed = 300;
  for (const std::string direction : {"forward", "reverse", "bidirectional"})
    for (const bool lbr : {false, true})
      check_gru({.steps = 5,
                 .batch = 4,
                 .direction = direction,
                 .linear_before_reset = lbr,
                 .lengths = std::vector<std::int64_t>{5, 2, 0, 3},
                 .seed = seed++});
}

TEST(CpuOps, GruLargerSizes) {
  // Batch 9 takes the packed-GEMM path for the recurrent products; hidden 37 gives 111 gates.
  check_gru({.steps = 6, .batch = 9, .input = 20, .hidden = 37, .direction = "bidirectional", .seed = 400});
  check_gru({.steps = 6,
             .batch = 9,
             .input = 20,
             .hidden = 37,
             .direction = "bidirectional",
             .linear_before_reset = true,
             .seed = 401});
}

TEST(CpuOps, GruActivationsAndClip) {
  check_gru({.activations = {"Relu", "Tanh"}, .seed = 500});
  check_gru({.direction = "bidirectional", .activations = {"Sigmoid", "Relu", "Tanh", "Sigmoid"}, .seed = 501});
  check_gru({.linear_before_reset = true, .clip = 0.3f, .seed = 502});
  check_gru({.direction = "reverse", .activations = {"sigmoid", "relu"}, .clip = 0.5f, .seed = 503});  // any case
}

TEST(CpuOps, GruOmittedOutputs) {
  const GruCase c{.direction = "bidirectional"};
  const Tensor x = random_tensor(Shape{c.steps, c.batch, c.input}, 1);
  const Tensor w = random_tensor(Shape{2, 3 * c.hidden, c.input}, 2, -0.6f, 0.6f);
  const Tensor r = random_tensor(Shape{2, 3 * c.hidden, c.hidden}, 3, -0.6f, 0.6f);
  const Tensor b = random_tensor(Shape{2, 6 * c.hidden}, 4, -0.5f, 0.5f);
  const Tensor h0 = random_tensor(Shape{2, c.batch, c.hidden}, 5);
  const GruReference ref = gru_reference(c, x, w, r, b, h0);
  const Attributes attrs{{"direction", std::string("bidirectional")}};
  const Shape state{2, c.batch, c.hidden};
  const OpResult only_h =
      run_cpu_op("GRU", attrs, {x, w, r, b, OpInput::absent(), h0}, {OpOutput::absent(), {DType::f32, state}});
  EXPECT_EQ(only_h[0].bytes(), 0u);
  EXPECT_TRUE(all_close(only_h[1], ref.y_h, 1e-5, 1e-4));
  const OpResult only_y = run_cpu_op("GRU", attrs, {x, w, r, b, OpInput::absent(), h0},
                                     {{DType::f32, Shape{c.steps, 2, c.batch, c.hidden}}});
  EXPECT_TRUE(all_close(only_y[0], ref.y, 1e-5, 1e-4));
}

TEST(CpuOps, GruRejectsBadAttributesAndShapes) {
  const Tensor x = random_tensor(Shape{2, 1, 3}, 1);
  const Tensor w = random_tensor(Shape{1, 6, 3}, 2);
  const Tensor r = random_tensor(Shape{1, 6, 2}, 3);
  const std::vector<OpOutput> outputs{{DType::f32, Shape{2, 1, 1, 2}}};
  const auto error = [&](Attributes attrs, std::vector<OpInput> inputs = {}) {
    if (inputs.empty()) inputs = {x, w, r};
    return create_error("GRU", std::move(attrs), inputs, outputs);
  };
  EXPECT_EQ(error({{"hidden_size", std::int64_t{2}}}), std::nullopt);
  EXPECT_EQ(error({{"hidden_size", std::int64_t{3}}}), ErrorCode::shape_mismatch);
  EXPECT_EQ(error({{"direction", std::string("sideways")}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"activations", std::vector<std::string>{"Relu"}}}), ErrorCode::unsupported);  // needs 2
  EXPECT_EQ(error({{"activations", std::vector<std::string>{"Sigmoid", "Swish"}}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"linear_before_reset", std::int64_t{2}}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"layout", std::int64_t{2}}}), ErrorCode::unsupported);
  EXPECT_EQ(error({}, {x, random_tensor(Shape{1, 8, 3}, 4), r}), ErrorCode::shape_mismatch);  // LSTM-sized W
  EXPECT_EQ(error({}, {x, w, r, random_tensor(Shape{1, 8}, 5)}), ErrorCode::shape_mismatch);  // B must be [1, 12]
  // Messages name the op and the node.
  const auto backend = backend::make_cpu_backend();
  const std::vector<OpInput> inputs{x, w, r};
  const Node node = make_node("GRU", {{"direction", std::string("sideways")}}, inputs.size(), outputs, &inputs);
  try {
    (void)backend->create_kernel(make_spec(node, inputs, outputs));
    FAIL() << "direction 'sideways' should be rejected";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GRU"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_GRU"), std::string::npos) << e.what();
  }
}

TEST(CpuOps, GruSequenceLengthOutOfRangeThrows) {
  const Tensor x = random_tensor(Shape{2, 1, 3}, 1);
  const Tensor w = random_tensor(Shape{1, 6, 3}, 2);
  const Tensor r = random_tensor(Shape{1, 6, 2}, 3);
  const Tensor lengths = Tensor::from<std::int32_t>(Shape{1}, {3});
  try {
    (void)run_cpu_op("GRU", {}, {x, w, r, OpInput::absent(), lengths}, {{DType::f32, Shape{2, 1, 1, 2}}});
    FAIL() << "sequence_lens 3 > 2 steps should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

TEST(ShapeInference, GruOutputsBothLayouts) {
  Node node;
  node.op_type = "GRU";
  node.outputs = {"y", "y_h"};
  node.attrs.set("direction", std::string("bidirectional"));
  const ValueInfo x{"x", DType::f32, Shape{7, 3, 4}, {}};
  const ValueInfo w{"w", DType::f32, Shape{2, 15, 4}, {}};
  const ValueInfo r{"r", DType::f32, Shape{2, 15, 5}, {}};
  const std::vector<const ValueInfo*> inputs{&x, &w, &r};
  const std::vector<const Tensor*> constants(3, nullptr);
  auto outs = graph::infer_node(node, inputs, constants);
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].shape, (Shape{7, 2, 3, 5}));
  EXPECT_EQ(outs[1].shape, (Shape{2, 3, 5}));
  node.attrs.set("layout", std::int64_t{1});  // X is now [batch 7, seq 3, input 4]
  outs = graph::infer_node(node, inputs, constants);
  EXPECT_EQ(outs[0].shape, (Shape{7, 3, 2, 5}));
  EXPECT_EQ(outs[1].shape, (Shape{7, 2, 5}));
}
