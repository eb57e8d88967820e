// The CPU decoders against independent references: recurrent stacks against ONNX LSTM/GRU nodes
// run by the Executor, greedy decoding against a hand-built model whose tokens are known and a
// double-precision reference loop, the encoder stack against LayerNormalization/MatMul/Add/Relu
// nodes; and pause/resume at every step boundary against an uninterrupted run, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <vector>

#include "unit/decode_test_support.hpp"

using namespace loom;
using namespace loom::decode_testing;
using decode::DecodeArgs;
using decode::DecodeResult;
using loom::testing::all_close;
using loom::testing::random_tensor;

namespace {

// ---- recurrent ----

struct RecurrentCase {
  CellType type = CellType::lstm;
  bool linear_before_reset = false;
  int layers = 1;
  int steps = 5, batch = 3;
  std::int64_t input = 4, hidden = 6;
  std::optional<std::vector<std::int32_t>> lengths{};
  bool as_mask = false;  // hand the lengths over as a mask (with a stray 1 after each row's end)
  bool initial_state = false;
};

std::string describe(const RecurrentCase& c) {
  std::string text = std::string(c.type == CellType::lstm ? "LSTM" : "GRU") + " layers " + std::to_string(c.layers);
  if (c.type == CellType::gru) text += c.linear_before_reset ? " lbr=1" : " lbr=0";
  if (c.lengths) text += c.as_mask ? " mask" : " lengths";
  if (c.initial_state) text += " initial";
  return text;
}

// The mask for `lengths`: ones up to each row's length, then zeros, except a 1 two steps after
// the end, which must not extend the row (only the leading ones count).
std::vector<std::uint8_t> mask_for(const std::vector<std::int32_t>& lengths, int steps) {
  const int batch = static_cast<int>(lengths.size());
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(steps * batch), 0);
  for (int b = 0; b < batch; ++b) {
    for (int t = 0; t < lengths[b]; ++t) mask[t * batch + b] = 1;
    if (lengths[b] + 2 < steps) mask[(lengths[b] + 2) * batch + b] = 1;
  }
  return mask;
}

void check_recurrent(const RecurrentCase& c, std::uint32_t seed) {
  SCOPED_TRACE(describe(c));
  const bool lstm = c.type == CellType::lstm;
  const std::int64_t T = c.steps, B = c.batch, H = c.hidden, L = c.layers;
  decode::DecodeEngine engine("cpu");
  decode::RecurrentSpec spec{random_cells(c.type, c.input, c.hidden, c.layers, seed, c.linear_before_reset)};
  const decode::DecoderId id = engine.add(spec);

  const Tensor x = random_tensor(Shape{T, B, c.input}, seed + 100);
  const Tensor h0 = random_tensor(Shape{L, B, H}, seed + 101);
  const Tensor c0 = random_tensor(Shape{L, B, H}, seed + 102);
  auto input = to_device(engine, x);
  auto output = poisoned(engine, static_cast<std::size_t>(T * B * H) * sizeof(float));
  auto final_h = poisoned(engine, static_cast<std::size_t>(L * B * H) * sizeof(float));
  auto final_c = poisoned(engine, static_cast<std::size_t>(L * B * H) * sizeof(float));
  auto initial_h = to_device(engine, h0);
  auto initial_c = to_device(engine, c0);
  std::optional<decode::DeviceBuffer> lengths, mask;

  DecodeArgs args;
  args.batch = c.batch;
  args.steps = c.steps;
  args.input = input.data();
  args.output = output.data();
  args.final_h = final_h.data();
  if (lstm) args.final_c = final_c.data();
  if (c.initial_state) {
    args.initial_h = initial_h.data();
    if (lstm) args.initial_c = initial_c.data();
  }
  if (c.lengths && c.as_mask) {
    mask = to_device(engine, mask_for(*c.lengths, c.steps));
    args.mask = mask->as<std::uint8_t>();
  } else if (c.lengths) {
    lengths = to_device(engine, *c.lengths);
    args.lengths = lengths->as<std::int32_t>();
  }
  const DecodeResult result = engine.run(id, args).get();

  const int count = c.lengths ? *std::max_element(c.lengths->begin(), c.lengths->end()) : c.steps;
  EXPECT_EQ(result.steps_run, count);
  EXPECT_EQ(result.next_step, count);
  EXPECT_FALSE(result.paused);

  const RecurrentReference ref = executor_recurrent(spec.cells, x, c.lengths, c.initial_state ? &h0 : nullptr,
                                                    c.initial_state && lstm ? &c0 : nullptr);
  const auto y = from_device<float>(engine, output, static_cast<std::size_t>(T * B * H));
  EXPECT_TRUE(all_close(floats(Shape{T, B, H}, y), doubles(ref.y), 1e-5, 1e-4)) << "output";
  const auto fh = from_device<float>(engine, final_h, static_cast<std::size_t>(L * B * H));
  EXPECT_TRUE(all_close(floats(Shape{L, B, H}, fh), doubles(ref.y_h), 1e-5, 1e-4)) << "final_h";
  if (lstm) {
    const auto fc = from_device<float>(engine, final_c, static_cast<std::size_t>(L * B * H));
    EXPECT_TRUE(all_close(floats(Shape{L, B, H}, fc), doubles(ref.y_c), 1e-5, 1e-4)) << "final_c";
  }
  // At and after each row's length: exact zeros (the poison would show otherwise).
  if (c.lengths) {
    for (int b = 0; b < c.batch; ++b)
      for (std::int64_t t = (*c.lengths)[b]; t < T; ++t)
        for (std::int64_t j = 0; j < H; ++j) {
          ASSERT_EQ(y[(t * B + b) * H + j], 0.0f) << "t " << t << " row " << b;
        }
  }
}

TEST(DecodeCpu, LstmOneLayerMatchesOnnxLstm) {
  check_recurrent({.type = CellType::lstm}, 10);
  check_recurrent({.type = CellType::lstm, .initial_state = true}, 20);
}

TEST(DecodeCpu, LstmTwoLayersWithLengthsAndInitialState) {
  // Row 2 has length 0 (zeros out, initial state back); row 0 the maximum length.
  check_recurrent({.type = CellType::lstm,
                   .layers = 2,
                   .steps = 6,
                   .batch = 4,
                   .lengths = std::vector<std::int32_t>{6, 2, 0, 4},
                   .initial_state = true},
                  30);
  check_recurrent(
      {.type = CellType::lstm, .layers = 2, .steps = 6, .batch = 4, .lengths = std::vector<std::int32_t>{3, 1, 5, 2}},
      40);
}

TEST(DecodeCpu, LstmWithMask) {
  check_recurrent({.type = CellType::lstm,
                   .layers = 2,
                   .steps = 7,
                   .batch = 3,
                   .lengths = std::vector<std::int32_t>{7, 0, 3},
                   .as_mask = true,
                   .initial_state = true},
                  50);
}

TEST(DecodeCpu, GruBothResetModesMatchOnnxGru) {
  std::uint32_t seed = 60;
  for (const bool lbr : {false, true}) {
    check_recurrent({.type = CellType::gru, .linear_before_reset = lbr}, seed++);
    check_recurrent({.type = CellType::gru,
                     .linear_before_reset = lbr,
                     .layers = 2,
                     .steps = 6,
                     .batch = 4,
                     .lengths = std::vector<std::int32_t>{6, 2, 0, 4},
                     .initial_state = true},
                    seed++);
    check_recurrent({.type = CellType::gru,
                     .linear_before_reset = lbr,
                     .layers = 2,
                     .steps = 5,
                     .batch = 3,
                     .lengths = std::vector<std::int32_t>{1, 5, 0},
                     .as_mask = true},
                    seed++);
  }
}

TEST(DecodeCpu, WiderSizesTakeTheVectorPathAndTail) {
  // 33 inputs and 40 hidden: dot products with full 16-wide chunks and a tail.
  check_recurrent({.type = CellType::lstm,
                   .layers = 2,
                   .steps = 4,
                   .batch = 7,
                   .input = 33,
                   .hidden = 40,
                   .lengths = std::vector<std::int32_t>{4, 1, 0, 3, 4, 2, 4},
                   .initial_state = true},
                  70);
  check_recurrent({.type = CellType::gru,
                   .linear_before_reset = true,
                   .layers = 1,
                   .steps = 3,
                   .batch = 5,
                   .input = 17,
                   .hidden = 33,
                   .initial_state = true},
                  71);
}

TEST(DecodeCpu, RecurrentZeroStepsAndAllRowsEmpty) {
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(decode::RecurrentSpec{random_cells(CellType::lstm, 3, 4, 1, 80)});
  const Tensor h0 = random_tensor(Shape{1, 2, 4}, 81);
  auto input = to_device(engine, std::vector<float>(3 * 2 * 3, 0.5f));
  auto output = poisoned(engine, 3 * 2 * 4 * sizeof(float));
  auto initial_h = to_device(engine, h0);
  auto final_h = poisoned(engine, 2 * 4 * sizeof(float));
  auto lengths = to_device(engine, std::vector<std::int32_t>{0, 0});
  DecodeArgs args;
  args.batch = 2;
  args.steps = 3;
  args.input = input.data();
  args.output = output.data();
  args.lengths = lengths.as<std::int32_t>();
  args.initial_h = initial_h.data();
  args.final_h = final_h.data();
  const DecodeResult result = engine.run(id, args).get();
  EXPECT_EQ(result.steps_run, 0);
  EXPECT_EQ(from_device<float>(engine, output, 24), std::vector<float>(24, 0.0f));
  const auto fh = from_device<float>(engine, final_h, 8);
  EXPECT_TRUE(std::equal(fh.begin(), fh.end(), h0.values<float>().begin()));
}

// ---- greedy ----

struct GreedyRun {
  DecodeResult result;
  std::vector<std::int32_t> tokens, lengths;
  std::vector<float> final_h;
};

GreedyRun run_greedy(decode::DecodeEngine& engine, decode::DecoderId id, const std::vector<std::int32_t>& first,
                     int steps, std::int64_t state_floats) {
  const int batch = static_cast<int>(first.size());
  auto input = to_device(engine, first);
  auto output = poisoned(engine, static_cast<std::size_t>(steps * batch) * sizeof(std::int32_t) + 1);
  auto out_lengths = poisoned(engine, first.size() * sizeof(std::int32_t));
  auto final_h = poisoned(engine, static_cast<std::size_t>(state_floats) * sizeof(float));
  DecodeArgs args;
  args.batch = batch;
  args.steps = steps;
  args.input = input.data();
  args.output = output.data();
  args.out_lengths = out_lengths.as<std::int32_t>();
  args.final_h = final_h.data();
  GreedyRun run;
  run.result = engine.run(id, args).get();
  run.tokens = from_device<std::int32_t>(engine, output, static_cast<std::size_t>(steps * batch));
  run.lengths = from_device<std::int32_t>(engine, out_lengths, first.size());
  run.final_h = from_device<float>(engine, final_h, static_cast<std::size_t>(state_floats));
  return run;
}

TEST(DecodeCpu, GreedyCountingModelStopsEachRowOnTheEndToken) {
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(counting_model(5));
  // Rows: from 0 (5 tokens), from 3 (2), from 5 (wraps to 0: 6 tokens), 7 and -1 (outside the
  // vocabulary: no tokens), from 4 (1 token, the end token itself).
  const std::vector<std::int32_t> first{0, 3, 5, 7, -1, 4};
  const GreedyRun run = run_greedy(engine, id, first, 10, 6 * 6);
  EXPECT_EQ(run.result.steps_run, 6) << "stops when the last row has ended";
  EXPECT_FALSE(run.result.paused);
  EXPECT_EQ(run.lengths, (std::vector<std::int32_t>{5, 2, 6, 0, 0, 1}));
  EXPECT_EQ(run.tokens, token_grid({{1, 2, 3, 4, 5}, {4, 5}, {0, 1, 2, 3, 4, 5}, {}, {}, {5}}, 10));
  // Rows that never started keep the initial (zero) state.
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(run.final_h[3 * 6 + j], 0.0f);
    EXPECT_EQ(run.final_h[4 * 6 + j], 0.0f);
  }
  // The row that ended on token 5 last embedded token 4: its h peaks there.
  const auto row1 = std::vector<float>(run.final_h.begin() + 6, run.final_h.begin() + 12);
  EXPECT_EQ(std::max_element(row1.begin(), row1.end()) - row1.begin(), 4);
}

TEST(DecodeCpu, GreedyStopsAtTheMaximumLength) {
  decode::DecodeEngine engine("cpu");
  const auto with_end = engine.add(counting_model(5));
  const GreedyRun short_run = run_greedy(engine, with_end, {0, 3, 5}, 3, 3 * 6);
  EXPECT_EQ(short_run.result.steps_run, 3);
  EXPECT_EQ(short_run.lengths, (std::vector<std::int32_t>{3, 2, 3}));
  EXPECT_EQ(short_run.tokens, token_grid({{1, 2, 3}, {4, 5}, {0, 1, 2}}, 3));

  // No end token: every valid row runs the full length, wrapping around the vocabulary.
  const auto endless = engine.add(counting_model(-1));
  const GreedyRun long_run = run_greedy(engine, endless, {0, 4, 9}, 8, 3 * 6);
  EXPECT_EQ(long_run.result.steps_run, 8);
  EXPECT_EQ(long_run.lengths, (std::vector<std::int32_t>{8, 8, 0}));
  EXPECT_EQ(long_run.tokens, token_grid({{1, 2, 3, 4, 5, 0, 1, 2}, {5, 0, 1, 2, 3, 4, 5, 0}, {}}, 8));

  // No valid row at all: nothing runs.
  const GreedyRun none = run_greedy(engine, with_end, {-3, 6}, 4, 2 * 6);
  EXPECT_EQ(none.result.steps_run, 0);
  EXPECT_EQ(none.lengths, (std::vector<std::int32_t>{0, 0}));
  EXPECT_EQ(none.tokens, std::vector<std::int32_t>(8, -1));
}

// A double-precision greedy loop straight from the ONNX cell equations, written apart from the
// decoder's code.
struct ReferenceCells {
  const CellStack& cells;
  int batch;
  std::vector<std::vector<double>> h, c;  // [layer][row * hidden + j]

  ReferenceCells(const CellStack& stack, int rows)
      : cells(stack),
        batch(rows),
        h(stack.layers.size(), std::vector<double>(static_cast<std::size_t>(rows * stack.hidden_size), 0.0)),
        c(h) {}

  static double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

  // One step of every layer for row b on input x.
  void step(int b, std::vector<double> x) {
    const std::int64_t H = cells.hidden_size;
    for (std::size_t l = 0; l < cells.layers.size(); ++l) {
      const CellLayer& layer = cells.layers[l];
      const auto w = layer.w.values<float>();
      const auto r = layer.r.values<float>();
      const auto bias = layer.b.values<float>();
      const std::int64_t in = layer.w.shape()[1], G = layer.w.shape()[0];
      double* hb = h[l].data() + b * H;
      const auto wx = [&](std::int64_t g) {
        double s = bias[g];
        for (std::int64_t i = 0; i < in; ++i) s += double(w[g * in + i]) * x[i];
        return s;
      };
      const auto rv = [&](std::int64_t g, const std::vector<double>& v) {
        double s = bias[G + g];
        for (std::int64_t k = 0; k < H; ++k) s += double(r[g * H + k]) * v[k];
        return s;
      };
      const std::vector<double> hp(hb, hb + H);
      std::vector<double> next(H);
      if (cells.type == CellType::lstm) {
        double* cb = c[l].data() + b * H;
        for (std::int64_t j = 0; j < H; ++j) {
          const double i = sigmoid(wx(j) + rv(j, hp)), o = sigmoid(wx(H + j) + rv(H + j, hp));
          const double f = sigmoid(wx(2 * H + j) + rv(2 * H + j, hp)), g = std::tanh(wx(3 * H + j) + rv(3 * H + j, hp));
          cb[j] = f * cb[j] + i * g;
          next[j] = o * std::tanh(cb[j]);
        }
      } else {
        std::vector<double> z(H), rg(H), rh(H);
        for (std::int64_t j = 0; j < H; ++j) {
          z[j] = sigmoid(wx(j) + rv(j, hp));
          rg[j] = sigmoid(wx(H + j) + rv(H + j, hp));
          rh[j] = rg[j] * hp[j];
        }
        for (std::int64_t j = 0; j < H; ++j) {
          const double cand = cells.linear_before_reset ? std::tanh(wx(2 * H + j) + rg[j] * rv(2 * H + j, hp))
                                                        : std::tanh(wx(2 * H + j) + rv(2 * H + j, rh));
          next[j] = (1 - z[j]) * cand + z[j] * hp[j];
        }
      }
      std::copy(next.begin(), next.end(), hb);
      x = next;
    }
  }
};

struct ReferenceGreedy {
  std::vector<std::int32_t> tokens, lengths;
  std::vector<double> final_h;
  int steps_run = 0;
};

ReferenceGreedy reference_greedy(const decode::GreedySpec& spec, const std::vector<std::int32_t>& first, int steps) {
  const int batch = static_cast<int>(first.size());
  const std::int64_t vocab = spec.embedding.shape()[0], I = spec.cells.input_size, H = spec.cells.hidden_size;
  ReferenceCells cells(spec.cells, batch);
  ReferenceGreedy out;
  out.tokens.assign(static_cast<std::size_t>(steps * batch), -1);
  out.lengths.assign(first.size(), 0);
  std::vector<std::int32_t> token = first;
  std::vector<bool> live(first.size());
  for (int b = 0; b < batch; ++b) live[b] = token[b] >= 0 && token[b] < vocab;
  for (int t = 0; t < steps && std::find(live.begin(), live.end(), true) != live.end(); ++t) {
    for (int b = 0; b < batch; ++b) {
      if (!live[b]) continue;
      const auto e = spec.embedding.values<float>();
      cells.step(b, std::vector<double>(e.begin() + token[b] * I, e.begin() + (token[b] + 1) * I));
      const double* h = cells.h.back().data() + b * H;
      std::int32_t best = 0;
      double best_logit = 0;
      for (std::int64_t v = 0; v < vocab; ++v) {
        double logit = spec.projection_bias.bytes() ? spec.projection_bias.values<float>()[v] : 0.0;
        for (std::int64_t j = 0; j < H; ++j) logit += double(spec.projection.values<float>()[v * H + j]) * h[j];
        if (v == 0 || logit > best_logit) best = static_cast<std::int32_t>(v), best_logit = logit;
      }
      out.tokens[t * batch + b] = best;
      ++out.lengths[b];
      if (best == spec.end_token)
        live[b] = false;
      else
        token[b] = best;
    }
    ++out.steps_run;
  }
  for (const auto& layer : cells.h) out.final_h.insert(out.final_h.end(), layer.begin(), layer.end());
  return out;
}

// The token whose first appearance comes at the most different steps across rows, so that
// making it the end token stops rows at different steps.
std::int32_t varied_end_token(const ReferenceGreedy& free_run, int batch, std::int64_t vocab) {
  std::int32_t best = 0;
  std::size_t best_variety = 0;
  for (std::int32_t v = 0; v < vocab; ++v) {
    std::vector<std::size_t> first_steps;
    for (int b = 0; b < batch; ++b)
      for (std::size_t t = 0; t * batch + b < free_run.tokens.size(); ++t)
        if (free_run.tokens[t * batch + b] == v) {
          first_steps.push_back(t);
          break;
        }
    std::sort(first_steps.begin(), first_steps.end());
    const auto variety =
        static_cast<std::size_t>(std::unique(first_steps.begin(), first_steps.end()) - first_steps.begin());
    if (variety > best_variety) best = v, best_variety = variety;
  }
  return best;
}

void check_random_greedy(CellType type, bool lbr, int layers, std::uint32_t seed) {
  SCOPED_TRACE(std::string(type == CellType::lstm ? "LSTM" : "GRU") + " layers " + std::to_string(layers));
  constexpr std::int64_t vocab = 11, I = 6, H = 16;
  constexpr int steps = 12, batch = 12;
  decode::GreedySpec spec;
  spec.cells = random_cells(type, I, H, layers, seed, lbr, true, 1.5f);
  spec.embedding = random_tensor(Shape{vocab, I}, seed + 50, -2.0f, 2.0f);
  spec.projection = random_tensor(Shape{vocab, H}, seed + 51, -2.0f, 2.0f);
  spec.projection_bias = random_tensor(Shape{vocab}, seed + 52, -0.3f, 0.3f);
  const std::vector<std::int32_t> first{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // 11: outside the vocabulary
  spec.end_token = varied_end_token(reference_greedy(spec, first, steps), batch, vocab);
  const ReferenceGreedy ref = reference_greedy(spec, first, steps);

  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(spec);
  const GreedyRun run = run_greedy(engine, id, first, steps, layers * batch * H);
  EXPECT_EQ(run.tokens, ref.tokens);
  EXPECT_EQ(run.lengths, ref.lengths);
  EXPECT_EQ(run.result.steps_run, ref.steps_run);
  EXPECT_TRUE(all_close(floats(Shape{layers * batch * H}, run.final_h), ref.final_h, 1e-5, 1e-4));
  // The case must exercise rows ending at different steps.
  std::vector<std::int32_t> distinct(ref.lengths.begin(), ref.lengths.end() - 1);
  std::sort(distinct.begin(), distinct.end());
  EXPECT_GE(std::unique(distinct.begin(), distinct.end()) - distinct.begin(), 3)
      << "lengths too uniform: " << ::testing::PrintToString(ref.lengths);
}

TEST(DecodeCpu, GreedyRandomModelsMatchADoubleReference) {
  check_random_greedy(CellType::lstm, false, 2, 900);
  check_random_greedy(CellType::gru, false, 1, 910);
  check_random_greedy(CellType::gru, true, 2, 920);
}

// ---- encoder ----

TEST(DecodeCpu, EncoderMatchesOnnxOpsForEveryCount) {
  constexpr std::int64_t width = 12, ff = 20;
  constexpr int blocks = 3, batch = 5;
  const decode::EncoderStackSpec spec = random_encoder(width, ff, blocks, 1000);
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(spec);
  const Tensor x = random_tensor(Shape{batch, width}, 1001, -2.0f, 2.0f);
  auto input = to_device(engine, x);
  for (int steps = 0; steps <= blocks; ++steps) {
    SCOPED_TRACE("steps " + std::to_string(steps));
    auto output = poisoned(engine, batch * width * sizeof(float));
    DecodeArgs args;
    args.batch = batch;
    args.steps = steps;
    args.input = input.data();
    args.output = output.data();
    const DecodeResult result = engine.run(id, args).get();
    const int count = steps == 0 ? blocks : steps;
    EXPECT_EQ(result.steps_run, count);
    EXPECT_EQ(result.next_step, count);
    const auto y = from_device<float>(engine, output, batch * width);
    EXPECT_TRUE(all_close(floats(Shape{batch, width}, y), doubles(executor_encoder(spec, x, count)), 1e-5, 1e-4));
  }
  // The input is untouched by an out-of-place run.
  const auto after = from_device<float>(engine, input, batch * width);
  EXPECT_TRUE(std::equal(after.begin(), after.end(), x.values<float>().begin()));
}

TEST(DecodeCpu, EncoderInPlaceEqualsOutOfPlaceAndEmptyBiasesAreZeros) {
  constexpr std::int64_t width = 9, ff = 16;
  constexpr int batch = 3;
  decode::EncoderStackSpec spec = random_encoder(width, ff, 2, 1100);
  decode::DecodeEngine engine("cpu");
  const auto full = engine.add(spec);
  // The same stack with b1 and norm_bias dropped against explicit zeros.
  decode::EncoderStackSpec sparse = spec, zeros = spec;
  for (std::size_t k = 0; k < spec.blocks.size(); ++k) {
    sparse.blocks[k].b1 = Tensor();
    sparse.blocks[k].norm_bias = Tensor();
    zeros.blocks[k].b1 = Tensor(DType::f32, Shape{ff});
    zeros.blocks[k].norm_bias = Tensor(DType::f32, Shape{width});
  }
  const auto sparse_id = engine.add(sparse);
  const Tensor x = random_tensor(Shape{batch, width}, 1101);
  const std::size_t bytes = batch * width * sizeof(float);

  auto input = to_device(engine, x);
  auto output = poisoned(engine, bytes);
  auto in_place = to_device(engine, x);
  DecodeArgs args;
  args.batch = batch;
  args.input = input.data();
  args.output = output.data();
  engine.run(full, args).get();
  args.input = in_place.data();
  args.output = in_place.data();
  engine.run(full, args).get();
  const auto out_of_place = from_device<float>(engine, output, batch * width);
  EXPECT_EQ(from_device<float>(engine, in_place, batch * width), out_of_place);

  auto sparse_out = poisoned(engine, bytes);
  args.input = input.data();
  args.output = sparse_out.data();
  engine.run(sparse_id, args).get();
  EXPECT_TRUE(all_close(floats(Shape{batch, width}, from_device<float>(engine, sparse_out, batch * width)),
                        doubles(executor_encoder(zeros, x, 2)), 1e-5, 1e-4));
}

// ---- pause and resume ----

// Runs `args` with the flag set, one step per call, resuming from the saved state each time;
// the state ping-pongs between two buffer pairs. Returns the final state buffers' contents.
struct Resumed {
  std::vector<float> final_h, final_c;
  int calls = 0;
};

Resumed run_step_by_step(decode::DecodeEngine& engine, decode::DecoderId id, DecodeArgs args, bool lstm, int count,
                         std::size_t state_bytes) {
  decode::PauseFlag flag = engine.make_pause_flag();
  flag.request();
  EXPECT_TRUE(flag.requested());
  decode::DeviceBuffer h[2] = {poisoned(engine, state_bytes), poisoned(engine, state_bytes)};
  decode::DeviceBuffer c[2] = {poisoned(engine, state_bytes), poisoned(engine, state_bytes)};
  args.pause = &flag;
  Resumed out;
  int next = 0, which = 0;
  while (next < count) {
    args.start_step = next;
    args.final_h = h[which].data();
    args.final_c = lstm ? c[which].data() : nullptr;
    const DecodeResult result = engine.run(id, args).get();
    EXPECT_EQ(result.steps_run, 1) << "call " << out.calls;
    EXPECT_EQ(result.next_step, next + 1);
    EXPECT_EQ(result.paused, next + 1 < count) << "call " << out.calls;
    next = result.next_step;
    ++out.calls;
    args.initial_h = h[which].data();
    args.initial_c = lstm ? c[which].data() : nullptr;
    which = 1 - which;
  }
  out.final_h = from_device<float>(engine, h[1 - which], state_bytes / sizeof(float));
  if (lstm) out.final_c = from_device<float>(engine, c[1 - which], state_bytes / sizeof(float));
  return out;
}

void check_recurrent_resume(CellType type, bool lbr, std::uint32_t seed) {
  SCOPED_TRACE(type == CellType::lstm ? "LSTM" : "GRU");
  const bool lstm = type == CellType::lstm;
  constexpr int T = 6, B = 4, L = 2;
  constexpr std::int64_t I = 5, H = 8;
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(decode::RecurrentSpec{random_cells(type, I, H, L, seed, lbr)});
  auto input = to_device(engine, random_tensor(Shape{T, B, I}, seed + 1));
  auto h0 = to_device(engine, random_tensor(Shape{L, B, H}, seed + 2));
  auto c0 = to_device(engine, random_tensor(Shape{L, B, H}, seed + 3));
  auto lengths = to_device(engine, std::vector<std::int32_t>{5, 2, 0, 3});  // loop count 5 < T
  const std::size_t out_bytes = T * B * H * sizeof(float), state_bytes = L * B * H * sizeof(float);

  auto whole = poisoned(engine, out_bytes);
  auto whole_h = poisoned(engine, state_bytes);
  auto whole_c = poisoned(engine, state_bytes);
  DecodeArgs args;
  args.batch = B;
  args.steps = T;
  args.input = input.data();
  args.lengths = lengths.as<std::int32_t>();
  args.initial_h = h0.data();
  args.initial_c = lstm ? c0.data() : nullptr;
  args.output = whole.data();
  args.final_h = whole_h.data();
  args.final_c = lstm ? whole_c.data() : nullptr;
  EXPECT_EQ(engine.run(id, args).get().steps_run, 5);

  auto pieces = poisoned(engine, out_bytes);
  args.output = pieces.data();
  const Resumed resumed = run_step_by_step(engine, id, args, lstm, 5, state_bytes);
  EXPECT_EQ(resumed.calls, 5);
  const auto a = from_device<float>(engine, whole, out_bytes / 4),
             b = from_device<float>(engine, pieces, out_bytes / 4);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), out_bytes), 0) << "output differs";
  const auto wh = from_device<float>(engine, whole_h, state_bytes / 4);
  EXPECT_EQ(std::memcmp(wh.data(), resumed.final_h.data(), state_bytes), 0) << "final_h differs";
  if (lstm) {
    const auto wc = from_device<float>(engine, whole_c, state_bytes / 4);
    EXPECT_EQ(std::memcmp(wc.data(), resumed.final_c.data(), state_bytes), 0) << "final_c differs";
  }
}

TEST(DecodeCpu, RecurrentResumedAtEveryBoundaryIsBitIdentical) {
  check_recurrent_resume(CellType::lstm, false, 1200);
  check_recurrent_resume(CellType::gru, false, 1210);
  check_recurrent_resume(CellType::gru, true, 1220);
}

TEST(DecodeCpu, EncoderResumedAtEveryBoundaryIsBitIdentical) {
  constexpr std::int64_t width = 10, ff = 14;
  constexpr int blocks = 4, batch = 3;
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(random_encoder(width, ff, blocks, 1300));
  auto input = to_device(engine, random_tensor(Shape{batch, width}, 1301));
  const std::size_t bytes = batch * width * sizeof(float);
  auto whole = poisoned(engine, bytes);
  DecodeArgs args;
  args.batch = batch;
  args.input = input.data();
  args.output = whole.data();
  EXPECT_EQ(engine.run(id, args).get().steps_run, blocks);

  decode::PauseFlag flag = engine.make_pause_flag();
  flag.request();
  auto pieces = poisoned(engine, bytes);
  args.output = pieces.data();
  args.pause = &flag;
  for (int next = 0; next < blocks;) {
    args.start_step = next;
    const DecodeResult result = engine.run(id, args).get();
    EXPECT_EQ(result.steps_run, 1);
    EXPECT_EQ(result.paused, next + 1 < blocks);
    next = result.next_step;
    args.input = pieces.data();  // resume from the output, in place
  }
  EXPECT_EQ(from_device<float>(engine, whole, bytes / 4), from_device<float>(engine, pieces, bytes / 4));
}

TEST(DecodeCpu, ClearedFlagLetsTheRestRunInOneCall) {
  constexpr int T = 5, B = 2;
  constexpr std::int64_t I = 3, H = 4;
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(decode::RecurrentSpec{random_cells(CellType::lstm, I, H, 1, 1400)});
  auto input = to_device(engine, random_tensor(Shape{T, B, I}, 1401));
  auto output = poisoned(engine, T * B * H * sizeof(float));
  auto h = poisoned(engine, B * H * sizeof(float)), c = poisoned(engine, B * H * sizeof(float));
  auto h2 = poisoned(engine, B * H * sizeof(float)), c2 = poisoned(engine, B * H * sizeof(float));
  decode::PauseFlag flag = engine.make_pause_flag();
  flag.request();
  DecodeArgs args;
  args.batch = B;
  args.steps = T;
  args.input = input.data();
  args.output = output.data();
  args.final_h = h.data();
  args.final_c = c.data();
  args.pause = &flag;
  const DecodeResult first = engine.run(id, args).get();
  EXPECT_EQ(first.steps_run, 1);
  EXPECT_TRUE(first.paused);
  flag.clear();
  EXPECT_FALSE(flag.requested());
  args.start_step = first.next_step;
  args.initial_h = h.data();
  args.initial_c = c.data();
  args.final_h = h2.data();
  args.final_c = c2.data();
  const DecodeResult rest = engine.run(id, args).get();
  EXPECT_EQ(rest.steps_run, T - 1);
  EXPECT_EQ(rest.next_step, T);
  EXPECT_FALSE(rest.paused);
}

}  // namespace
