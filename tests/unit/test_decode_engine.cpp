// The DecodeEngine on the CPU backend: spec and argument checks naming the field, method names,
// buffers and pause flags, futures and callbacks, many runs queued on two decoders, and the
// destructor finishing what was queued.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "unit/decode_test_support.hpp"

using namespace loom;
using namespace loom::decode_testing;
using decode::DecodeArgs;
using decode::DecodeMethod;
using decode::DecodeResult;
using decode::DecoderOptions;
using loom::test_support::expect_error;
using loom::testing::random_tensor;

namespace {

decode::RecurrentSpec lstm_spec(int layers = 2, std::uint32_t seed = 1) {
  return {random_cells(CellType::lstm, 4, 6, layers, seed)};
}

decode::GreedySpec greedy_spec(std::uint32_t seed = 5) {
  decode::GreedySpec spec;
  spec.cells = random_cells(CellType::gru, 3, 5, 1, seed);
  spec.embedding = random_tensor(Shape{7, 3}, seed + 1);
  spec.projection = random_tensor(Shape{7, 5}, seed + 2);
  spec.end_token = 2;
  return spec;
}

// Buffers for one recurrent sample of the lstm_spec() shape.
struct RecurrentSample {
  static constexpr int T = 4, B = 3, I = 4, H = 6, L = 2;
  decode::DeviceBuffer input, output, final_h, final_c;
  DecodeArgs args;
  explicit RecurrentSample(decode::DecodeEngine& engine, std::uint32_t seed = 7)
      : input(to_device(engine, random_tensor(Shape{T, B, I}, seed))),
        output(poisoned(engine, T * B * H * sizeof(float))),
        final_h(poisoned(engine, L * B * H * sizeof(float))),
        final_c(poisoned(engine, L * B * H * sizeof(float))) {
    args.batch = B;
    args.steps = T;
    args.input = input.data();
    args.output = output.data();
  }
};

}  // namespace

TEST(DecodeEngine, MethodNamesRoundTrip) {
  for (DecodeMethod m :
       {DecodeMethod::automatic, DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop})
    EXPECT_EQ(decode::method_from_name(decode::method_name(m)), m);
  EXPECT_EQ(decode::method_name(DecodeMethod::host_loop), "host_loop");
  expect_error([] { decode::method_from_name("fused"); }, ErrorCode::invalid_argument,
               {"'fused'", "persistent", "graph", "host_loop"});
}

TEST(DecodeEngine, InfoDescribesEachDecoder) {
  decode::DecodeEngine engine("cpu");
  EXPECT_EQ(engine.backend_name(), "cpu");
  const decode::RecurrentSpec spec = lstm_spec();
  const auto first = engine.add(spec);
  DecoderOptions named;
  named.name = "tokens";
  named.method = DecodeMethod::host_loop;
  const auto second = engine.add(greedy_spec(), named);
  const auto third = engine.add(random_encoder(8, 12, 3, 9));

  const decode::DecoderInfo a = engine.info(first);
  EXPECT_EQ(a.name, "decoder0");
  EXPECT_EQ(a.kind, "recurrent");
  EXPECT_EQ(a.method, DecodeMethod::persistent);
  EXPECT_EQ(a.methods.size(), 3u);
  EXPECT_EQ(a.dtype, DType::f32);
  // Two layers: W [24, 4] and [24, 6], R [24, 6] each, b [48] each.
  const std::uint64_t cell_bytes = 4 * (24 * 4 + 24 * 6 + 24 * 6 + 24 * 6 + 2 * 48);
  EXPECT_EQ(a.weight_bytes, cell_bytes);
  EXPECT_EQ(a.recurrent_weight_bytes, cell_bytes);
  EXPECT_FALSE(a.weights_on_chip);

  const decode::DecoderInfo b = engine.info(second);
  EXPECT_EQ(b.name, "tokens");
  EXPECT_EQ(b.kind, "greedy");
  EXPECT_EQ(b.method, DecodeMethod::host_loop);
  const decode::DecoderInfo c = engine.info(third);
  EXPECT_EQ(c.name, "decoder2");
  EXPECT_EQ(c.kind, "encoder");
  // One block per step: scale, bias [8]; w1 [12, 8], b1 [12]; w2 [8, 12], b2 [8].
  EXPECT_EQ(c.recurrent_weight_bytes, 4u * (8 + 8 + 96 + 12 + 96 + 8));
  EXPECT_EQ(c.weight_bytes, 3 * c.recurrent_weight_bytes);
  expect_error([&] { engine.info(17); }, ErrorCode::invalid_argument, {"17"});
}

TEST(DecodeEngine, SpecErrorsNameTheDecoderAndField) {
  decode::DecodeEngine engine("cpu");
  DecoderOptions options;
  options.name = "dec0";

  decode::RecurrentSpec bad_r = lstm_spec();
  bad_r.cells.layers[1].r = random_tensor(Shape{24, 5}, 3);
  expect_error([&] { engine.add(bad_r, options); }, ErrorCode::shape_mismatch,
               {"decoder 'dec0'", "cells.layers[1].r", "[24, 5]", "[24, 6]"});

  decode::RecurrentSpec bad_w = lstm_spec();
  bad_w.cells.layers[0].w = Tensor(DType::f16, Shape{24, 4});
  expect_error([&] { engine.add(bad_w, options); }, ErrorCode::invalid_argument, {"cells.layers[0].w", "f16"});

  decode::RecurrentSpec bad_b = lstm_spec();
  bad_b.cells.layers[0].b = random_tensor(Shape{24}, 3);
  expect_error([&] { engine.add(bad_b, options); }, ErrorCode::shape_mismatch, {"cells.layers[0].b", "[48]"});

  decode::RecurrentSpec no_layers = lstm_spec();
  no_layers.cells.layers.clear();
  expect_error([&] { engine.add(no_layers, options); }, ErrorCode::invalid_argument, {"dec0", "cells.layers"});

  decode::RecurrentSpec huge = lstm_spec();
  huge.cells.hidden_size = 5000;
  expect_error([&] { engine.add(huge, options); }, ErrorCode::invalid_argument, {"cells.hidden_size", "5000"});

  decode::RecurrentSpec lbr_lstm = lstm_spec();
  lbr_lstm.cells.linear_before_reset = true;
  expect_error([&] { engine.add(lbr_lstm, options); }, ErrorCode::invalid_argument, {"linear_before_reset"});

  decode::GreedySpec bad_end = greedy_spec();
  bad_end.end_token = 7;
  expect_error([&] { engine.add(bad_end, options); }, ErrorCode::invalid_argument, {"dec0", "end_token", "7"});

  decode::GreedySpec bad_projection = greedy_spec();
  bad_projection.projection = random_tensor(Shape{6, 5}, 3);
  expect_error([&] { engine.add(bad_projection, options); }, ErrorCode::shape_mismatch, {"projection", "[7, 5]"});

  decode::EncoderStackSpec mixed_ff = random_encoder(8, 12, 2, 4);
  mixed_ff.blocks[1].w1 = random_tensor(Shape{10, 8}, 3);
  expect_error([&] { engine.add(mixed_ff, options); }, ErrorCode::shape_mismatch, {"blocks[1].w1", "[12, 8]"});

  decode::EncoderStackSpec no_width = random_encoder(8, 12, 2, 4);
  no_width.width = 0;
  expect_error([&] { engine.add(no_width, options); }, ErrorCode::invalid_argument, {"width"});

  DecoderOptions wide = options;
  wide.max_batch = 65;
  expect_error([&] { engine.add(lstm_spec(), wide); }, ErrorCode::invalid_argument, {"dec0", "max_batch", "65"});

  DecoderOptions negative_cap = options;
  negative_cap.persistent_grid_max_sms = -1;
  expect_error([&] { engine.add(lstm_spec(), negative_cap); }, ErrorCode::invalid_argument,
               {"dec0", "persistent_grid_max_sms", "-1"});

  DecoderOptions half = options;
  half.dtype = DType::f16;
  expect_error([&] { engine.add(lstm_spec(), half); }, ErrorCode::unsupported, {"decoder 'dec0'", "f16"});

  // Nothing above was registered, so the name is still free; a second use is not.
  engine.add(lstm_spec(), options);
  expect_error([&] { engine.add(lstm_spec(), options); }, ErrorCode::invalid_argument, {"'dec0'", "already"});
}

TEST(DecodeEngine, ArgumentErrorsNameTheField) {
  decode::DecodeEngine engine("cpu");
  DecoderOptions options;
  options.name = "rnn";
  options.max_batch = 4;
  const auto rnn = engine.add(lstm_spec(), options);
  const auto greedy = engine.add(greedy_spec());
  const auto encoder = engine.add(random_encoder(8, 12, 3, 9));
  RecurrentSample sample(engine);
  auto lengths = to_device(engine, std::vector<std::int32_t>{1, 2, 3});
  auto mask = to_device(engine, std::vector<std::uint8_t>(12, 1));
  decode::PauseFlag flag = engine.make_pause_flag();

  const auto rejects = [&](decode::DecoderId id, auto change, ErrorCode code,
                           std::initializer_list<std::string> parts) {
    DecodeArgs args = sample.args;
    change(args);
    expect_error([&] { engine.run(id, args); }, code, parts);
  };
  rejects(rnn, [](DecodeArgs& a) { a.batch = 0; }, ErrorCode::invalid_argument, {"decoder 'rnn'", "args.batch"});
  rejects(rnn, [](DecodeArgs& a) { a.batch = 5; }, ErrorCode::invalid_argument, {"args.batch = 5", "[1, 4]"});
  rejects(rnn, [](DecodeArgs& a) { a.steps = -1; }, ErrorCode::invalid_argument, {"args.steps"});
  rejects(rnn, [](DecodeArgs& a) { a.input = nullptr; }, ErrorCode::invalid_argument, {"args.input"});
  rejects(rnn, [](DecodeArgs& a) { a.output = nullptr; }, ErrorCode::invalid_argument, {"args.output"});
  rejects(rnn,
          [&](DecodeArgs& a) {
            a.lengths = lengths.as<std::int32_t>();
            a.mask = mask.as<std::uint8_t>();
          },
          ErrorCode::invalid_argument, {"args.lengths", "args.mask"});
  rejects(rnn, [&](DecodeArgs& a) { a.out_lengths = lengths.as<std::int32_t>(); }, ErrorCode::invalid_argument,
          {"args.out_lengths"});
  rejects(rnn, [](DecodeArgs& a) { a.start_step = 5; }, ErrorCode::invalid_argument, {"args.start_step = 5"});
  rejects(rnn, [&](DecodeArgs& a) { a.pause = &flag; }, ErrorCode::invalid_argument, {"args.pause", "final_h"});
  rejects(rnn,
          [&](DecodeArgs& a) {
            a.pause = &flag;
            a.final_h = sample.final_h.data();
          },
          ErrorCode::invalid_argument, {"args.pause", "final_c"});
  rejects(greedy, [&](DecodeArgs& a) { a.mask = mask.as<std::uint8_t>(); }, ErrorCode::invalid_argument, {"args.mask"});
  rejects(greedy, [&](DecodeArgs& a) { a.pause = &flag; }, ErrorCode::unsupported, {"args.pause"});
  rejects(greedy, [&](DecodeArgs& a) { a.initial_c = sample.final_c.data(); }, ErrorCode::invalid_argument,
          {"args.initial_c"});
  rejects(encoder, [](DecodeArgs& a) { a.steps = 4; }, ErrorCode::invalid_argument, {"args.steps = 4", "3 blocks"});
  rejects(encoder,
          [&](DecodeArgs& a) {
            a.steps = 0;
            a.lengths = lengths.as<std::int32_t>();
          },
          ErrorCode::invalid_argument, {"args.lengths"});
  expect_error([&] { engine.run(99, sample.args); }, ErrorCode::invalid_argument, {"99"});

  decode::PauseFlag moved = std::move(flag);
  rejects(rnn,
          [&](DecodeArgs& a) {
            a.pause = &flag;  // NOLINT: using the moved-from flag is the point
            a.final_h = sample.final_h.data();
            a.final_c = sample.final_c.data();
          },
          ErrorCode::invalid_argument, {"moved-from"});
  EXPECT_FALSE(flag.requested());  // NOLINT: a moved-from flag reads as never requested
  moved.request();
  EXPECT_TRUE(moved.requested());
}

TEST(DecodeEngine, EveryMethodGivesTheSameResultOnTheCpu) {
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(lstm_spec());
  std::vector<std::vector<float>> outputs;
  for (DecodeMethod m :
       {DecodeMethod::automatic, DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop}) {
    RecurrentSample sample(engine);
    EXPECT_EQ(engine.run(id, sample.args, m).get().steps_run, RecurrentSample::T);
    outputs.push_back(from_device<float>(engine, sample.output, RecurrentSample::T * RecurrentSample::B * 6));
  }
  for (const auto& out : outputs) EXPECT_EQ(out, outputs.front());
}

TEST(DecodeEngine, BuffersRoundTripAndCheckSizes) {
  decode::DecodeEngine engine("cpu");
  const std::vector<float> values{1.5f, -2.0f, 3.25f};
  decode::DeviceBuffer buffer = engine.allocate(values.size() * sizeof(float));
  EXPECT_EQ(buffer.bytes(), 12u);
  engine.upload(buffer, values.data(), 12);
  EXPECT_EQ(from_device<float>(engine, buffer, 3), values);
  float too_many[4] = {};
  expect_error([&] { engine.upload(buffer, too_many, 16); }, ErrorCode::invalid_argument, {"16"});
  expect_error([&] { engine.download(too_many, buffer, 16); }, ErrorCode::invalid_argument, {"16"});
  decode::DeviceBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);  // NOLINT: checking the moved-from state
  EXPECT_EQ(moved.bytes(), 12u);
  EXPECT_NE(engine.allocate(0).data(), nullptr);
}

TEST(DecodeEngine, BuffersAndFlagsMayOutliveTheEngine) {
  std::optional<decode::DeviceBuffer> buffer;
  std::optional<decode::PauseFlag> flag;
  {
    decode::DecodeEngine engine("cpu");
    buffer = engine.allocate(64);
    flag = engine.make_pause_flag();
  }
  flag->request();
  EXPECT_TRUE(flag->requested());
  buffer.reset();
  flag.reset();
}

TEST(DecodeEngine, FuturesAndCallbacksBothComplete) {
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(lstm_spec());
  RecurrentSample a(engine, 11), b(engine, 11);
  std::future<DecodeResult> future = engine.run(id, a.args);
  std::promise<DecodeResult> from_callback;
  engine.run(id, b.args, [&](std::exception_ptr error, DecodeResult result) {
    EXPECT_FALSE(error);
    from_callback.set_value(result);
  });
  const DecodeResult first = future.get();
  const DecodeResult second = from_callback.get_future().get();
  EXPECT_EQ(first.steps_run, RecurrentSample::T);
  EXPECT_EQ(second.steps_run, RecurrentSample::T);
  constexpr std::size_t count = RecurrentSample::T * RecurrentSample::B * 6;
  EXPECT_EQ(from_device<float>(engine, a.output, count), from_device<float>(engine, b.output, count));
}

TEST(DecodeEngine, ACallbackThatThrowsDoesNotStopTheEngine) {
  decode::DecodeEngine engine("cpu");
  const auto id = engine.add(lstm_spec());
  RecurrentSample sample(engine);
  engine.run(id, sample.args, [](std::exception_ptr, DecodeResult) { throw std::runtime_error("callback failed"); });
  EXPECT_EQ(engine.run(id, sample.args).get().steps_run, RecurrentSample::T);
}

TEST(DecodeEngine, ManyRunsOnTwoDecodersAllComplete) {
  decode::DecodeEngine engine("cpu");
  const auto rnn = engine.add(lstm_spec(1, 21));
  const auto encoder = engine.add(random_encoder(8, 12, 3, 22));
  constexpr int threads = 4, per_thread = 25;
  // The expected results, from one run each.
  RecurrentSample reference(engine, 23);
  engine.run(rnn, reference.args).get();
  constexpr std::size_t rnn_floats = RecurrentSample::T * RecurrentSample::B * 6;
  const auto rnn_expected = from_device<float>(engine, reference.output, rnn_floats);
  auto encoder_in = to_device(engine, random_tensor(Shape{2, 8}, 24));
  auto encoder_ref = poisoned(engine, 16 * sizeof(float));
  DecodeArgs encoder_args;
  encoder_args.batch = 2;
  encoder_args.input = encoder_in.data();
  encoder_args.output = encoder_ref.data();
  engine.run(encoder, encoder_args).get();
  const auto encoder_expected = from_device<float>(engine, encoder_ref, 16);

  std::atomic<int> correct{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&] {
      std::vector<std::unique_ptr<RecurrentSample>> samples;
      std::vector<decode::DeviceBuffer> encoder_outs;
      std::vector<std::future<DecodeResult>> futures;
      for (int i = 0; i < per_thread; ++i) {
        samples.push_back(std::make_unique<RecurrentSample>(engine, 23));
        futures.push_back(engine.run(rnn, samples.back()->args));
        encoder_outs.push_back(poisoned(engine, 16 * sizeof(float)));
        DecodeArgs args = encoder_args;
        args.output = encoder_outs.back().data();
        futures.push_back(engine.run(encoder, args));
      }
      for (auto& f : futures) f.get();
      for (int i = 0; i < per_thread; ++i) {
        if (from_device<float>(engine, samples[i]->output, rnn_floats) == rnn_expected) ++correct;
        if (from_device<float>(engine, encoder_outs[i], 16) == encoder_expected) ++correct;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(correct.load(), 2 * threads * per_thread);
}

TEST(DecodeEngine, SynchronizeAndTheDestructorWaitForQueuedRuns) {
  std::atomic<int> done{0};
  constexpr int runs = 40;
  // The samples outlive the engine (buffers may): the destructor still runs what reads them.
  std::vector<std::unique_ptr<RecurrentSample>> samples;
  {
    decode::DecodeEngine engine("cpu");
    const auto id = engine.add(lstm_spec());
    for (int i = 0; i < runs; ++i) samples.push_back(std::make_unique<RecurrentSample>(engine, 30 + i));
    const auto count_success = [&](std::exception_ptr error, DecodeResult) {
      if (!error) ++done;
    };
    for (int i = 0; i < runs / 2; ++i) engine.run(id, samples[i]->args, count_success);
    engine.synchronize();
    EXPECT_EQ(done.load(), runs / 2);
    for (int i = runs / 2; i < runs - 1; ++i) engine.run(id, samples[i]->args, count_success);
    // A callback that queues another run: the destructor waits for that one too.
    engine.run(id, samples[runs - 1]->args, [&](std::exception_ptr error, DecodeResult result) {
      count_success(error, result);
      engine.run(id, samples[0]->args, count_success);
    });
  }
  EXPECT_EQ(done.load(), runs + 1);
}
