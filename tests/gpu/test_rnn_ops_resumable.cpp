// Pausing inside a Step on the CUDA backend (issue 7 items 2 and 5): the ONNX LSTM and GRU ops on
// the persistent device loop, paused after every time step and resumed, give the bits of one
// uninterrupted run() in f32 and f16 (and agree with the CPU backend); in the executor an urgent
// request pauses a long LSTM or GRU inside its Step, and every request keeps the bits of its run
// alone. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "gpu_op_harness.hpp"
#include "loom/executor.hpp"
#include "test_support.hpp"
#include "unit/test_executor_preempt_support.hpp"

namespace loom::gpu_testing {
namespace {

using RnnOpsResumable = CudaOpTest;
using OpResult = std::vector<Tensor>;

// One op on the CUDA backend with its device buffers, run whole or resumably. Outputs,
// workspace and state are poisoned (0xFF, NaN) before use, as another request would leave them.
class CudaRecurrentOp {
 public:
  CudaRecurrentOp(backend::Backend& cuda, OpCase op)
      : backend_(cuda),
        op_(std::move(op)),
        node_(make_node(op_.op_type, op_.attrs, op_.inputs.size(), op_.outputs, &op_.inputs)),
        kernel_(backend_.create_kernel(make_spec(node_, op_.inputs, op_.outputs))),
        stream_(backend_.create_stream()) {
    for (const OpInput& in : op_.inputs) {
      if (!in.value) {
        input_ptrs_.push_back(nullptr);
        continue;
      }
      void* p = buffer(in.value->bytes());
      stream_->copy_to_device(p, in.value->data(), in.value->bytes());
      input_ptrs_.push_back(p);
    }
    for (const OpOutput& out : op_.outputs) output_ptrs_.push_back(out.present ? buffer(bytes_of(out)) : nullptr);
    workspace_ = buffer(kernel_->workspace_bytes());
    state_ = buffer(kernel_->resume_state_bytes());
    progress_ = static_cast<backend::ResumeProgress*>(buffer(sizeof(backend::ResumeProgress)));
    stream_->synchronize();  // the copies' sources are op_'s tensors, but finish before any run
  }

  backend::OpKernel& kernel() { return *kernel_; }

  OpResult run_whole() {
    poison_outputs();
    poison(workspace_, kernel_->workspace_bytes());
    kernel_->run(input_ptrs_, output_ptrs_, workspace_, *stream_);
    return read_outputs();
  }

  // Resumable runs polling `flag` until one finishes; the workspace is poisoned before each.
  // With `set_flag_while_running`, each run starts with the flag clear and another thread sets it
  // shortly after the launch. Returns the outputs and each paused run's next_iteration.
  std::pair<OpResult, std::vector<std::int32_t>> run_paused(backend::PauseFlag& flag, bool set_flag_while_running) {
    poison_outputs();
    poison(state_, kernel_->resume_state_bytes());
    std::vector<std::int32_t> pauses;
    std::int32_t start = 0;
    for (int guard = 0; guard < 100000; ++guard) {
      poison(workspace_, kernel_->workspace_bytes());
      backend::ResumeContext context;
      context.state = state_;
      context.start_iteration = start;
      context.pause = flag.device_address();
      context.progress = progress_;
      std::thread setter;
      if (set_flag_while_running) {
        flag.clear();
        setter = std::thread([&flag] {
          std::this_thread::sleep_for(std::chrono::microseconds(100));
          flag.set();
        });
      }
      kernel_->run_resumable(input_ptrs_, output_ptrs_, workspace_, context, *stream_);
      backend::ResumeProgress report{-1, -1};
      stream_->copy_to_host(&report, progress_, sizeof(report));
      stream_->synchronize();
      if (setter.joinable()) setter.join();
      if (report.paused == 0) {
        EXPECT_EQ(report.next_iteration, kernel_->resume_iterations());
        return {read_outputs(), pauses};
      }
      EXPECT_EQ(report.paused, 1);
      if (pauses.empty()) expect_final_states_untouched();
      if (report.next_iteration <= start || report.next_iteration >= kernel_->resume_iterations()) {
        ADD_FAILURE() << "paused at iteration " << report.next_iteration << " after starting at " << start << " of "
                      << kernel_->resume_iterations();
        return {};
      }
      pauses.push_back(report.next_iteration);
      start = report.next_iteration;
    }
    ADD_FAILURE() << "the resumable runs never finished";
    return {};
  }

 private:
  static std::size_t bytes_of(const OpOutput& out) {
    return static_cast<std::size_t>(out.shape.numel()) * dtype_size(out.dtype);
  }
  void* buffer(std::size_t bytes) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(backend_, std::max<std::size_t>(bytes, 1)));
    return buffers_.back()->get();
  }
  void poison(void* ptr, std::size_t bytes) {
    const std::vector<std::uint8_t> host(bytes, std::uint8_t{0xFF});
    stream_->copy_to_device(ptr, host.data(), bytes);
    stream_->synchronize();
  }
  void poison_outputs() {
    for (std::size_t i = 0; i < op_.outputs.size(); ++i)
      if (output_ptrs_[i]) poison(output_ptrs_[i], bytes_of(op_.outputs[i]));
  }
  OpResult read_outputs() {
    OpResult result;
    for (std::size_t i = 0; i < op_.outputs.size(); ++i) {
      if (!output_ptrs_[i]) {
        result.emplace_back();
        continue;
      }
      Tensor host(op_.outputs[i].dtype, op_.outputs[i].shape);
      stream_->copy_to_host(host.data(), output_ptrs_[i], host.bytes());
      result.push_back(std::move(host));
    }
    stream_->synchronize();
    return result;
  }
  // A paused run writes its state to the request's state only: Y_h (and Y_c) keep the poison.
  void expect_final_states_untouched() {
    const OpResult now = read_outputs();
    for (std::size_t i = 1; i < now.size(); ++i) {
      if (!output_ptrs_[i]) continue;
      const auto* bytes = static_cast<const std::uint8_t*>(now[i].data());
      EXPECT_TRUE(std::all_of(bytes, bytes + now[i].bytes(), [](std::uint8_t b) { return b == 0xFF; }))
          << "output " << i << " written by a paused run";
    }
  }

  backend::Backend& backend_;
  OpCase op_;
  Node node_;
  std::unique_ptr<backend::OpKernel> kernel_;
  std::unique_ptr<backend::Stream> stream_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  std::vector<const void*> input_ptrs_;
  std::vector<void*> output_ptrs_;
  void* workspace_ = nullptr;
  void* state_ = nullptr;
  backend::ResumeProgress* progress_ = nullptr;
};

bool outputs_equal(const OpResult& a, const OpResult& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0) return false;
  return true;
}

struct RnnCase {
  std::string direction = "forward";
  std::int64_t steps = 48, batch = 3, input = 24, hidden = 64;
  bool lengths = true;  // rows of length T, 17 and 40 (batch 3 only)
  bool initial_states = true;
  std::int64_t linear_before_reset = 0;  // GRU
  float clip = 0.0f;                     // > 0 sends the node to the per-step path
};

std::int64_t directions(const RnnCase& c) { return c.direction == "bidirectional" ? 2 : 1; }

Tensor scaled_weights(const Shape& shape, std::int64_t fan_in, std::uint32_t seed) {
  const float a = 1.0f / std::sqrt(static_cast<float>(fan_in));
  return random_tensor(shape, seed, -a, a);
}

// X, W, R, B, sequence_lens, initial_h (, initial_c); outputs Y, Y_h (, Y_c), all f32. One row
// has the full length, so the loop runs every position and shorter rows finish (forward) or
// start late (reverse) inside it.
OpCase rnn_case(bool gru, const RnnCase& c, std::uint32_t seed) {
  const std::int64_t d = directions(c), g = gru ? 3 : 4, H = c.hidden;
  Attributes attrs{{"hidden_size", H}, {"direction", c.direction}};
  if (gru) attrs.set("linear_before_reset", c.linear_before_reset);
  if (c.clip > 0.0f) attrs.set("clip", c.clip);
  OpCase op{gru ? "GRU" : "LSTM",
            attrs,
            {random_tensor({c.steps, c.batch, c.input}, seed), scaled_weights({d, g * H, c.input}, c.input, seed + 1),
             scaled_weights({d, g * H, H}, H, seed + 2)},
            {}};
  const Shape state{d, c.batch, H};
  op.inputs.push_back(random_tensor({d, 2 * g * H}, seed + 3, -0.3f, 0.3f));
  op.inputs.push_back(c.lengths
                          ? OpInput(Tensor::from<std::int32_t>(Shape{3}, {static_cast<std::int32_t>(c.steps), 17, 40}))
                          : OpInput::absent());
  op.inputs.push_back(c.initial_states ? OpInput(random_tensor(state, seed + 4)) : OpInput::absent());
  if (!gru) op.inputs.push_back(c.initial_states ? OpInput(random_tensor(state, seed + 5)) : OpInput::absent());
  op.outputs.push_back({DType::f32, Shape{c.steps, d, c.batch, H}});
  op.outputs.push_back({DType::f32, state});
  if (!gru) op.outputs.push_back({DType::f32, state});
  return op;
}

// With the flag set before every run, each run does exactly one loop position and pauses (never
// after the last): pauses at 1, 2, ..., T-1, and the bits of run(). The resumable path without a
// pause gives them too, and run() agrees with the CPU backend (on the same f16-rounded values
// for f16), so the bits compared are right ones.
void expect_pause_after_every_step(backend::Backend& cpu, backend::Backend& cuda, const OpCase& op, DType dtype) {
  SCOPED_TRACE(op.op_type + (dtype == DType::f16 ? " in f16" : " in f32"));
  const OpCase typed = with_float_dtype(op, dtype);
  CudaRecurrentOp cuda_op(cuda, typed);
  ASSERT_TRUE(cuda_op.kernel().resumable()) << "not on the device loop";
  const std::int64_t steps = op.inputs[0].value->shape()[0];
  ASSERT_EQ(cuda_op.kernel().resume_iterations(), steps);
  ASSERT_GT(cuda_op.kernel().resume_state_bytes(), 0u);

  const OpResult whole = cuda_op.run_whole();
  // As expect_backends_agree forms its f16 reference.
  const OpResult reference =
      run_op(cpu, dtype == DType::f16 ? with_float_dtype(with_float_dtype(op, DType::f16), DType::f32) : op);
  const Tolerance tol = dtype == DType::f16 ? kF16Tolerance : kF32Tolerance;
  ASSERT_EQ(reference.size(), whole.size());
  for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_TRUE(all_close(reference[i], whole[i], tol)) << "output " << i;

  auto flag = cuda.create_pause_flag();
  ASSERT_FALSE(flag->is_set());
  const auto [unpaused, no_pauses] = cuda_op.run_paused(*flag, false);
  EXPECT_TRUE(no_pauses.empty());
  EXPECT_TRUE(outputs_equal(unpaused, whole)) << "the resumable path without a pause differs from run()";

  flag->set();
  const auto [paused, pauses] = cuda_op.run_paused(*flag, false);
  std::vector<std::int32_t> expected;
  for (std::int64_t i = 1; i < steps; ++i) expected.push_back(static_cast<std::int32_t>(i));
  EXPECT_EQ(pauses, expected);
  EXPECT_TRUE(outputs_equal(paused, whole)) << "paused " << pauses.size() << " times";
}

TEST_F(RnnOpsResumable, LstmPausedAfterEveryStepIsBitIdentical) {
  std::uint32_t seed = 10;
  for (const std::string direction : {"forward", "reverse"})
    for (DType dtype : {DType::f32, DType::f16}) {
      SCOPED_TRACE(direction);
      expect_pause_after_every_step(*cpu_, *cuda_, rnn_case(false, {.direction = direction}, seed += 10), dtype);
    }
  // No lengths and no initial states: zeros to start from, every row the full sequence.
  expect_pause_after_every_step(
      *cpu_, *cuda_, rnn_case(false, {.steps = 20, .batch = 2, .lengths = false, .initial_states = false}, 90),
      DType::f32);
}

TEST_F(RnnOpsResumable, GruPausedAfterEveryStepIsBitIdentical) {
  std::uint32_t seed = 100;
  for (const std::string direction : {"forward", "reverse"})
    for (std::int64_t lbr : {0, 1})
      for (DType dtype : {DType::f32, DType::f16}) {
        SCOPED_TRACE(direction + " linear_before_reset=" + std::to_string(lbr));
        expect_pause_after_every_step(
            *cpu_, *cuda_, rnn_case(true, {.direction = direction, .linear_before_reset = lbr}, seed += 10), dtype);
      }
}

TEST_F(RnnOpsResumable, FlagSetFromAnotherThreadWhileTheLoopRuns) {
  // Wherever the loop is when the flag lands: the bits of run(), each run at least one step.
  for (bool gru : {false, true}) {
    SCOPED_TRACE(gru ? "GRU" : "LSTM");
    CudaRecurrentOp op(*cuda_, rnn_case(gru, {.steps = 1024, .batch = 3, .input = 64, .hidden = 256}, gru ? 600 : 500));
    ASSERT_TRUE(op.kernel().resumable());
    const OpResult whole = op.run_whole();
    auto flag = cuda_->create_pause_flag();
    const auto [paused, pauses] = op.run_paused(*flag, true);
    EXPECT_TRUE(outputs_equal(paused, whole)) << "paused " << pauses.size() << " times";
  }
}

TEST_F(RnnOpsResumable, BidirectionalAndPerStepNodesRunWhole) {
  // Two directions: no pause point between the launches. Clip: the per-step path.
  for (const RnnCase& c : {RnnCase{.direction = "bidirectional"}, RnnCase{.clip = 5.0f}}) {
    for (bool gru : {false, true}) {
      SCOPED_TRACE(c.direction + (gru ? " GRU" : " LSTM") + (c.clip > 0 ? " clip" : ""));
      CudaRecurrentOp op(*cuda_, rnn_case(gru, c, 700));
      EXPECT_FALSE(op.kernel().resumable());
      EXPECT_EQ(op.kernel().resume_state_bytes(), 0u);
      EXPECT_EQ(op.kernel().resume_iterations(), 0);
      auto flag = cuda_->create_pause_flag();
      EXPECT_EQ(test_support::code_of([&] { op.run_paused(*flag, false); }), ErrorCode::internal);
    }
  }
}

TEST_F(RnnOpsResumable, PauseFlagsAreSeparateWordsStartingClear) {
  // More flags than one page of words: every one its own word, clear, set and cleared alone;
  // a word handed back comes out clear again.
  std::vector<std::unique_ptr<backend::PauseFlag>> flags;
  for (int i = 0; i < 150; ++i) {
    flags.push_back(cuda_->create_pause_flag());
    ASSERT_NE(flags.back()->device_address(), nullptr);
    EXPECT_FALSE(flags.back()->is_set());
  }
  for (std::size_t i = 0; i < flags.size(); ++i)
    for (std::size_t j = i + 1; j < flags.size(); ++j)
      ASSERT_NE(flags[i]->device_address(), flags[j]->device_address());
  flags[7]->set();
  for (std::size_t i = 0; i < flags.size(); ++i) EXPECT_EQ(flags[i]->is_set(), i == 7) << i;
  flags[7]->clear();
  EXPECT_FALSE(flags[7]->is_set());
  flags[9]->set();
  flags.erase(flags.begin() + 9);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(cuda_->create_pause_flag()->is_set());
}

// ---- Executor level ----

ExecutorOptions cuda_options() {
  ExecutorOptions o;
  o.device = "cuda";
  o.profile = "none";
  o.record_timeline = true;
  return o;
}

// x [seq, 1, input] → LSTM or GRU → (Y, Y_h); Y_h → Reshape → linear → logits. The recurrent op
// is one long Step.
Model recurrent_model(const std::string& op, std::int64_t seq, std::int64_t input, std::int64_t hidden,
                      std::uint64_t seed) {
  ModelBuilder b("long_" + op, seed);
  const std::int64_t g = op == "GRU" ? 3 : 4;
  const auto x = b.input("x", DType::f32, Shape{seq, 1, input});
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  const auto w = b.random_weight("W", Shape{1, g * hidden, input}, bound);
  const auto r = b.random_weight("R", Shape{1, g * hidden, hidden}, bound);
  const auto bias = b.random_weight("B", Shape{1, 2 * g * hidden}, bound);
  const auto outs = b.node(op, {x, w, r, bias}, {{"hidden_size", hidden}}, op == "GRU" ? 2 : 3, "rnn");
  b.output(outs[0]);
  b.output(b.linear(b.reshape(outs[1], {1, hidden}), hidden, 10));
  return b.build();
}

Model small_mlp(std::uint64_t seed) {
  ModelBuilder b("mlp", seed);
  const auto x = b.input("x", DType::f32, Shape{4, 32});
  b.output(b.linear(b.relu(b.linear(x, 32, 64)), 64, 8));
  return b.build();
}

std::size_t recurrent_step(const ModelInfo& info) {
  for (std::size_t s = 0; s < info.steps.size(); ++s)
    for (const auto& op : info.steps[s].ops)
      if (op == "LSTM" || op == "GRU") return s;
  ADD_FAILURE() << "no recurrent Step";
  return 0;
}

struct IntraStepRun {
  Outputs long_alone, urgent_alone;
  Outputs long_outputs;
  std::vector<Outputs> urgent_outputs;
  std::vector<std::string> completion_order;
  ExecutorStats stats;
  std::vector<TraceEvent> long_preemptions;  // by time
  std::size_t recurrent_step = 0;
};

// One executor with "long" (and "urgent" unless the urgent requests go to "long" too). First each
// request alone on it (graph captures and algorithm choices out of the way, then the
// references); then the long request, with an urgent one submitted from the pausable-Step hook
// the first `urgent_count` times the long request's recurrent Step is about to run or resume. The
// launch waits until the urgent request reached the dispatcher, so with the flag set from the
// start the loop pauses after one step each time: at iterations 1, 2, ..., urgent_count.
IntraStepRun run_with_urgent(const Model& long_model, const std::vector<Tensor>& long_in, const Model* urgent_model,
                             const std::vector<Tensor>& urgent_in, int urgent_count) {
  IntraStepRun result;
  const std::string urgent_name = urgent_model ? "urgent" : "long";
  test_support::UrgentInjector injector(urgent_name, urgent_in, urgent_count);
  ExecutorOptions options = cuda_options();
  runtime::ExecutorTestHooks hooks;
  injector.install(hooks);
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& ex = *holder;
  injector.attach(ex);
  ex.load(long_model, "long");
  if (urgent_model) ex.load(*urgent_model, "urgent");
  result.recurrent_step = recurrent_step(ex.model_info("long"));

  // Alone first (graph captures and algorithm choices out of the way, then the references); the
  // hook is not armed yet. Each of these counts as one request handed to the dispatcher.
  for (int i = 0; i < 2; ++i) {
    ex.submit("long", long_in).get();
    ex.submit(urgent_name, urgent_in).get();
  }
  result.long_alone = ex.submit("long", long_in).get();
  result.urgent_alone = ex.submit(urgent_name, urgent_in).get();
  result.long_outputs = injector.run_long(long_in, 6);
  ex.shutdown();
  result.urgent_outputs = injector.urgent_outputs();
  result.completion_order = injector.completion_order();
  result.stats = ex.stats();
  for (auto& e : ex.timeline().events())
    if (e.category == "preempt" && e.args["request"] == "6") result.long_preemptions.push_back(e);
  std::sort(result.long_preemptions.begin(), result.long_preemptions.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  return result;
}

class CudaExecutorIntraStep : public ::testing::Test {
 protected:
  void SetUp() override {
    if (backend::cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: pausing inside a Step is not exercised";
  }
};

TEST_F(CudaExecutorIntraStep, UrgentRequestPausesALongLstmInside) {
  constexpr std::int64_t seq = 256;
  const Model lm = recurrent_model("LSTM", seq, 16, 32, 11), um = small_mlp(12);
  const IntraStepRun run = run_with_urgent(lm, random_inputs(lm, 101), &um, random_inputs(um, 102), 1);
  EXPECT_TRUE(test_support::same_bits(run.long_outputs, run.long_alone));
  ASSERT_EQ(run.urgent_outputs.size(), 1u);
  EXPECT_TRUE(test_support::same_bits(run.urgent_outputs[0], run.urgent_alone));
  EXPECT_EQ(run.completion_order, (std::vector<std::string>{"urgent", "long"}));
  EXPECT_EQ(run.stats.pauses_inside_steps, 1u);
  EXPECT_EQ(run.stats.preemptions, 1u);
  // The device loop saw the flag before its first step: it paused after it and resumed there.
  ASSERT_EQ(run.long_preemptions.size(), 2u);
  EXPECT_EQ(run.long_preemptions[0].args.at("action"), "pause");
  EXPECT_EQ(run.long_preemptions[1].args.at("action"), "resume");
  for (const auto& e : run.long_preemptions) {
    EXPECT_EQ(e.args.at("step"), std::to_string(run.recurrent_step));
    EXPECT_EQ(e.args.at("iteration"), "1");
  }
}

TEST_F(CudaExecutorIntraStep, ManyPausesOnTheSameModelAreBitIdentical) {
  // Urgent requests of the same model run on its workspace while the long one is paused inside;
  // the long one pauses at iterations 1..5 and keeps the bits of its run alone.
  for (const std::string op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    const Model lm = recurrent_model(op, 64, 16, 32, 21);
    const IntraStepRun run = run_with_urgent(lm, random_inputs(lm, 201), nullptr, random_inputs(lm, 202), 5);
    ASSERT_FALSE(test_support::same_bits(run.long_alone, run.urgent_alone));
    EXPECT_TRUE(test_support::same_bits(run.long_outputs, run.long_alone));
    ASSERT_EQ(run.urgent_outputs.size(), 5u);
    for (const auto& out : run.urgent_outputs) EXPECT_TRUE(test_support::same_bits(out, run.urgent_alone));
    EXPECT_EQ(run.completion_order.back(), "long");
    EXPECT_EQ(run.stats.pauses_inside_steps, 5u);
    std::vector<std::string> pauses;
    for (const auto& e : run.long_preemptions)
      if (e.args.at("action") == "pause") pauses.push_back(e.args.at("iteration"));
    EXPECT_EQ(pauses, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
  }
}

}  // namespace
}  // namespace loom::gpu_testing
