// The CUDA greedy decoder (persistent kernel, CUDA graph with a WHILE node, host loop) through the
// public API: a hand-built counting model whose tokens are known, and seeded LSTM/GRU models
// against the CPU decoder token for token — end tokens, rows ending at different steps, the
// maximum length, start tokens outside the vocabulary, a vocabulary of 32000 over hidden 1024.
// Skipped without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gpu/decode_gpu_test_support.hpp"

namespace loom::decode_testing {
namespace {

using decode::GreedySpec;
using loom::testing::all_close;

class CudaGreedyDecoder : public CudaDecoderTest {};

struct GreedyOutcome {
  DecodeResult result;
  std::vector<std::int32_t> tokens, lengths;
  std::vector<float> final_h, final_c;  // f32 runs only
};

// One sample; outputs poisoned first so unwritten elements show.
GreedyOutcome run_greedy(DecodeEngine& engine, DecoderId id, const std::vector<std::int32_t>& first, int steps,
                         std::int64_t state_values, DecodeMethod method, bool lstm) {
  const int batch = static_cast<int>(first.size());
  auto input = to_device(engine, first);
  auto output = poisoned(engine, static_cast<std::size_t>(steps * batch) * sizeof(std::int32_t));
  auto out_lengths = poisoned(engine, first.size() * sizeof(std::int32_t));
  // 4 bytes per value covers f16 too; only f32 runs read the states back.
  auto final_h = poisoned(engine, static_cast<std::size_t>(state_values) * sizeof(float));
  auto final_c = poisoned(engine, static_cast<std::size_t>(state_values) * sizeof(float));
  DecodeArgs args;
  args.batch = batch;
  args.steps = steps;
  args.input = input.data();
  args.output = output.data();
  args.out_lengths = out_lengths.as<std::int32_t>();
  args.final_h = final_h.data();
  if (lstm) args.final_c = final_c.data();
  GreedyOutcome run;
  run.result = engine.run(id, args, method).get();
  run.tokens = from_device<std::int32_t>(engine, output, static_cast<std::size_t>(steps * batch));
  run.lengths = from_device<std::int32_t>(engine, out_lengths, first.size());
  run.final_h = from_device<float>(engine, final_h, static_cast<std::size_t>(state_values));
  if (lstm) run.final_c = from_device<float>(engine, final_c, static_cast<std::size_t>(state_values));
  return run;
}

TEST_F(CudaGreedyDecoder, CountingModelEndsEachRowOnItsOwnStep) {
  for (const DType dtype : {DType::f32, DType::f16}) {
    DecodeEngine cuda("cuda");
    const DecoderId id = cuda.add(counting_model(5), options(dtype));
    for (const DecodeMethod method : kMethods) {
      SCOPED_TRACE(name_of(method) + " " + std::string(dtype_name(dtype)));
      // From 0: 5 tokens; from 3: 2; from 5: wraps, 6; 7 and -1 lie outside the vocabulary; from
      // 4: the end token at once.
      const GreedyOutcome run = run_greedy(cuda, id, {0, 3, 5, 7, -1, 4}, 10, 6 * 6, method, true);
      EXPECT_EQ(run.result.steps_run, 6) << "the loop ends with its last row";
      EXPECT_EQ(run.result.next_step, 6);
      EXPECT_FALSE(run.result.paused);
      EXPECT_EQ(run.lengths, (std::vector<std::int32_t>{5, 2, 6, 0, 0, 1}));
      EXPECT_EQ(run.tokens, token_grid({{1, 2, 3, 4, 5}, {4, 5}, {0, 1, 2, 3, 4, 5}, {}, {}, {5}}, 10));
      if (dtype == DType::f32) {
        for (int j = 0; j < 6; ++j) {
          EXPECT_EQ(run.final_h[3 * 6 + j], 0.0f) << "a row that never ran keeps its zero state";
          EXPECT_EQ(run.final_c[4 * 6 + j], 0.0f);
        }
        // Row 1 last embedded token 4 (it ended on 5): its h peaks there.
        const std::vector<float> row1(run.final_h.begin() + 6, run.final_h.begin() + 12);
        EXPECT_EQ(std::max_element(row1.begin(), row1.end()) - row1.begin(), 4);
      }
    }
  }
}

TEST_F(CudaGreedyDecoder, MaximumLengthAndNoValidRow) {
  DecodeEngine cuda("cuda");
  const DecoderId with_end = cuda.add(counting_model(5));
  const DecoderId endless = cuda.add(counting_model(-1));
  for (const DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const GreedyOutcome short_run = run_greedy(cuda, with_end, {0, 3, 5}, 3, 3 * 6, method, true);
    EXPECT_EQ(short_run.result.steps_run, 3);
    EXPECT_EQ(short_run.lengths, (std::vector<std::int32_t>{3, 2, 3}));
    EXPECT_EQ(short_run.tokens, token_grid({{1, 2, 3}, {4, 5}, {0, 1, 2}}, 3));

    const GreedyOutcome long_run = run_greedy(cuda, endless, {0, 4, 9}, 8, 3 * 6, method, true);
    EXPECT_EQ(long_run.result.steps_run, 8);
    EXPECT_EQ(long_run.lengths, (std::vector<std::int32_t>{8, 8, 0}));
    EXPECT_EQ(long_run.tokens, token_grid({{1, 2, 3, 4, 5, 0, 1, 2}, {5, 0, 1, 2, 3, 4, 5, 0}, {}}, 8));

    const GreedyOutcome none = run_greedy(cuda, with_end, {-3, 6}, 4, 2 * 6, method, true);
    EXPECT_EQ(none.result.steps_run, 0);
    EXPECT_EQ(none.lengths, (std::vector<std::int32_t>{0, 0}));
    EXPECT_EQ(none.tokens, std::vector<std::int32_t>(8, -1));
  }
}

// The token of an endless reference run that splits the rows into the most different lengths
// when it becomes the end token.
std::int32_t splitting_end_token(const std::vector<std::int32_t>& tokens, int batch, int steps) {
  std::int32_t best = -1;
  std::size_t best_distinct = 0;
  for (const std::int32_t candidate : std::set<std::int32_t>(tokens.begin(), tokens.end())) {
    if (candidate < 0) continue;
    std::set<int> lengths;
    for (int b = 0; b < batch; ++b) {
      int length = steps;
      for (int t = 0; t < steps; ++t)
        if (tokens[t * batch + b] == candidate) {
          length = t + 1;
          break;
        }
      lengths.insert(length);
    }
    if (lengths.size() > best_distinct) best = candidate, best_distinct = lengths.size();
  }
  return best;
}

struct RandomCase {
  CellType type;
  bool lbr;
  int layers;
  std::int64_t vocab, input, hidden;
  int steps;
  std::vector<std::int32_t> first;
  float scale;
};

void expect_matches_cpu(const RandomCase& c, std::uint32_t seed, int persistent_grid_max_sms = 0) {
  SCOPED_TRACE(std::string(c.type == CellType::lstm ? "LSTM"
                           : c.lbr                  ? "GRU lbr"
                                                    : "GRU") +
               " layers " + std::to_string(c.layers) + " vocab " + std::to_string(c.vocab) + " hidden " +
               std::to_string(c.hidden));
  const bool lstm = c.type == CellType::lstm;
  const int batch = static_cast<int>(c.first.size());
  const std::int64_t state = c.layers * batch * c.hidden;
  GreedySpec spec = random_greedy(c.type, c.lbr, c.layers, c.vocab, c.input, c.hidden, seed, c.scale);

  // Pick an end token from an endless CPU run so that rows stop at different steps.
  DecodeEngine cpu("cpu");
  const GreedyOutcome endless = run_greedy(cpu, cpu.add(spec), c.first, c.steps, state, DecodeMethod::automatic, lstm);
  spec.end_token = splitting_end_token(endless.tokens, batch, c.steps);
  const GreedyOutcome want = run_greedy(cpu, cpu.add(spec), c.first, c.steps, state, DecodeMethod::automatic, lstm);

  DecodeEngine cuda("cuda");
  DecoderOptions cuda_options;
  cuda_options.persistent_grid_max_sms = persistent_grid_max_sms;
  const DecoderId id = cuda.add(spec, cuda_options);
  for (const DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const GreedyOutcome got = run_greedy(cuda, id, c.first, c.steps, state, method, lstm);
    EXPECT_EQ(got.tokens, want.tokens);
    EXPECT_EQ(got.lengths, want.lengths);
    EXPECT_EQ(got.result.steps_run, want.result.steps_run);
    EXPECT_TRUE(all_close(floats(Shape{state}, got.final_h), doubles(want.final_h), 1e-4, 1e-4));
    if (lstm) EXPECT_TRUE(all_close(floats(Shape{state}, got.final_c), doubles(want.final_c), 1e-4, 1e-4));
  }
}

TEST_F(CudaGreedyDecoder, SmallRandomModelsMatchTheCpuTokenForToken) {
  const std::vector<std::int32_t> first{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -1};
  // Sizes that are not multiples of the 16-byte packets take the scalar paths.
  expect_matches_cpu({CellType::lstm, false, 2, 13, 5, 7, 12, first, 0.8f}, 3000);
  expect_matches_cpu({CellType::gru, false, 1, 13, 5, 7, 12, first, 0.8f}, 3010);
  expect_matches_cpu({CellType::gru, true, 2, 13, 5, 7, 12, first, 0.8f}, 3020);
  expect_matches_cpu({CellType::lstm, false, 1, 50, 16, 32, 10, first, 0.5f}, 3030);
  expect_matches_cpu({CellType::gru, false, 2, 50, 16, 32, 10, first, 0.5f}, 3040);
}

TEST_F(CudaGreedyDecoder, FullBatchOfSixtyFourRows) {
  std::vector<std::int32_t> first(64);
  for (int b = 0; b < 64; ++b) first[b] = (b * 7) % 40;
  expect_matches_cpu({CellType::lstm, false, 1, 40, 24, 64, 8, first, 0.4f}, 3100);
}

TEST_F(CudaGreedyDecoder, LargeVocabularyAndHiddenSize) {
  // vocab 32000 × hidden 1024: the projection spans every block's slice; R is 16 MB in f32.
  expect_matches_cpu({CellType::lstm, false, 1, 32000, 256, 1024, 6, {17, 31999}, 0.05f}, 3200);
}

TEST_F(CudaGreedyDecoder, GridCappedToFewSms) {
  // 4 blocks: 256 hidden units and 8000 tokens of the vocabulary each; R no longer fits on chip.
  expect_matches_cpu({CellType::lstm, false, 1, 32000, 256, 1024, 6, {17, 31999}, 0.05f}, 3250, 4);
  expect_matches_cpu({CellType::gru, false, 2, 50, 16, 32, 10, {0, 1, 2, -1}, 0.5f}, 3260, 1);
}

TEST_F(CudaGreedyDecoder, InfoReportsTheMethodsAndWeights) {
  DecodeEngine cuda("cuda");
  const GreedySpec spec = random_greedy(CellType::lstm, false, 1, 100, 64, 128, 3300, 0.5f);
  const decode::DecoderInfo info = cuda.info(cuda.add(spec, options(DType::f16)));
  EXPECT_EQ(info.kind, "greedy");
  EXPECT_EQ(info.method, DecodeMethod::persistent);
  EXPECT_EQ(info.methods.size(), 3u);
  // f16: cells (W, R, both biases) and the projection with its bias, 2 bytes each.
  const std::uint64_t cells = 4 * 128 * 64 + 4 * 128 * 128 + 8 * 128;
  EXPECT_EQ(info.recurrent_weight_bytes, 2 * (cells + 100 * 128 + 100));
  EXPECT_EQ(info.weight_bytes, 2 * (cells + 100 * 128 + 100 + 100 * 64));
  EXPECT_TRUE(info.weights_on_chip) << "128 hidden units of f16 fit in any SM's shared memory";
}

}  // namespace
}  // namespace loom::decode_testing
