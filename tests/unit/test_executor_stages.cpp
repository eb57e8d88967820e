// The host stages (issue 16, items 1 and 2): every stage's figures against counts worked out from
// what was submitted, each request's RequestTimes, several threads per stage, the pre/post-process
// transforms, and the automatic re-balancing: its rule on hand-computed figures, and an executor
// whose pre-process is made slow on purpose getting threads moved to it with results unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "core/random.hpp"
#include "loom/executor.hpp"
#include "runtime/stage_balancer.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::expect_error;
using Move = loom::runtime::RebalanceChoice::Move;

namespace {

// Three Steps (MatMul, MatMul, Softmax) over a [4, 8] input, so each request runs several Steps.
Model three_step_model() {
  SplitMix64 rng(7);
  const auto weights = [&](std::int64_t rows, std::int64_t cols) {
    Tensor w(DType::f32, Shape{rows, cols});
    for (auto& v : w.values<float>()) v = rng.uniform(-1, 1);
    return w;
  };
  ModelBuilder mb("three");
  auto x = mb.input("x", DType::f32, Shape{4, 8});
  auto h = mb.relu(mb.op("MatMul", {x, mb.constant("w1", weights(8, 16))}));
  auto y = mb.op("MatMul", {h, mb.constant("w2", weights(16, 6))});
  mb.output(mb.op("Softmax", {y}));
  return mb.build();
}

Tensor input(std::uint64_t seed) {
  SplitMix64 rng(seed);
  Tensor x(DType::f32, Shape{4, 8});
  for (auto& v : x.values<float>()) v = rng.uniform(-2, 2);
  return x;
}

// The application's format in these tests: f64, which the pre_process transform converts to the
// model's f32.
Tensor as_f64(const Tensor& x) {
  Tensor out(DType::f64, x.shape());
  auto in = x.values<float>();
  auto dst = out.values<double>();
  for (std::size_t i = 0; i < in.size(); ++i) dst[i] = in[i];
  return out;
}

void to_f32(std::vector<Tensor>& tensors) {
  for (auto& t : tensors) t = t.to(DType::f32);
}

ExecutorOptions cpu_options() {
  ExecutorOptions o;
  o.device = "cpu";
  return o;
}

const StageStats& stage(const ExecutorStats& s, const std::string& name) {
  for (const auto& st : s.stages)
    if (st.name == name) return st;
  throw std::runtime_error("no stage " + name);
}

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes() &&
         std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

// Reference outputs from a plain executor (one thread per stage, no transforms).
std::vector<Outputs> reference_outputs(const Model& model, int count) {
  Executor ex(cpu_options());
  ex.load(model);
  std::vector<Outputs> out;
  for (int i = 0; i < count; ++i) out.push_back(ex.submit(model.name, {input(i)}).get());
  return out;
}

}  // namespace

// --- The rule (hand-computed figures; interval 200 ms) ---

TEST(StageBalancer, SaturatedSlowStageGetsAThreadFromTheBudget) {
  // Pre: 10 requests in 190 ms of one thread (19 ms each, 95% busy); post: 1 ms each.
  const auto c = runtime::choose_rebalance({1, 190'000, 10}, {1, 10'000, 10}, 200'000, 4);
  EXPECT_EQ(c.move, Move::add_to_pre) << c.reason;
  EXPECT_TRUE(c.saturated);
  EXPECT_DOUBLE_EQ(c.pre_us_per_request, 19'000);
  EXPECT_DOUBLE_EQ(c.post_us_per_request, 1'000);
  // The same figures the other way round: post limits.
  EXPECT_EQ(runtime::choose_rebalance({1, 10'000, 10}, {1, 190'000, 10}, 200'000, 4).move, Move::add_to_post);
}

TEST(StageBalancer, SpentBudgetTakesAThreadOnlyWhenThatRaisesThroughput) {
  // Post has 3 threads at 1 ms per request: capacities now pre 1/19, post 3/1 per ms; after the
  // move pre 2/19, post 2/1: both above 1/19, so a thread moves.
  const auto moved = runtime::choose_rebalance({1, 190'000, 10}, {3, 10'000, 10}, 200'000, 4);
  EXPECT_EQ(moved.move, Move::post_to_pre) << moved.reason;
  // Post at 15 ms per request with 3 threads (capacity 3/15 = 0.2/ms) and pre at 19 ms with 1:
  // after the move post would have 2/15 = 0.133/ms > pre's 1/19 = 0.053/ms now, and pre 2/19 =
  // 0.105/ms: min 0.105 > 0.053, still a move.
  EXPECT_EQ(runtime::choose_rebalance({1, 190'000, 10}, {3, 150'000, 10}, 200'000, 4).move, Move::post_to_pre);
  // Post at 50 ms per request with 3 threads (0.06/ms): after the move post 2/50 = 0.04/ms, below
  // pre's 1/19 = 0.053/ms now: no move, and the refusal is marked saturated.
  const auto kept = runtime::choose_rebalance({1, 190'000, 10}, {3, 500'000, 10}, 200'000, 4);
  EXPECT_EQ(kept.move, Move::none) << kept.reason;
  EXPECT_TRUE(kept.saturated);
  // One thread each and a budget of 2: nothing to give.
  const auto none = runtime::choose_rebalance({1, 190'000, 10}, {1, 10'000, 10}, 200'000, 2);
  EXPECT_EQ(none.move, Move::none);
  EXPECT_TRUE(none.saturated);
}

TEST(StageBalancer, NoMoveWhenTheStagesKeepUpOrNothingFinished) {
  // Pre limits (5 ms per request against 1 ms) but is busy 50 ms of 200: not saturated.
  const auto idle = runtime::choose_rebalance({1, 50'000, 10}, {1, 10'000, 10}, 200'000, 8);
  EXPECT_EQ(idle.move, Move::none);
  EXPECT_FALSE(idle.saturated);
  // Two threads busy 300 ms together in 200 ms: 75%, saturated (the threshold is inclusive).
  EXPECT_EQ(runtime::choose_rebalance({2, 300'000, 10}, {1, 10'000, 10}, 200'000, 8).move, Move::add_to_pre);
  const auto nothing = runtime::choose_rebalance({1, 0, 0}, {1, 0, 0}, 200'000, 8);
  EXPECT_EQ(nothing.move, Move::none);
  EXPECT_FALSE(nothing.saturated);
}

// --- The figures ---

TEST(ExecutorStages, FiguresMatchWhatWasSubmitted) {
  const Model model = three_step_model();
  Executor ex(cpu_options());
  ex.load(model);
  const std::size_t steps = ex.model_info("three").steps.size();
  ASSERT_GE(steps, 3u);
  constexpr int kRequests = 12;
  std::vector<std::future<Outputs>> futures;
  for (int i = 0; i < kRequests; ++i) futures.push_back(ex.submit("three", {input(i)}));
  for (auto& f : futures) f.get();
  ex.shutdown();  // every figure is in once the stages have stopped
  const ExecutorStats s = ex.stats();
  const std::uint64_t n = kRequests;
  EXPECT_EQ(stage(s, "pre-process").items, n);
  EXPECT_EQ(stage(s, "pre-process").threads, 1u);
  EXPECT_EQ(stage(s, "post-process").items, n);
  EXPECT_EQ(stage(s, "pre-process").queued, n);
  EXPECT_EQ(stage(s, "dispatcher").queued, n);  // requests come to it; its items are Steps
  EXPECT_EQ(stage(s, "post-process").queued, n);
  EXPECT_EQ(stage(s, "dispatcher").items, n * steps);
  EXPECT_EQ(stage(s, "dispatcher").items, s.steps_dispatched);
  const StageStats& stream = stage(s, "stream:three");
  EXPECT_EQ(stream.kind, StageKind::device);
  EXPECT_EQ(stream.items, n * steps);
  EXPECT_GT(stream.busy_us, 0);
  EXPECT_EQ(stream.queue_depth, 0u);
  EXPECT_GE(stream.max_queue_depth, 1u);
  const StageStats& h2d = stage(s, "copy:h2d");
  EXPECT_EQ(h2d.items, n);
  EXPECT_EQ(h2d.bytes, n * 4 * 8 * sizeof(float));
  const StageStats& d2h = stage(s, "copy:d2h");
  EXPECT_EQ(d2h.items, n);
  EXPECT_EQ(d2h.bytes, n * 4 * 6 * sizeof(float));
  EXPECT_EQ(stage(s, "copy:transfer").items, 0u);  // nothing was preempted
  for (const auto& st : s.stages) {
    EXPECT_GE(st.busy_us, 0) << st.name;
    EXPECT_GE(st.queue_wait_us, 0) << st.name;
    EXPECT_LE(st.queue_depth, st.max_queue_depth) << st.name;
  }
  // Host stages' busy time is within their threads' share of the uptime.
  EXPECT_LE(stage(s, "pre-process").busy_us, s.uptime_us);
  ASSERT_EQ(s.models.size(), 1u);
  const ModelStats& m = s.models[0];
  EXPECT_EQ(m.name, "three");
  EXPECT_EQ(m.requests_completed, n);
  EXPECT_EQ(m.requests_failed, 0u);
  EXPECT_EQ(m.steps, n * steps);
  EXPECT_EQ(m.latency.count, n);
  std::uint64_t in_buckets = 0;
  for (auto c : m.latency.counts) in_buckets += c;
  EXPECT_EQ(in_buckets, n);
  EXPECT_NEAR(m.latency.sum_seconds, m.time_sums.total_us / 1e6, 1e-9);
  const RequestTimes& t = m.time_sums;
  EXPECT_NEAR(t.queue_us + t.h2d_us + t.compute_us + t.d2h_us + t.post_us, t.total_us, 1e-6 * t.total_us + 1e-3);
  EXPECT_EQ(t.h2d_bytes, h2d.bytes);
  EXPECT_EQ(t.d2h_bytes, d2h.bytes);
}

TEST(ExecutorStages, EachRequestsTimesAddUpToItsLatency) {
  const Model model = three_step_model();
  Executor ex(cpu_options());
  ex.load(model);
  std::mutex mutex;
  std::vector<RequestTimes> seen;
  std::vector<double> outside_us;  // measured by the caller: from submit() to the callback
  std::promise<void> all_done;
  constexpr int kRequests = 8;
  for (int i = 0; i < kRequests; ++i) {
    const auto submitted = std::chrono::steady_clock::now();
    ex.submit(
        "three", {input(i)},
        [&, submitted](std::exception_ptr error, Outputs outputs, const RequestTimes& times) {
          const double outside =
              std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - submitted).count();
          std::lock_guard lock(mutex);
          EXPECT_FALSE(error);
          EXPECT_EQ(outputs.size(), 1u);
          seen.push_back(times);
          outside_us.push_back(outside);
          if (seen.size() == kRequests) all_done.set_value();
        },
        RequestOptions{});
  }
  all_done.get_future().wait();
  for (std::size_t i = 0; i < seen.size(); ++i) {
    const RequestTimes& t = seen[i];
    for (double phase : {t.queue_us, t.h2d_us, t.compute_us, t.d2h_us, t.post_us}) EXPECT_GE(phase, 0);
    EXPECT_NEAR(t.queue_us + t.h2d_us + t.compute_us + t.d2h_us + t.post_us, t.total_us, 1e-6 * t.total_us + 1e-3);
    EXPECT_GT(t.compute_us, 0);            // three Steps ran
    EXPECT_LE(t.total_us, outside_us[i]);  // the executor's clock starts after the caller's
    EXPECT_EQ(t.h2d_bytes, 4u * 8 * sizeof(float));
    EXPECT_EQ(t.d2h_bytes, 4u * 6 * sizeof(float));
  }
}

TEST(ExecutorStages, WithoutStageTimingTheWholeIsCompute) {
  const Model model = three_step_model();
  ExecutorOptions o = cpu_options();
  o.stage_timing = false;
  Executor ex(o);
  ex.load(model);
  std::promise<RequestTimes> got;
  ex.submit(
      "three", {input(1)}, [&](std::exception_ptr, Outputs, const RequestTimes& times) { got.set_value(times); },
      RequestOptions{});
  const RequestTimes t = got.get_future().get();
  EXPECT_GT(t.total_us, 0);
  EXPECT_DOUBLE_EQ(t.compute_us, t.total_us);
  EXPECT_EQ(t.h2d_us + t.d2h_us + t.queue_us + t.post_us, 0);
  ex.shutdown();
  EXPECT_EQ(stage(ex.stats(), "stream:three").busy_us, 0);
  EXPECT_EQ(stage(ex.stats(), "stream:three").items, 0u);
  EXPECT_EQ(ex.stats().models[0].steps, ex.stats().steps_dispatched);  // counted without timing too
}

// --- Threads per stage and the transforms ---

TEST(ExecutorStages, SeveralPreProcessThreadsRunTransformsAtOnceWithResultsUnchanged) {
  const Model model = three_step_model();
  constexpr int kRequests = 24;
  const auto reference = reference_outputs(model, kRequests);
  ExecutorOptions o = cpu_options();
  o.stage_threads.pre_process = 3;
  o.stage_threads.post_process = 2;
  Executor ex(o);
  // Each transform waits (bounded) until another one runs beside it: with three threads that
  // happens; with one it could not.
  std::mutex mutex;
  std::condition_variable cv;
  int running = 0, most = 0;
  LoadOptions load;
  load.pre_process = [&](std::vector<Tensor>& inputs) {
    {
      std::unique_lock lock(mutex);
      most = std::max(most, ++running);
      cv.notify_all();
      cv.wait_for(lock, std::chrono::milliseconds(200), [&] { return running >= 2; });
      --running;
    }
    to_f32(inputs);
  };
  ex.load(model, load);
  std::vector<std::future<Outputs>> futures;
  for (int i = 0; i < kRequests; ++i) futures.push_back(ex.submit("three", {as_f64(input(i))}));
  for (int i = 0; i < kRequests; ++i) {
    const Outputs out = futures[i].get();
    ASSERT_EQ(out.size(), 1u);
    EXPECT_TRUE(bit_equal(out[0], reference[i][0])) << "request " << i;
  }
  EXPECT_GE(most, 2);
  ex.shutdown();
  EXPECT_EQ(stage(ex.stats(), "pre-process").threads, 3u);
  EXPECT_EQ(stage(ex.stats(), "post-process").threads, 2u);
  EXPECT_EQ(stage(ex.stats(), "pre-process").items, static_cast<std::uint64_t>(kRequests));
}

TEST(ExecutorStages, TransformsConvertBothWaysAndTheirFailuresNameTheRequest) {
  const Model model = three_step_model();
  const auto reference = reference_outputs(model, 1);
  Executor ex(cpu_options());
  LoadOptions load;
  load.name = "app";
  load.pre_process = [](std::vector<Tensor>& inputs) {
    if (inputs.size() == 2) throw std::runtime_error("two inputs are not an image");
    if (inputs.size() == 3) {  // the transform itself produces the wrong shape
      inputs = {Tensor(DType::f32, Shape{4, 9})};
      return;
    }
    to_f32(inputs);
  };
  load.post_process = [](std::vector<Tensor>& outputs) {
    for (auto& v : outputs[0].values<float>()) v *= 2;
  };
  ex.load(model, load);
  const Outputs out = ex.submit("app", {as_f64(input(0))}).get();
  ASSERT_EQ(out.size(), 1u);
  const auto got = out[0].values<float>();
  const auto want = reference[0][0].values<float>();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i] * 2) << i;
  expect_error(
      [&] {
        ex.submit("app", {input(0), input(1)}).get();
      },
      ErrorCode::invalid_argument, {"model 'app'", "pre_process transform failed", "two inputs are not an image"});
  expect_error(
      [&] {
        ex.submit("app", {input(0), input(1), input(2)}).get();
      },
      ErrorCode::shape_mismatch, {"model 'app'", "'x'", "got 4x9", "pre_process transform produced"});
  // The executor carries on after both.
  EXPECT_EQ(ex.submit("app", {as_f64(input(0))}).get().size(), 1u);
  ex.shutdown();
  EXPECT_EQ(ex.stats().models[0].requests_failed, 2u);
  EXPECT_EQ(ex.stats().models[0].requests_completed, 2u);
}

TEST(ExecutorStages, BadStageOptionsAreNamed) {
  ExecutorOptions o = cpu_options();
  o.stage_threads.pre_process = 0;
  expect_error([&] { Executor ex(o); }, ErrorCode::invalid_argument, {"stage_threads.pre_process = 0"});
  o = cpu_options();
  o.stage_threads.post_process = 0;
  expect_error([&] { Executor ex(o); }, ErrorCode::invalid_argument, {"stage_threads.post_process = 0"});
  o = cpu_options();
  o.stage_threads.automatic = true;
  o.stage_threads.thread_budget = 0;
  expect_error([&] { Executor ex(o); }, ErrorCode::invalid_argument, {"thread_budget = 0"});
  o.stage_threads.thread_budget = 3;
  o.stage_threads.pre_process = 2;
  o.stage_threads.post_process = 2;
  expect_error([&] { Executor ex(o); }, ErrorCode::invalid_argument, {"thread_budget = 3", "below"});
  o.stage_threads.thread_budget = 4;
  o.stage_threads.rebalance_interval_ms = 0;
  expect_error([&] { Executor ex(o); }, ErrorCode::invalid_argument, {"rebalance_interval_ms"});
}

// --- Re-balancing on a running executor ---

// Pre-process made slow on purpose (a conversion whose cost is dialled by a sleep, as a decoder
// of the application's format blocking on I/O would be): the balancer must move threads to it,
// and the results must stay bit for bit those of a plain run.
TEST(ExecutorStages, AutomaticRebalancingGivesTheSlowStageThreads) {
  const Model model = three_step_model();
  constexpr int kRequests = 64;
  const auto reference = reference_outputs(model, kRequests);
  ExecutorOptions o = cpu_options();
  o.stage_threads.automatic = true;
  o.stage_threads.thread_budget = 4;
  o.stage_threads.rebalance_interval_ms = 40;
  o.record_timeline = true;
  Executor ex(o);
  LoadOptions load;
  load.pre_process = [](std::vector<Tensor>& inputs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(4));
    to_f32(inputs);
  };
  ex.load(model, load);
  // Rounds of requests queued at once keep the pre-process stage busy until a thread has moved
  // (bounded: 30 s); every result is checked.
  std::vector<std::future<Outputs>> futures;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    for (int i = 0; i < kRequests; ++i) futures.push_back(ex.submit("three", {as_f64(input(i))}));
    for (auto& f : futures) f.wait();
  } while (ex.stats().rebalances.empty() && std::chrono::steady_clock::now() < give_up);
  const ExecutorStats s = ex.stats();
  ASSERT_FALSE(s.rebalances.empty()) << "no re-balancing decision within 30 s";
  const RebalanceDecision& first = s.rebalances.front();
  EXPECT_EQ(first.to, "pre-process") << first.reason;
  EXPECT_EQ(first.pre_threads, 2u);
  EXPECT_GT(first.pre_us_per_request, first.post_us_per_request);
  EXPECT_GT(stage(s, "pre-process").threads, 1u);
  EXPECT_LE(stage(s, "pre-process").threads + stage(s, "post-process").threads, 4u);
  for (std::size_t i = 0; i < futures.size(); ++i) {
    const Outputs out = futures[i].get();
    EXPECT_TRUE(bit_equal(out[0], reference[i % kRequests][0])) << "request " << i;
  }
  // The decision is on the timeline's balancer row too.
  bool on_timeline = false;
  for (const auto& e : ex.timeline().events()) on_timeline = on_timeline || e.track == "host:balancer";
  EXPECT_TRUE(on_timeline);
}
