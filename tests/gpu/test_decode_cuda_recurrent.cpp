// The CUDA recurrent decoder (persistent kernel, CUDA graph with a WHILE node, host loop) against
// the CPU decoder through the public API: LSTM and GRU stacks, lengths, masks, rows of length 0,
// f32 and f16, and pause/resume bit-identical to an uninterrupted run. Skipped without a device.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gpu/decode_gpu_test_support.hpp"

namespace loom::decode_testing {
namespace {

using decode::RecurrentSpec;

class CudaRecurrentDecoder : public CudaDecoderTest {};

enum class Rows { full, lengths, mask };

struct Case {
  CellType type = CellType::lstm;
  int layers = 1;
  int batch = 1;
  int hidden = 128;
  int input = 64;
  int steps = 6;
  bool linear_before_reset = false;
  Rows rows = Rows::full;
  bool initial_state = false;
  std::uint32_t seed = 1;

  std::string name() const {
    std::ostringstream s;
    s << (type == CellType::lstm ? "LSTM" : "GRU") << (linear_before_reset ? "(lbr)" : "") << " layers=" << layers
      << " batch=" << batch << " hidden=" << hidden << " input=" << input << " steps=" << steps << " rows="
      << (rows == Rows::full      ? "full"
          : rows == Rows::lengths ? "lengths"
                                  : "mask");
    return s.str();
  }
};

// Lengths with a 0, the full length and values between.
std::vector<std::int32_t> row_lengths(const Case& c) {
  std::vector<std::int32_t> lengths(static_cast<std::size_t>(c.batch));
  for (int b = 0; b < c.batch; ++b) lengths[b] = b == 0 ? c.steps : (b == 1 ? 0 : (b * 5 + 3) % (c.steps + 1));
  return lengths;
}

// The mask for those lengths: ones, then zeros, then some ones again that must be ignored.
std::vector<std::uint8_t> mask_for(const Case& c, const std::vector<std::int32_t>& lengths) {
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(c.steps) * c.batch);
  for (int t = 0; t < c.steps; ++t)
    for (int b = 0; b < c.batch; ++b)
      mask[static_cast<std::size_t>(t) * c.batch + b] = t < lengths[b] || t >= lengths[b] + 2 ? 1 : 0;
  return mask;
}

struct Inputs {
  Tensor x, h0, c0;  // f32, already rounded to the dtype under test
  std::vector<std::int32_t> lengths;
  std::vector<std::uint8_t> mask;
};

Inputs make_inputs(const Case& c, DType dtype) {
  Inputs in;
  in.x = rounded(testing::random_tensor(Shape{c.steps, c.batch, c.input}, c.seed + 100, -1.0f, 1.0f), dtype);
  const Shape state{c.layers, c.batch, c.hidden};
  in.h0 = c.initial_state ? rounded(testing::random_tensor(state, c.seed + 101, -0.5f, 0.5f), dtype) : Tensor();
  in.c0 = c.initial_state ? rounded(testing::random_tensor(state, c.seed + 102, -0.5f, 0.5f), dtype) : Tensor();
  if (c.rows != Rows::full) in.lengths = row_lengths(c);
  if (c.rows == Rows::mask) in.mask = mask_for(c, in.lengths);
  return in;
}

struct Outcome {
  std::vector<float> y, h, c;
  std::vector<unsigned char> y_bytes, h_bytes, c_bytes;  // as stored, for bit-identity checks
  DecodeResult result;
};

std::vector<unsigned char> raw(DecodeEngine& engine, const DeviceBuffer& buffer, std::size_t bytes) {
  std::vector<unsigned char> v(bytes);
  engine.download(v.data(), buffer, bytes);
  return v;
}
std::vector<float> as_floats(const std::vector<unsigned char>& bytes, DType dtype) {
  const std::size_t n = bytes.size() / dtype_size(dtype);
  Tensor t(dtype, Shape{static_cast<std::int64_t>(n)});
  std::memcpy(t.data(), bytes.data(), bytes.size());
  const Tensor f = t.to(DType::f32);
  const auto v = f.values<float>();
  return {v.begin(), v.end()};
}

// Device buffers of one sample in the decoder's dtype.
struct Sample {
  DeviceBuffer x, lengths, mask, h0, c0, y, h, c;
  std::size_t y_bytes = 0, state_bytes = 0;
};

Sample upload(DecodeEngine& engine, const Case& c, const Inputs& in, DType dtype) {
  Sample s;
  s.x = to_device(engine, in.x.to(dtype));
  if (!in.lengths.empty() && c.rows == Rows::lengths) s.lengths = to_device(engine, in.lengths);
  if (!in.mask.empty()) s.mask = to_device(engine, in.mask);
  if (in.h0.bytes()) s.h0 = to_device(engine, in.h0.to(dtype));
  if (in.c0.bytes()) s.c0 = to_device(engine, in.c0.to(dtype));
  const std::size_t e = dtype_size(dtype);
  s.y_bytes = static_cast<std::size_t>(c.steps) * c.batch * c.hidden * e;
  s.state_bytes = static_cast<std::size_t>(c.layers) * c.batch * c.hidden * e;
  s.y = poisoned(engine, s.y_bytes);
  s.h = poisoned(engine, s.state_bytes);
  s.c = poisoned(engine, s.state_bytes);
  return s;
}

DecodeArgs args_for(const Case& c, const Sample& s) {
  DecodeArgs a;
  a.batch = c.batch;
  a.steps = c.steps;
  a.input = s.x.data();
  a.output = s.y.data();
  a.lengths = s.lengths.as<const std::int32_t>();
  a.mask = s.mask.as<const std::uint8_t>();
  a.initial_h = s.h0.data();
  a.initial_c = c.type == CellType::lstm ? s.c0.data() : nullptr;
  a.final_h = s.h.data();
  a.final_c = c.type == CellType::lstm ? s.c.data() : nullptr;
  return a;
}

Outcome collect(DecodeEngine& engine, const Case& c, const Sample& s, DType dtype, DecodeResult result) {
  Outcome o;
  o.result = result;
  o.y_bytes = raw(engine, s.y, s.y_bytes);
  o.h_bytes = raw(engine, s.h, s.state_bytes);
  o.y = as_floats(o.y_bytes, dtype);
  o.h = as_floats(o.h_bytes, dtype);
  if (c.type == CellType::lstm) {
    o.c_bytes = raw(engine, s.c, s.state_bytes);
    o.c = as_floats(o.c_bytes, dtype);
  }
  return o;
}

Outcome run_once(DecodeEngine& engine, DecoderId id, const Case& c, const Inputs& in, DType dtype,
                 DecodeMethod method) {
  const Sample s = upload(engine, c, in, dtype);
  const DecodeResult result = engine.run(id, args_for(c, s), method).get();
  return collect(engine, c, s, dtype, result);
}

DecoderId add(DecodeEngine& engine, const CellStack& cells, DType dtype, const std::string& name) {
  DecoderOptions named = options(dtype);
  named.name = name;
  return engine.add(RecurrentSpec{cells}, named);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double abs, double rel,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::isfinite(got[i]) && std::fabs(got[i] - want[i]) <= abs + rel * std::fabs(want[i]);
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " differ; first at " << first << ": "
                     << got[first] << " vs " << want[first];
}

int loop_count(const Case& c, const Inputs& in) {
  if (in.lengths.empty()) return c.steps;
  int count = 0;
  for (std::int32_t l : in.lengths) count = std::max(count, static_cast<int>(l));
  return count;
}

// CUDA (every method) against the CPU decoder on the same (dtype-rounded) weights and inputs.
void expect_matches_cpu(const Case& c, DType dtype, double abs, double rel) {
  SCOPED_TRACE(c.name() + " dtype=" + std::string(dtype_name(dtype)));
  const CellStack cells = rounded(random_cells(c.type, c.input, c.hidden, c.layers, c.seed, c.linear_before_reset, true,
                                               1.0f / std::sqrt(static_cast<float>(c.hidden))),
                                  dtype);
  const Inputs in = make_inputs(c, dtype);
  DecodeEngine cpu("cpu");
  const Outcome want =
      run_once(cpu, add(cpu, cells, DType::f32, "reference"), c, in, DType::f32, DecodeMethod::automatic);
  ASSERT_EQ(want.result.steps_run, loop_count(c, in));

  DecodeEngine cuda("cuda");
  const DecoderId id = add(cuda, cells, dtype, "under_test");
  for (DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const Outcome got = run_once(cuda, id, c, in, dtype, method);
    EXPECT_EQ(got.result.steps_run, want.result.steps_run);
    EXPECT_EQ(got.result.next_step, want.result.steps_run);
    EXPECT_FALSE(got.result.paused);
    expect_close(got.y, want.y, abs, rel, "output");
    expect_close(got.h, want.h, abs, rel, "final_h");
    if (c.type == CellType::lstm) expect_close(got.c, want.c, abs, rel, "final_c");
  }
}

TEST_F(CudaRecurrentDecoder, LstmMatchesCpuForEveryMethod) {
  expect_matches_cpu({.type = CellType::lstm, .batch = 1, .hidden = 128, .steps = 9, .seed = 1}, DType::f32, 1e-4,
                     1e-3);
  expect_matches_cpu({.type = CellType::lstm,
                      .layers = 2,
                      .batch = 7,
                      .hidden = 128,
                      .input = 96,
                      .steps = 8,
                      .rows = Rows::lengths,
                      .initial_state = true,
                      .seed = 2},
                     DType::f32, 1e-4, 1e-3);
  expect_matches_cpu(
      {.type = CellType::lstm, .layers = 2, .batch = 7, .hidden = 128, .steps = 7, .rows = Rows::mask, .seed = 3},
      DType::f32, 1e-4, 1e-3);
  expect_matches_cpu({.type = CellType::lstm,
                      .batch = 64,
                      .hidden = 1024,
                      .input = 256,
                      .steps = 3,
                      .rows = Rows::lengths,
                      .initial_state = true,
                      .seed = 4},
                     DType::f32, 1e-4, 1e-3);
  expect_matches_cpu(
      {.type = CellType::lstm, .layers = 2, .batch = 1, .hidden = 1024, .input = 128, .steps = 4, .seed = 5},
      DType::f32, 1e-4, 1e-3);
  // A hidden size that is no multiple of the vector width takes the scalar loads.
  expect_matches_cpu({.type = CellType::lstm,
                      .layers = 2,
                      .batch = 3,
                      .hidden = 37,
                      .input = 5,
                      .steps = 5,
                      .rows = Rows::lengths,
                      .seed = 6},
                     DType::f32, 1e-4, 1e-3);
}

TEST_F(CudaRecurrentDecoder, GruMatchesCpuForEveryMethod) {
  for (const bool lbr : {false, true}) {
    expect_matches_cpu(
        {.type = CellType::gru, .batch = 1, .hidden = 128, .steps = 9, .linear_before_reset = lbr, .seed = 11},
        DType::f32, 1e-4, 1e-3);
    expect_matches_cpu({.type = CellType::gru,
                        .layers = 2,
                        .batch = 7,
                        .hidden = 128,
                        .input = 80,
                        .steps = 8,
                        .linear_before_reset = lbr,
                        .rows = Rows::mask,
                        .initial_state = true,
                        .seed = 12},
                       DType::f32, 1e-4, 1e-3);
    expect_matches_cpu({.type = CellType::gru,
                        .batch = 64,
                        .hidden = 1024,
                        .input = 256,
                        .steps = 3,
                        .linear_before_reset = lbr,
                        .rows = Rows::lengths,
                        .seed = 13},
                       DType::f32, 1e-4, 1e-3);
    expect_matches_cpu({.type = CellType::gru,
                        .layers = 2,
                        .batch = 5,
                        .hidden = 30,
                        .input = 7,
                        .steps = 4,
                        .linear_before_reset = lbr,
                        .rows = Rows::lengths,
                        .seed = 14},
                       DType::f32, 1e-4, 1e-3);
  }
}

TEST_F(CudaRecurrentDecoder, F16MatchesCpuOnRoundedInputs) {
  expect_matches_cpu({.type = CellType::lstm,
                      .layers = 2,
                      .batch = 7,
                      .hidden = 128,
                      .steps = 8,
                      .rows = Rows::lengths,
                      .initial_state = true,
                      .seed = 21},
                     DType::f16, 2e-2, 2e-2);
  expect_matches_cpu({.type = CellType::lstm, .batch = 1, .hidden = 1024, .input = 256, .steps = 6, .seed = 22},
                     DType::f16, 2e-2, 2e-2);
  expect_matches_cpu(
      {.type = CellType::gru, .layers = 2, .batch = 64, .hidden = 128, .steps = 5, .rows = Rows::mask, .seed = 23},
      DType::f16, 2e-2, 2e-2);
  expect_matches_cpu({.type = CellType::gru,
                      .batch = 7,
                      .hidden = 1024,
                      .steps = 4,
                      .linear_before_reset = true,
                      .rows = Rows::lengths,
                      .seed = 24},
                     DType::f16, 2e-2, 2e-2);
}

TEST_F(CudaRecurrentDecoder, EveryRowOfLengthZeroRunsNoStep) {
  const Case c{.type = CellType::lstm,
               .layers = 2,
               .batch = 3,
               .hidden = 128,
               .steps = 4,
               .rows = Rows::lengths,
               .initial_state = true,
               .seed = 31};
  const CellStack cells = random_cells(c.type, c.input, c.hidden, c.layers, c.seed);
  Inputs in = make_inputs(c, DType::f32);
  in.lengths.assign(3, 0);
  DecodeEngine cuda("cuda");
  const DecoderId id = add(cuda, cells, DType::f32, "empty_rows");
  for (DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const Outcome got = run_once(cuda, id, c, in, DType::f32, method);
    EXPECT_EQ(got.result.steps_run, 0);
    EXPECT_FALSE(got.result.paused);
    expect_close(got.y, std::vector<float>(got.y.size(), 0.0f), 0, 0, "output");
    const auto h0 = in.h0.values<float>();
    const auto c0 = in.c0.values<float>();
    expect_close(got.h, {h0.begin(), h0.end()}, 0, 0, "final_h");
    expect_close(got.c, {c0.begin(), c0.end()}, 0, 0, "final_c");
  }
}

TEST_F(CudaRecurrentDecoder, InfoNamesTheMethodsAndKeepsWeightsOnChip) {
  const CellStack cells = random_cells(CellType::lstm, 256, 1024, 1, 41);
  DecodeEngine cuda("cuda");
  const decode::DecoderInfo info = cuda.info(add(cuda, cells, DType::f16, "big"));
  EXPECT_EQ(info.kind, "recurrent");
  EXPECT_EQ(info.method, DecodeMethod::persistent);
  EXPECT_EQ(info.methods, std::vector<DecodeMethod>(std::begin(kMethods), std::end(kMethods)));
  EXPECT_EQ(info.recurrent_weight_bytes, 4u * 1024 * 1024 * 2);
  // 8 MB of f16 R over the SMs' shared memory: fits on H100/H200-class devices (132 SMs × 227 KB).
  EXPECT_TRUE(info.weights_on_chip);
}

// A persistent grid capped at a few SMs computes what the CPU does; at 8 SMs a block's 128 units of
// the f16 LSTM above need 1 MiB of weights, so they leave the chip.
TEST_F(CudaRecurrentDecoder, GridCappedToFewSmsMatchesCpu) {
  const Case c{.type = CellType::lstm,
               .batch = 7,
               .hidden = 1024,
               .input = 256,
               .steps = 5,
               .rows = Rows::lengths,
               .initial_state = true,
               .seed = 51};
  const CellStack cells = random_cells(c.type, c.input, c.hidden, c.layers, c.seed, false, true,
                                       1.0f / std::sqrt(static_cast<float>(c.hidden)));
  const Inputs in = make_inputs(c, DType::f32);
  DecodeEngine cpu("cpu");
  const Outcome want =
      run_once(cpu, add(cpu, cells, DType::f32, "reference"), c, in, DType::f32, DecodeMethod::automatic);
  DecodeEngine cuda("cuda");
  for (const int cap : {1, 8}) {
    SCOPED_TRACE("persistent_grid_max_sms " + std::to_string(cap));
    DecoderOptions capped = options(DType::f32);
    capped.name = "capped" + std::to_string(cap);
    capped.persistent_grid_max_sms = cap;
    const DecoderId id = cuda.add(RecurrentSpec{cells}, capped);
    const Outcome got = run_once(cuda, id, c, in, DType::f32, DecodeMethod::persistent);
    EXPECT_EQ(got.result.steps_run, want.result.steps_run);
    expect_close(got.y, want.y, 1e-4, 1e-3, "output");
    expect_close(got.h, want.h, 1e-4, 1e-3, "final_h");
    expect_close(got.c, want.c, 1e-4, 1e-3, "final_c");
  }
  DecoderOptions half = options(DType::f16);
  half.name = "capped_f16";
  half.persistent_grid_max_sms = 8;
  EXPECT_FALSE(
      cuda.info(cuda.add(RecurrentSpec{random_cells(CellType::lstm, 256, 1024, 1, 41)}, half)).weights_on_chip);
}

// Pause before every call: each call runs one step and stops; resuming from the saved state until
// the end gives the same bytes as one uninterrupted call.
void expect_pause_resume_identical(const Case& c, DType dtype, bool flag_while_running) {
  SCOPED_TRACE(c.name() + " dtype=" + std::string(dtype_name(dtype)));
  const CellStack cells = random_cells(c.type, c.input, c.hidden, c.layers, c.seed, c.linear_before_reset, true,
                                       1.0f / std::sqrt(static_cast<float>(c.hidden)));
  const Inputs in = make_inputs(c, dtype);
  DecodeEngine cuda("cuda");
  const DecoderId id = add(cuda, cells, dtype, "pausable");
  const bool lstm = c.type == CellType::lstm;
  for (DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const Outcome whole = run_once(cuda, id, c, in, dtype, method);
    ASSERT_FALSE(whole.result.paused);

    Sample s = upload(cuda, c, in, dtype);
    // Two state pairs used in turn: a call reads one and writes the other.
    DeviceBuffer state_h[2] = {poisoned(cuda, s.state_bytes), poisoned(cuda, s.state_bytes)};
    DeviceBuffer state_c[2] = {poisoned(cuda, s.state_bytes), poisoned(cuda, s.state_bytes)};
    decode::PauseFlag flag = cuda.make_pause_flag();
    DecodeArgs a = args_for(c, s);
    a.pause = &flag;
    int next = 0, calls = 0, pauses = 0;
    for (;;) {
      a.start_step = next;
      a.final_h = state_h[calls % 2].data();
      a.final_c = lstm ? state_c[calls % 2].data() : nullptr;
      if (calls > 0) {
        a.initial_h = state_h[(calls + 1) % 2].data();
        a.initial_c = lstm ? state_c[(calls + 1) % 2].data() : nullptr;
      }
      DecodeResult r;
      if (flag_while_running) {
        flag.clear();
        auto pending = cuda.run(id, a, method);
        std::this_thread::sleep_for(std::chrono::microseconds(200 + 150 * calls));
        flag.request();
        r = pending.get();
      } else {
        flag.request();
        r = cuda.run(id, a, method).get();
        if (r.paused) EXPECT_GE(r.steps_run, 1);
      }
      ++calls;
      ASSERT_EQ(r.next_step, next + r.steps_run);
      next = r.next_step;
      if (!r.paused) break;
      ++pauses;
      ASSERT_LT(calls, c.steps + 2) << "the loop makes no progress";
    }
    EXPECT_EQ(next, whole.result.steps_run);
    if (!flag_while_running) EXPECT_GT(pauses, 0);
    const std::size_t last = (calls - 1) % 2;
    // Compared as booleans: a failure would otherwise print megabytes.
    EXPECT_TRUE(raw(cuda, s.y, s.y_bytes) == whole.y_bytes) << "output after " << calls << " calls";
    EXPECT_TRUE(raw(cuda, state_h[last], s.state_bytes) == whole.h_bytes) << "final_h after " << calls << " calls";
    if (lstm) EXPECT_TRUE(raw(cuda, state_c[last], s.state_bytes) == whole.c_bytes) << "final_c";
  }
}

TEST_F(CudaRecurrentDecoder, PauseBeforeEachCallResumesBitIdentical) {
  expect_pause_resume_identical({.type = CellType::lstm,
                                 .layers = 2,
                                 .batch = 7,
                                 .hidden = 128,
                                 .steps = 6,
                                 .rows = Rows::lengths,
                                 .initial_state = true,
                                 .seed = 51},
                                DType::f32, false);
  expect_pause_resume_identical(
      {.type = CellType::gru, .layers = 2, .batch = 7, .hidden = 128, .steps = 6, .rows = Rows::mask, .seed = 52},
      DType::f16, false);
  expect_pause_resume_identical({.type = CellType::lstm, .batch = 1, .hidden = 1024, .steps = 5, .seed = 53},
                                DType::f16, false);
}

TEST_F(CudaRecurrentDecoder, PauseWhileRunningResumesBitIdentical) {
  expect_pause_resume_identical(
      {.type = CellType::lstm, .layers = 2, .batch = 4, .hidden = 256, .steps = 400, .initial_state = true, .seed = 61},
      DType::f32, true);
  expect_pause_resume_identical(
      {.type = CellType::gru, .batch = 1, .hidden = 512, .steps = 400, .linear_before_reset = false, .seed = 62},
      DType::f16, true);
}

}  // namespace
}  // namespace loom::decode_testing
