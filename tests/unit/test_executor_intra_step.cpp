// Pausing inside a long Step (issue 7 item 2) on the CPU backend: the LSTM and GRU kernels paused
// after every iteration and resumed give the bits of one uninterrupted run; in the executor an
// urgent request arriving while a lower-priority LSTM Step runs pauses it inside, at an iteration,
// and both requests give the bits of their runs alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "loom/executor.hpp"
#include "test_support.hpp"
#include "unit/cpu_op_harness.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using namespace loom::testing;
using loom::test_support::same_bits;

namespace {

// ---- Kernel level ----

// One recurrent op on the CPU backend with its device buffers, run whole or resumably.
class RecurrentOp {
 public:
  RecurrentOp(const std::string& op_type, Attributes attrs, std::vector<OpInput> inputs, std::vector<OpOutput> outputs)
      : backend_(backend::make_cpu_backend()),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)),
        node_(make_node(op_type, std::move(attrs), inputs_.size(), outputs_, &inputs_)),
        kernel_(backend_->create_kernel(make_spec(node_, inputs_, outputs_))),
        stream_(backend_->create_stream()) {
    for (const OpInput& in : inputs_) {
      if (!in.value) {
        input_ptrs_.push_back(nullptr);
        continue;
      }
      buffers_.push_back(std::make_unique<DeviceBuffer>(*backend_, in.value->bytes()));
      std::memcpy(buffers_.back()->get(), in.value->data(), in.value->bytes());
      input_ptrs_.push_back(buffers_.back()->get());
    }
    for (const OpOutput& out : outputs_) {
      buffers_.push_back(std::make_unique<DeviceBuffer>(*backend_, bytes_of(out)));
      output_ptrs_.push_back(buffers_.back()->get());
    }
    workspace_ = std::make_unique<DeviceBuffer>(*backend_, kernel_->workspace_bytes());
    state_ = std::make_unique<DeviceBuffer>(*backend_, std::max<std::size_t>(kernel_->resume_state_bytes(), 1));
    progress_ = std::make_unique<DeviceBuffer>(*backend_, sizeof(backend::ResumeProgress));
  }

  backend::OpKernel& kernel() { return *kernel_; }

  // One plain run().
  OpResult run_whole() {
    poison_outputs();
    poison(*workspace_, kernel_->workspace_bytes());
    kernel_->run(input_ptrs_, output_ptrs_, workspace_->get(), *stream_);
    return read_outputs();
  }

  // Resumable runs with `flag` polled, until one finishes; the workspace is poisoned before each
  // (another request would have used it). `set_flag_while_running` sets the flag from another
  // thread during each run instead of leaving it as it is. Returns the outputs and each paused
  // run's next_iteration.
  std::pair<OpResult, std::vector<std::int32_t>> run_paused(backend::PauseFlag& flag, bool set_flag_while_running) {
    poison_outputs();
    poison(*state_, kernel_->resume_state_bytes());
    std::vector<std::int32_t> pauses;
    std::int32_t start = 0;
    for (int guard = 0; guard < 100000; ++guard) {
      poison(*workspace_, kernel_->workspace_bytes());
      backend::ResumeContext context;
      context.state = state_->get();
      context.start_iteration = start;
      context.pause = flag.device_address();
      context.progress = static_cast<backend::ResumeProgress*>(progress_->get());
      std::thread setter;
      if (set_flag_while_running) {
        flag.clear();
        setter = std::thread([&flag] {
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          flag.set();
        });
      }
      kernel_->run_resumable(input_ptrs_, output_ptrs_, workspace_->get(), context, *stream_);
      if (setter.joinable()) setter.join();
      const backend::ResumeProgress report = *context.progress;
      if (!report.paused) {
        EXPECT_EQ(report.next_iteration, kernel_->resume_iterations());
        return {read_outputs(), pauses};
      }
      EXPECT_GT(report.next_iteration, start) << "a resumed run made no progress";
      EXPECT_LT(report.next_iteration, kernel_->resume_iterations());
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
  static void poison(DeviceBuffer& buffer, std::size_t bytes) { std::memset(buffer.get(), 0xFF, bytes); }
  void poison_outputs() {
    for (std::size_t i = 0; i < outputs_.size(); ++i) std::memset(output_ptrs_[i], 0xFF, bytes_of(outputs_[i]));
  }
  OpResult read_outputs() {
    OpResult result;
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      Tensor host(outputs_[i].dtype, outputs_[i].shape);
      std::memcpy(host.data(), output_ptrs_[i], host.bytes());
      result.push_back(std::move(host));
    }
    return result;
  }

  std::unique_ptr<backend::Backend> backend_;
  std::vector<OpInput> inputs_;
  std::vector<OpOutput> outputs_;
  Node node_;
  std::unique_ptr<backend::OpKernel> kernel_;
  std::unique_ptr<backend::Stream> stream_;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  std::vector<const void*> input_ptrs_;
  std::vector<void*> output_ptrs_;
  std::unique_ptr<DeviceBuffer> workspace_, state_, progress_;
};

struct RnnCase {
  std::string direction;
  std::int64_t linear_before_reset = 0;  // GRU only
};

constexpr std::int64_t kSteps = 64, kBatch = 3, kInput = 5, kHidden = 7;

std::int64_t directions_of(const RnnCase& c) { return c.direction == "bidirectional" ? 2 : 1; }

// Sequence lengths below the full 64 for two rows, so finished rows and reverse starts inside
// the sequence are covered.
Tensor lengths() { return Tensor::from<std::int32_t>(Shape{kBatch}, {kSteps, 17, 40}); }

RecurrentOp make_lstm(const RnnCase& c, std::uint32_t seed) {
  const std::int64_t d = directions_of(c);
  std::vector<OpInput> inputs = {random_tensor(Shape{kSteps, kBatch, kInput}, seed),
                                 random_tensor(Shape{d, 4 * kHidden, kInput}, seed + 1, -0.5f, 0.5f),
                                 random_tensor(Shape{d, 4 * kHidden, kHidden}, seed + 2, -0.5f, 0.5f),
                                 random_tensor(Shape{d, 8 * kHidden}, seed + 3, -0.5f, 0.5f),
                                 lengths(),
                                 random_tensor(Shape{d, kBatch, kHidden}, seed + 4),
                                 random_tensor(Shape{d, kBatch, kHidden}, seed + 5),
                                 random_tensor(Shape{d, 3 * kHidden}, seed + 6, -0.5f, 0.5f)};
  std::vector<OpOutput> outputs = {{DType::f32, Shape{kSteps, d, kBatch, kHidden}},
                                   {DType::f32, Shape{d, kBatch, kHidden}},
                                   {DType::f32, Shape{d, kBatch, kHidden}}};
  return RecurrentOp("LSTM", {{"hidden_size", kHidden}, {"direction", c.direction}}, std::move(inputs),
                     std::move(outputs));
}

RecurrentOp make_gru(const RnnCase& c, std::uint32_t seed) {
  const std::int64_t d = directions_of(c);
  std::vector<OpInput> inputs = {random_tensor(Shape{kSteps, kBatch, kInput}, seed),
                                 random_tensor(Shape{d, 3 * kHidden, kInput}, seed + 1, -0.5f, 0.5f),
                                 random_tensor(Shape{d, 3 * kHidden, kHidden}, seed + 2, -0.5f, 0.5f),
                                 random_tensor(Shape{d, 6 * kHidden}, seed + 3, -0.5f, 0.5f),
                                 lengths(),
                                 random_tensor(Shape{d, kBatch, kHidden}, seed + 4)};
  std::vector<OpOutput> outputs = {{DType::f32, Shape{kSteps, d, kBatch, kHidden}},
                                   {DType::f32, Shape{d, kBatch, kHidden}}};
  return RecurrentOp(
      "GRU", {{"hidden_size", kHidden}, {"direction", c.direction}, {"linear_before_reset", c.linear_before_reset}},
      std::move(inputs), std::move(outputs));
}

bool outputs_equal(const OpResult& a, const OpResult& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].bytes() != b[i].bytes() || std::memcmp(a[i].data(), b[i].data(), a[i].bytes()) != 0) return false;
  return true;
}

// With the flag set before each run, every run does one iteration (two across a direction's end,
// where no pause happens) and pauses: every iteration but the directions' ends is a pause point.
void expect_pause_at_every_iteration(RecurrentOp& op, const RnnCase& c) {
  const std::int64_t d = directions_of(c);
  ASSERT_TRUE(op.kernel().resumable());
  ASSERT_EQ(op.kernel().resume_iterations(), d * kSteps);
  const OpResult whole = op.run_whole();
  auto backend = backend::make_cpu_backend();
  auto flag = backend->create_pause_flag();

  // Never paused: the resumable path computes what run() does.
  const auto [unpaused, no_pauses] = op.run_paused(*flag, false);
  EXPECT_TRUE(no_pauses.empty());
  EXPECT_TRUE(outputs_equal(unpaused, whole));

  flag->set();
  const auto [paused, pauses] = op.run_paused(*flag, false);
  std::vector<std::int32_t> expected;
  for (std::int64_t i = 1; i < d * kSteps; ++i)
    if (i % kSteps != 0) expected.push_back(static_cast<std::int32_t>(i));
  EXPECT_EQ(pauses, expected);
  EXPECT_TRUE(outputs_equal(paused, whole)) << "paused " << pauses.size() << " times";
}

const std::vector<RnnCase> kDirections = {{"forward"}, {"reverse"}, {"bidirectional"}};

}  // namespace

TEST(IntraStepKernel, LstmPausedAtEveryIterationIsBitIdentical) {
  std::uint32_t seed = 10;
  for (const RnnCase& c : kDirections) {
    SCOPED_TRACE(c.direction);
    RecurrentOp op = make_lstm(c, seed += 10);
    expect_pause_at_every_iteration(op, c);
  }
}

TEST(IntraStepKernel, GruPausedAtEveryIterationIsBitIdentical) {
  std::uint32_t seed = 100;
  for (std::int64_t lbr : {0, 1})
    for (RnnCase c : kDirections) {
      c.linear_before_reset = lbr;
      SCOPED_TRACE(c.direction + " linear_before_reset=" + std::to_string(lbr));
      RecurrentOp op = make_gru(c, seed += 10);
      expect_pause_at_every_iteration(op, c);
    }
}

TEST(IntraStepKernel, FlagSetFromAnotherThreadWhileRunning) {
  // The flag set concurrently, at whatever iteration the loop has reached: still the same bits.
  RecurrentOp lstm = make_lstm({"bidirectional"}, 500);
  RecurrentOp gru = make_gru({"bidirectional", 1}, 600);
  for (RecurrentOp* op : {&lstm, &gru}) {
    SCOPED_TRACE(op->kernel().op_type());
    const OpResult whole = op->run_whole();
    auto flag = backend::make_cpu_backend()->create_pause_flag();
    const auto [paused, pauses] = op->run_paused(*flag, true);
    EXPECT_TRUE(outputs_equal(paused, whole)) << "paused " << pauses.size() << " times";
  }
}

TEST(IntraStepKernel, ResumableRunChecksItsContext) {
  RecurrentOp op = make_lstm({"forward"}, 700);
  backend::ResumeContext context;  // no state, no progress
  std::vector<const void*> inputs(8, nullptr);
  std::vector<void*> outputs(3, nullptr);
  auto stream = backend::make_cpu_backend()->create_stream();
  EXPECT_EQ(test_support::code_of([&] { op.kernel().run_resumable(inputs, outputs, nullptr, context, *stream); }),
            ErrorCode::internal);
}

// ---- Executor level ----

namespace {

ExecutorOptions cpu_options() {
  ExecutorOptions o;
  o.device = "cpu";
  o.profile = "none";
  o.record_timeline = true;
  return o;
}

// x [seq, 1, input] → LSTM → (Y, Y_h); Y_h → Reshape → linear → logits. The LSTM is one long Step.
Model lstm_model(std::int64_t seq, std::int64_t input, std::int64_t hidden, std::uint64_t seed) {
  ModelBuilder b("long_lstm", seed);
  const auto x = b.input("x", DType::f32, Shape{seq, 1, input});
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  const auto w = b.random_weight("W", Shape{1, 4 * hidden, input}, bound);
  const auto r = b.random_weight("R", Shape{1, 4 * hidden, hidden}, bound);
  const auto bias = b.random_weight("B", Shape{1, 8 * hidden}, bound);
  const auto outs = b.node("LSTM", {x, w, r, bias}, {{"hidden_size", hidden}}, 3, "lstm");
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

Outputs run_alone(const Model& model, const std::vector<Tensor>& inputs) {
  ExecutorOptions o = cpu_options();
  o.record_timeline = false;
  Executor ex(o);
  ex.load(model, "m");
  return ex.submit("m", inputs).get();
}

std::vector<TraceEvent> preempt_events(const Executor& ex, std::uint64_t request) {
  std::vector<TraceEvent> events;
  for (auto& e : ex.timeline().events())
    if (e.category == "preempt" && e.args["request"] == std::to_string(request)) events.push_back(e);
  std::sort(events.begin(), events.end(),
            [](const TraceEvent& a, const TraceEvent& b) { return a.start_us < b.start_us; });
  return events;
}

std::size_t lstm_step(const ModelInfo& info) {
  for (std::size_t s = 0; s < info.steps.size(); ++s)
    for (const auto& op : info.steps[s].ops)
      if (op == "LSTM") return s;
  ADD_FAILURE() << "no LSTM Step";
  return 0;
}

// A long normal-priority LSTM request and urgent ones submitted from the pausable-Step hook: the
// first `urgent_count` times the long request's LSTM Step is about to run (or resume), one
// urgent request goes in and the launch waits until it reached the dispatcher. Each pause then
// comes after one iteration, so the long request is the one launching at iteration k after k
// urgent requests (urgent requests of the same model start at 0).
struct IntraStepRun {
  Outputs long_outputs;
  std::vector<Outputs> urgent_outputs;
  std::vector<std::string> completion_order;
  ExecutorStats stats;
  std::vector<TraceEvent> long_preemptions;
  int hook_calls = 0;
};

IntraStepRun run_with_urgent(ExecutorOptions options, const Model& long_model, const std::vector<Tensor>& long_in,
                             const Model& urgent_model, const std::string& urgent_name,
                             const std::vector<Tensor>& urgent_in, int urgent_count) {
  IntraStepRun result;
  test_support::UrgentInjector injector(urgent_name, urgent_in, urgent_count);
  runtime::ExecutorTestHooks hooks;
  injector.install(hooks);
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& ex = *holder;
  injector.attach(ex);
  ex.load(long_model, "long");
  if (urgent_name != "long") ex.load(urgent_model, urgent_name);
  result.long_outputs = injector.run_long(long_in, 0);
  ex.shutdown();
  result.urgent_outputs = injector.urgent_outputs();
  result.completion_order = injector.completion_order();
  result.hook_calls = injector.hook_calls();
  result.stats = ex.stats();
  result.long_preemptions = preempt_events(ex, 0);
  return result;
}

}  // namespace

TEST(ExecutorIntraStep, ModelInfoShowsPausableSteps) {
  Executor ex(cpu_options());
  ex.load(lstm_model(16, 8, 16, 1), "lstm");
  ex.load(small_mlp(2), "mlp");
  const ModelInfo info = ex.model_info("lstm");
  const std::size_t s = lstm_step(info);
  for (std::size_t k = 0; k < info.steps.size(); ++k) EXPECT_EQ(info.steps[k].pausable_inside, k == s) << k;
  // h and c of one row of 16 floats, and the progress report, in the request's arena.
  EXPECT_GE(info.resume_bytes, 2 * 16 * sizeof(float) + sizeof(backend::ResumeProgress));
  EXPECT_GT(info.activation_bytes, info.resume_bytes);
  const ModelInfo mlp = ex.model_info("mlp");
  for (const auto& step : mlp.steps) EXPECT_FALSE(step.pausable_inside);
  EXPECT_EQ(mlp.resume_bytes, 0u);
}

TEST(ExecutorIntraStep, UrgentRequestPausesALongLstmInside) {
  constexpr std::int64_t seq = 256;
  const Model lm = lstm_model(seq, 16, 32, 11), um = small_mlp(12);
  const auto long_in = random_inputs(lm, 101), urgent_in = random_inputs(um, 102);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(um, urgent_in);

  const IntraStepRun run = run_with_urgent(cpu_options(), lm, long_in, um, "urgent", urgent_in, 1);
  EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
  ASSERT_EQ(run.urgent_outputs.size(), 1u);
  EXPECT_TRUE(same_bits(run.urgent_outputs[0], urgent_alone));
  EXPECT_EQ(run.completion_order, (std::vector<std::string>{"urgent", "long"}));
  EXPECT_EQ(run.stats.pauses_inside_steps, 1u);
  EXPECT_EQ(run.stats.preemptions, 1u);
  // The urgent request reached the dispatcher while the Step was armed: the loop paused after
  // its first iteration and resumed from the second.
  Executor probe(cpu_options());
  probe.load(lm, "long");
  const std::string step = std::to_string(lstm_step(probe.model_info("long")));
  ASSERT_EQ(run.long_preemptions.size(), 2u);
  EXPECT_EQ(run.long_preemptions[0].args.at("action"), "pause");
  EXPECT_EQ(run.long_preemptions[1].args.at("action"), "resume");
  for (const auto& e : run.long_preemptions) {
    EXPECT_EQ(e.args.at("step"), step);
    const int iteration = std::stoi(e.args.at("iteration"));
    EXPECT_GT(iteration, 0);
    EXPECT_LT(iteration, seq);
  }
}

TEST(ExecutorIntraStep, ALoopOnAStreamWorkerPausesInsideToo) {
  // With stream shares the LSTM's loop runs on its stream's worker thread after the launch
  // returned; the pause word reaches it there, and the dispatcher reads the progress back once
  // the stream has passed it. Same pauses, same bits.
  constexpr std::int64_t seq = 128;
  const Model lm = lstm_model(seq, 16, 32, 31), um = small_mlp(32);
  const auto long_in = random_inputs(lm, 301), urgent_in = random_inputs(um, 302);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(um, urgent_in);
  ExecutorOptions options = cpu_options();
  options.cpu_threads = 2;
  options.cpu_stream_shares = true;
  const IntraStepRun run = run_with_urgent(options, lm, long_in, um, "urgent", urgent_in, 2);
  EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
  ASSERT_EQ(run.urgent_outputs.size(), 2u);
  for (const auto& out : run.urgent_outputs) EXPECT_TRUE(same_bits(out, urgent_alone));
  EXPECT_EQ(run.completion_order.back(), "long");
  EXPECT_EQ(run.stats.pauses_inside_steps, 2u);
}

TEST(ExecutorIntraStep, ManyPausesOnTheSameModelAreBitIdentical) {
  // Urgent requests of the same LSTM model use its workspace while the long one is paused; the
  // long one pauses at iterations 1, 2, ... 5 and still gives the bits of its run alone.
  constexpr std::int64_t seq = 64;
  const Model lm = lstm_model(seq, 16, 32, 21);
  const auto long_in = random_inputs(lm, 201), urgent_in = random_inputs(lm, 202);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(lm, urgent_in);
  ASSERT_FALSE(same_bits(long_alone, urgent_alone));

  const IntraStepRun run = run_with_urgent(cpu_options(), lm, long_in, lm, "long", urgent_in, 5);
  EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
  ASSERT_EQ(run.urgent_outputs.size(), 5u);
  for (const auto& out : run.urgent_outputs) EXPECT_TRUE(same_bits(out, urgent_alone));
  EXPECT_EQ(run.completion_order.back(), "long");
  EXPECT_EQ(run.stats.pauses_inside_steps, 5u);
  std::vector<std::string> pauses;
  for (const auto& e : run.long_preemptions)
    if (e.args.at("action") == "pause") pauses.push_back(e.args.at("iteration"));
  EXPECT_EQ(pauses, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
}

TEST(ExecutorIntraStep, UrgentArrivingMidStepPausesItAndResultsStayBitIdentical) {
  // The urgent request arrives from another thread while the long LSTM (2048 steps, hidden 256)
  // runs: wherever the pause lands, the results are the runs alone, bit for bit.
  constexpr std::int64_t seq = 2048;
  const Model lm = lstm_model(seq, 16, 256, 31), um = small_mlp(32);
  const auto long_in = random_inputs(lm, 301), urgent_in = random_inputs(um, 302);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(um, urgent_in);

  ExecutorOptions options = cpu_options();
  std::promise<void> launching;
  std::atomic<bool> told{false};
  runtime::ExecutorTestHooks hooks;
  hooks.pausable_step = [&](const std::string&, std::size_t, std::int32_t iteration) -> std::uint64_t {
    if (iteration == 0 && !told.exchange(true)) launching.set_value();
    return 0;
  };
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& ex = *holder;
  ex.load(lm, "long");
  ex.load(um, "urgent");
  auto long_future = ex.submit("long", long_in);
  launching.get_future().wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  RequestOptions urgent;
  urgent.priority = Priority::urgent;
  auto urgent_future = ex.submit("urgent", urgent_in, urgent);
  EXPECT_TRUE(same_bits(urgent_future.get(), urgent_alone));
  EXPECT_TRUE(same_bits(long_future.get(), long_alone));
  ex.shutdown();
  const auto events = preempt_events(ex, 0);
  for (const auto& e : events) {
    const int iteration = std::stoi(e.args.at("iteration"));
    EXPECT_GT(iteration, 0);
    EXPECT_LT(iteration, seq);
  }
  EXPECT_EQ(ex.stats().pauses_inside_steps, events.size() / 2);
}

TEST(ExecutorIntraStep, WithoutPreemptionNothingPausesInside) {
  // An urgent request submitted while the long LSTM Step (most likely) runs: nothing is armed,
  // so the pausable-Step hook never runs and nothing pauses, whenever it arrives.
  const Model lm = lstm_model(2048, 64, 256, 41), um = small_mlp(42);
  const auto long_in = random_inputs(lm, 401), urgent_in = random_inputs(um, 402);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(um, urgent_in);
  ExecutorOptions options = cpu_options();
  options.preemption = false;
  std::atomic<int> pausable_calls{0};
  runtime::ExecutorTestHooks hooks;
  hooks.pausable_step = [&](const std::string&, std::size_t, std::int32_t) -> std::uint64_t {
    ++pausable_calls;
    return 0;
  };
  auto ex = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  ex->load(lm, "long");
  ex->load(um, "urgent");
  auto long_future = ex->submit("long", long_in);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  RequestOptions urgent;
  urgent.priority = Priority::urgent;
  auto urgent_future = ex->submit("urgent", urgent_in, urgent);
  EXPECT_TRUE(same_bits(long_future.get(), long_alone));
  EXPECT_TRUE(same_bits(urgent_future.get(), urgent_alone));
  ex->shutdown();
  EXPECT_EQ(pausable_calls, 0);
  EXPECT_EQ(ex->stats().preemptions, 0u);
  EXPECT_EQ(ex->stats().pauses_inside_steps, 0u);
  EXPECT_TRUE(preempt_events(*ex, 0).empty());
}

TEST(ExecutorIntraStep, PausedInsideUnderAnArenaLimitFinishesItsStepForTheUrgentRequest) {
  // Room for one arena only: the long request paused inside its LSTM Step cannot be dumped
  // there, so it finishes that Step without pausing again and is dumped at a boundary (or ends);
  // nothing deadlocks and the bits are those of the runs alone.
  const Model lm = lstm_model(128, 16, 32, 51);
  const auto long_in = random_inputs(lm, 501), urgent_in = random_inputs(lm, 502);
  const Outputs long_alone = run_alone(lm, long_in), urgent_alone = run_alone(lm, urgent_in);
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;
  {
    Executor probe(options);
    probe.load(lm, "long");
    options.arena_memory_limit_bytes = probe.model_info("long").activation_bytes;
  }
  const IntraStepRun run = run_with_urgent(options, lm, long_in, lm, "long", urgent_in, 1);
  EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
  ASSERT_EQ(run.urgent_outputs.size(), 1u);
  EXPECT_TRUE(same_bits(run.urgent_outputs[0], urgent_alone));
  EXPECT_EQ(run.stats.pauses_inside_steps, 1u);
  ASSERT_FALSE(run.long_preemptions.empty());
  EXPECT_EQ(run.long_preemptions[0].args.at("action"), "pause");
  EXPECT_EQ(run.long_preemptions[0].args.count("iteration"), 1u);
  for (const auto& e : run.long_preemptions)
    if (e.args.at("action") == "dump" || e.args.at("action") == "restore") EXPECT_EQ(e.args.count("iteration"), 0u);
}
