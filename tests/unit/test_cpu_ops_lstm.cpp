// CPU backend: LSTM against a hand-computed two-step cell and a per-row double-precision
// reference of the ONNX equations (gate order i, o, f, c), including peepholes, layout=1, the
// activations attribute, clip and input_forget.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

struct LstmReference {
  std::vector<double> y, y_h, y_c;
};

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double activate(const std::string& name, double x) {
  if (name == "Sigmoid") return sigmoid(x);
  if (name == "Tanh") return std::tanh(x);
  if (name == "Relu") return x > 0 ? x : 0;
  ADD_FAILURE() << "reference has no activation " << name;
  return x;
}

// What the ONNX conformance cases add to the plain LSTM.
struct LstmExtras {
  const Tensor* peepholes = nullptr;     // [D, 3H]: i, o, f
  bool batch_major = false;              // layout=1: X [B, T, I], Y [B, T, D, H], states [B, D, H]
  std::vector<std::string> activations;  // empty: Sigmoid, Tanh, Tanh; else 3 per direction
  double clip = 0.0;
  bool input_forget = false;
};

// Each batch row runs on its own over its valid prefix, straight from the ONNX equations.
LstmReference lstm_reference(const Tensor& x, const Tensor& w, const Tensor& r, const Tensor* bias,
                             const std::vector<std::int64_t>* lengths, const Tensor* initial_h, const Tensor* initial_c,
                             const std::string& direction, const LstmExtras& extras = {}) {
  const bool bm = extras.batch_major;
  const std::int64_t steps = x.shape()[bm ? 1 : 0], batch = x.shape()[bm ? 0 : 1], input = x.shape()[2];
  const std::int64_t dirs = w.shape()[0], hidden = r.shape()[2];
  const auto xv = x.values<float>();
  const auto wv = w.values<float>();
  const auto rv = r.values<float>();
  LstmReference out;
  out.y.assign(static_cast<std::size_t>(steps * dirs * batch * hidden), 0.0);
  out.y_h.assign(static_cast<std::size_t>(dirs * batch * hidden), 0.0);
  out.y_c = out.y_h;
  const auto x_at = [&](std::int64_t t, std::int64_t b, std::int64_t i) {
    return ((bm ? b * steps + t : t * batch + b)) * input + i;
  };
  const auto y_at = [&](std::int64_t t, std::int64_t d, std::int64_t b, std::int64_t j) {
    return (bm ? (b * steps + t) * dirs + d : (t * dirs + d) * batch + b) * hidden + j;
  };
  const auto state_at = [&](std::int64_t d, std::int64_t b, std::int64_t j) {
    return (bm ? b * dirs + d : d * batch + b) * hidden + j;
  };
  const auto clip = [&](double v) { return extras.clip > 0 ? std::fmin(std::fmax(v, -extras.clip), extras.clip) : v; };
  for (std::int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const auto fn = [&](int k) {
      static const char* defaults[] = {"Sigmoid", "Tanh", "Tanh"};
      return extras.activations.empty() ? std::string(defaults[k]) : extras.activations[3 * d + k];
    };
    const auto peep = [&](int k, std::int64_t j) {
      return extras.peepholes ? double(extras.peepholes->values<float>()[d * 3 * hidden + k * hidden + j]) : 0.0;
    };
    for (std::int64_t b = 0; b < batch; ++b) {
      std::vector<double> h(hidden, 0.0), c(hidden, 0.0);
      for (std::int64_t j = 0; j < hidden; ++j) {
        if (initial_h) h[j] = initial_h->values<float>()[state_at(d, b, j)];
        if (initial_c) c[j] = initial_c->values<float>()[state_at(d, b, j)];
      }
      const std::int64_t length = lengths ? (*lengths)[b] : steps;
      for (std::int64_t s = 0; s < length; ++s) {
        const std::int64_t t = reverse ? length - 1 - s : s;
        std::vector<double> z(4 * hidden, 0.0);
        for (std::int64_t g = 0; g < 4 * hidden; ++g) {
          double sum = 0;
          for (std::int64_t i = 0; i < input; ++i)
            sum += double(xv[x_at(t, b, i)]) * wv[(d * 4 * hidden + g) * input + i];
          for (std::int64_t k = 0; k < hidden; ++k) sum += h[k] * rv[(d * 4 * hidden + g) * hidden + k];
          if (bias)
            sum += double(bias->values<float>()[d * 8 * hidden + g]) +
                   bias->values<float>()[d * 8 * hidden + 4 * hidden + g];
          z[g] = sum;
        }
        for (std::int64_t j = 0; j < hidden; ++j) {
          const double ig = activate(fn(0), clip(z[j] + peep(0, j) * c[j]));
          const double fg = extras.input_forget ? 1 - ig : activate(fn(0), clip(z[2 * hidden + j] + peep(2, j) * c[j]));
          const double cand = activate(fn(1), clip(z[3 * hidden + j]));
          c[j] = fg * c[j] + ig * cand;
          const double og = activate(fn(0), clip(z[hidden + j] + peep(1, j) * c[j]));
          h[j] = og * activate(fn(2), c[j]);
          out.y[y_at(t, d, b, j)] = h[j];
        }
      }
      for (std::int64_t j = 0; j < hidden; ++j) {
        out.y_h[state_at(d, b, j)] = h[j];
        out.y_c[state_at(d, b, j)] = c[j];
      }
    }
  }
  return out;
}

struct LstmCase {
  std::int64_t steps, batch, input, hidden;
  std::string direction;
  bool bias, initial_state;
  std::optional<std::vector<std::int64_t>> lengths;
};

void check_case(const LstmCase& c, std::uint32_t seed) {
  const std::int64_t dirs = c.direction == "bidirectional" ? 2 : 1;
  const Tensor x = random_tensor(Shape{c.steps, c.batch, c.input}, seed);
  const Tensor w = random_tensor(Shape{dirs, 4 * c.hidden, c.input}, seed + 1, -0.5f, 0.5f);
  const Tensor r = random_tensor(Shape{dirs, 4 * c.hidden, c.hidden}, seed + 2, -0.5f, 0.5f);
  const Tensor b = random_tensor(Shape{dirs, 8 * c.hidden}, seed + 3, -0.5f, 0.5f);
  const Tensor h0 = random_tensor(Shape{dirs, c.batch, c.hidden}, seed + 4);
  const Tensor c0 = random_tensor(Shape{dirs, c.batch, c.hidden}, seed + 5);
  std::vector<std::int32_t> lengths32;
  if (c.lengths)
    for (auto v : *c.lengths) lengths32.push_back(static_cast<std::int32_t>(v));

  std::vector<OpInput> inputs{x, w, r};
  inputs.push_back(c.bias ? OpInput(b) : OpInput::absent());
  inputs.push_back(c.lengths ? OpInput(Tensor::from<std::int32_t>(Shape{c.batch}, lengths32)) : OpInput::absent());
  inputs.push_back(c.initial_state ? OpInput(h0) : OpInput::absent());
  inputs.push_back(c.initial_state ? OpInput(c0) : OpInput::absent());
  const Shape state{dirs, c.batch, c.hidden};
  const Attributes attrs{{"hidden_size", c.hidden}, {"direction", c.direction}};
  const OpResult result =
      run_cpu_op("LSTM", attrs, inputs,
                 {{DType::f32, Shape{c.steps, dirs, c.batch, c.hidden}}, {DType::f32, state}, {DType::f32, state}});
  const LstmReference ref =
      lstm_reference(x, w, r, c.bias ? &b : nullptr, c.lengths ? &*c.lengths : nullptr, c.initial_state ? &h0 : nullptr,
                     c.initial_state ? &c0 : nullptr, c.direction);
  const std::string label = c.direction + (c.bias ? " bias" : "") + (c.initial_state ? " initial" : "") +
                            (c.lengths ? " lengths" : "") + " batch " + std::to_string(c.batch);
  EXPECT_TRUE(all_close(result[0], ref.y, 1e-5, 1e-4)) << "Y, " << label;
  EXPECT_TRUE(all_close(result[1], ref.y_h, 1e-5, 1e-4)) << "Y_h, " << label;
  EXPECT_TRUE(all_close(result[2], ref.y_c, 1e-5, 1e-4)) << "Y_c, " << label;
}

}  // namespace

TEST(CpuOps, LstmTwoStepsByHand) {
  // I = H = 1. W = [wi wo wf wc] = [0.1 0.2 0.3 0.4], R = [0.5 -0.5 0.25 -0.25],
  // Wb = [0.01 0.02 0.03 0.04], Rb = [0.05 0.06 0.07 0.08], h0 = 0.2, c0 = -0.3, x = [0.5, -1].
  // Step 1: z_i = 0.1*0.5 + 0.5*0.2 + 0.06 = 0.21, z_o = 0.08, z_f = 0.30, z_c = 0.27;
  // c1 = σ(0.30)·(-0.3) + σ(0.21)·tanh(0.27), h1 = σ(0.08)·tanh(c1); step 2 likewise from (h1, c1).
  const Tensor x = Tensor::from<float>(Shape{2, 1, 1}, {0.5f, -1.0f});
  const Tensor w = Tensor::from<float>(Shape{1, 4, 1}, {0.1f, 0.2f, 0.3f, 0.4f});
  const Tensor r = Tensor::from<float>(Shape{1, 4, 1}, {0.5f, -0.5f, 0.25f, -0.25f});
  const Tensor b = Tensor::from<float>(Shape{1, 8}, {0.01f, 0.02f, 0.03f, 0.04f, 0.05f, 0.06f, 0.07f, 0.08f});
  const Tensor h0 = Tensor::from<float>(Shape{1, 1, 1}, {0.2f});
  const Tensor c0 = Tensor::from<float>(Shape{1, 1, 1}, {-0.3f});
  const OpResult out =
      run_cpu_op("LSTM", {{"hidden_size", std::int64_t{1}}}, {x, w, r, b, OpInput::absent(), h0, c0},
                 {{DType::f32, Shape{2, 1, 1, 1}}, {DType::f32, Shape{1, 1, 1}}, {DType::f32, Shape{1, 1, 1}}});
  const double h1 = -0.013896355521350958, h2 = -0.0673249739727663, c2 = -0.14368886215223964;
  EXPECT_TRUE(all_close(out[0], {h1, h2}, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(out[1], {h2}, 1e-6, 1e-5));
  EXPECT_TRUE(all_close(out[2], {c2}, 1e-6, 1e-5));
}

TEST(CpuOps, LstmDirectionsStatesAndBias) {
  std::uint32_t seed = 700;
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    for (const bool bias : {false, true}) {
      for (const bool initial : {false, true}) {
        check_case({5, 3, 4, 6, direction, bias, initial, std::nullopt}, seed);
        seed += 10;
      }
    }
  }
}

TEST(CpuOps, LstmSequenceLengths) {
  std::uint32_t seed = 800;
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) {
    check_case({6, 4, 3, 5, direction, true, true, std::vector<std::int64_t>{6, 2, 0, 4}}, seed);
    check_case({6, 4, 3, 5, direction, false, false, std::vector<std::int64_t>{1, 6, 3, 5}}, seed + 1);
    seed += 10;
  }
}

TEST(CpuOps, LstmLargerBatchAndHidden) {
  // Batch 7 takes the packed-GEMM path for the recurrent product; hidden 40 gives 160 gates.
  check_case({9, 7, 12, 40, "bidirectional", true, true, std::vector<std::int64_t>{9, 8, 1, 9, 5, 9, 2}}, 900);
  check_case({3, 2, 33, 17, "forward", true, false, std::nullopt}, 901);
}

TEST(CpuOps, LstmOmittedOutputs) {
  const Tensor x = random_tensor(Shape{4, 2, 3}, 1);
  const Tensor w = random_tensor(Shape{1, 20, 3}, 2, -0.5f, 0.5f);
  const Tensor r = random_tensor(Shape{1, 20, 5}, 3, -0.5f, 0.5f);
  const Tensor b = random_tensor(Shape{1, 40}, 4, -0.5f, 0.5f);
  const LstmReference ref = lstm_reference(x, w, r, &b, nullptr, nullptr, nullptr, "forward");
  const Attributes attrs{{"hidden_size", std::int64_t{5}}};
  // Only Y_h (Y omitted, Y_c not listed): the language-model classifier case.
  const OpResult only_h = run_cpu_op("LSTM", attrs, {x, w, r, b}, {OpOutput::absent(), {DType::f32, Shape{1, 2, 5}}});
  EXPECT_EQ(only_h[0].bytes(), 0u);  // absent: an empty Tensor
  EXPECT_TRUE(all_close(only_h[1], ref.y_h, 1e-5, 1e-4));
  // Only Y.
  const OpResult only_y = run_cpu_op("LSTM", attrs, {x, w, r, b}, {{DType::f32, Shape{4, 1, 2, 5}}});
  EXPECT_TRUE(all_close(only_y[0], ref.y, 1e-5, 1e-4));
  // Only Y_c, with trailing optional inputs given as absent.
  const OpResult only_c =
      run_cpu_op("LSTM", attrs, {x, w, r, b, OpInput::absent(), OpInput::absent(), OpInput::absent()},
                 {OpOutput::absent(), OpOutput::absent(), {DType::f32, Shape{1, 2, 5}}});
  EXPECT_TRUE(all_close(only_c[2], ref.y_c, 1e-5, 1e-4));
}

TEST(CpuOps, LstmRejectsUnsupportedAttributesAndInputs) {
  const Tensor x = random_tensor(Shape{2, 1, 3}, 1);
  const Tensor w = random_tensor(Shape{1, 8, 3}, 2);
  const Tensor r = random_tensor(Shape{1, 8, 2}, 3);
  const std::vector<OpOutput> outputs{{DType::f32, Shape{2, 1, 1, 2}}};
  const auto error = [&](Attributes attrs, std::vector<OpInput> inputs = {}) {
    if (inputs.empty()) inputs = {x, w, r};
    return create_error("LSTM", std::move(attrs), inputs, outputs);
  };
  EXPECT_EQ(error({{"hidden_size", std::int64_t{2}}}), std::nullopt);
  EXPECT_EQ(error({{"hidden_size", std::int64_t{3}}}), ErrorCode::shape_mismatch);
  EXPECT_EQ(error({{"clip", 1.0f}}), std::nullopt);
  EXPECT_EQ(error({{"clip", -1.0f}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"layout", std::int64_t{2}}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"layout", std::int64_t{1}}}), std::nullopt);  // X [2, 1, 3] is then batch 2, 1 step: Y [2, 1, 1, 2]
  EXPECT_EQ(create_error("LSTM", {{"layout", std::int64_t{1}}}, {x, w, r}, {{DType::f32, Shape{2, 1, 2, 1}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(error({{"input_forget", std::int64_t{1}}}), std::nullopt);
  EXPECT_EQ(error({{"direction", std::string("sideways")}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"activations", std::vector<std::string>{"Relu"}}}), ErrorCode::unsupported);  // needs 3
  EXPECT_EQ(error({{"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Gelu"}}}), ErrorCode::unsupported);
  EXPECT_EQ(error({{"activation_alpha", std::vector<float>{1.0f}}}), ErrorCode::unsupported);  // without activations
  const Tensor bad_peepholes = random_tensor(Shape{1, 4}, 4);
  EXPECT_EQ(
      error({}, {x, w, r, OpInput::absent(), OpInput::absent(), OpInput::absent(), OpInput::absent(), bad_peepholes}),
      ErrorCode::shape_mismatch);
}

TEST(CpuOps, LstmSequenceLengthOutOfRangeThrows) {
  const Tensor x = random_tensor(Shape{2, 1, 3}, 1);
  const Tensor w = random_tensor(Shape{1, 8, 3}, 2);
  const Tensor r = random_tensor(Shape{1, 8, 2}, 3);
  const Tensor lengths = Tensor::from<std::int32_t>(Shape{1}, {3});
  try {
    (void)run_cpu_op("LSTM", {}, {x, w, r, OpInput::absent(), lengths}, {{DType::f32, Shape{2, 1, 1, 2}}});
    FAIL() << "sequence_lens 3 > 2 steps should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

namespace {

// One LSTM case with the conformance-test extras, checked against the reference.
void check_extras(const std::string& direction, const LstmExtras& base, bool with_peepholes, std::uint32_t seed,
                  std::optional<std::vector<std::int64_t>> lengths = std::nullopt) {
  const std::int64_t steps = 5, batch = 3, input = 4, hidden = 6;
  const std::int64_t dirs = direction == "bidirectional" ? 2 : 1;
  const bool bm = base.batch_major;
  const Tensor x = random_tensor(bm ? Shape{batch, steps, input} : Shape{steps, batch, input}, seed);
  const Tensor w = random_tensor(Shape{dirs, 4 * hidden, input}, seed + 1, -0.5f, 0.5f);
  const Tensor r = random_tensor(Shape{dirs, 4 * hidden, hidden}, seed + 2, -0.5f, 0.5f);
  const Tensor b = random_tensor(Shape{dirs, 8 * hidden}, seed + 3, -0.5f, 0.5f);
  const Shape state = bm ? Shape{batch, dirs, hidden} : Shape{dirs, batch, hidden};
  const Tensor h0 = random_tensor(state, seed + 4);
  const Tensor c0 = random_tensor(state, seed + 5);
  const Tensor p = random_tensor(Shape{dirs, 3 * hidden}, seed + 6);
  LstmExtras extras = base;
  if (with_peepholes) extras.peepholes = &p;
  std::vector<std::int32_t> lengths32;
  if (lengths)
    for (auto v : *lengths) lengths32.push_back(static_cast<std::int32_t>(v));
  const std::vector<OpInput> inputs{
      x,
      w,
      r,
      b,
      lengths ? OpInput(Tensor::from<std::int32_t>(Shape{batch}, lengths32)) : OpInput::absent(),
      h0,
      c0,
      with_peepholes ? OpInput(p) : OpInput::absent()};
  Attributes attrs{{"hidden_size", hidden},
                   {"direction", direction},
                   {"layout", std::int64_t{bm}},
                   {"input_forget", std::int64_t{extras.input_forget}}};
  if (!extras.activations.empty()) attrs.set("activations", extras.activations);
  if (extras.clip > 0) attrs.set("clip", static_cast<float>(extras.clip));
  const Shape y_shape = bm ? Shape{batch, steps, dirs, hidden} : Shape{steps, dirs, batch, hidden};
  const OpResult out =
      run_cpu_op("LSTM", attrs, inputs, {{DType::f32, y_shape}, {DType::f32, state}, {DType::f32, state}});
  const LstmReference ref = lstm_reference(x, w, r, &b, lengths ? &*lengths : nullptr, &h0, &c0, direction, extras);
  const std::string label = direction + (with_peepholes ? " peepholes" : "") + (bm ? " layout 1" : "") +
                            (extras.clip > 0 ? " clip" : "") + (extras.input_forget ? " input_forget" : "") +
                            (lengths ? " lengths" : "");
  EXPECT_TRUE(all_close(out[0], ref.y, 1e-5, 1e-4)) << "Y, " << label;
  EXPECT_TRUE(all_close(out[1], ref.y_h, 1e-5, 1e-4)) << "Y_h, " << label;
  EXPECT_TRUE(all_close(out[2], ref.y_c, 1e-5, 1e-4)) << "Y_c, " << label;
}

}  // namespace

TEST(CpuOps, LstmPeepholes) {
  std::uint32_t seed = 1000;
  for (const std::string direction : {"forward", "reverse", "bidirectional"}) check_extras(direction, {}, true, seed++);
  check_extras("bidirectional", {}, true, seed++, std::vector<std::int64_t>{5, 0, 2});
}

TEST(CpuOps, LstmBatchMajorLayout) {
  std::uint32_t seed = 1100;
  for (const std::string direction : {"forward", "reverse", "bidirectional"})
    check_extras(direction, {.batch_major = true}, false, seed++);
  check_extras("bidirectional", {.batch_major = true}, true, seed++, std::vector<std::int64_t>{3, 5, 1});
}

TEST(CpuOps, LstmActivationsClipAndInputForget) {
  check_extras("forward", {.activations = {"Sigmoid", "Relu", "Tanh"}}, false, 1200);
  check_extras("bidirectional", {.activations = {"Sigmoid", "Tanh", "Relu", "Sigmoid", "Relu", "Tanh"}}, true, 1201);
  check_extras("forward", {.clip = 0.4}, true, 1202);
  check_extras("reverse", {.input_forget = true}, false, 1203);
  check_extras("bidirectional", {.batch_major = true, .clip = 0.7, .input_forget = true}, true, 1204);
}
