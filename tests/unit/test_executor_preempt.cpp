// Priorities, deadlines, cancellation points and preemption in the executor on the CPU backend
// (issue 7): a long request paused at each of its cancellation points for an urgent one gives
// the same bits as when it runs alone; so does one whose live buffers were dumped to host memory
// and restored; pauses happen only at cancellation points; waiting requests start by priority.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "test_support.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using namespace loom::test_support;

namespace {

ExecutorOptions cpu_options() {
  ExecutorOptions o;
  o.device = "cpu";
  o.profile = "none";  // roofline Step estimates: the cancellation points do not depend on a file
  return o;
}

Model long_model() { return workloads::resnet_cnn(1, workloads::Size::small, 11); }
Model urgent_model() { return workloads::lstm_seq(1, workloads::Size::small, 12); }

// The actions of `events` (one request's "preempt" events), checked to be in time order.
std::vector<std::string> actions_in_order(const std::vector<TraceEvent>& events) {
  std::vector<std::string> actions;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i > 0) EXPECT_LE(events[i - 1].start_us, events[i].start_us);
    actions.push_back(events[i].args.at("action"));
  }
  return actions;
}

std::size_t step_of(const TraceEvent& e) { return std::stoul(e.args.at("step")); }

// Estimated time of Step s as the executor uses it for cancellation points.
double estimated_us(const StepInfo& s) {
  return s.measured_us > 0 ? s.measured_us : std::max(s.compute_us, s.memory_us);
}

}  // namespace

TEST(ExecutorPreempt, PauseAtEveryCancellationPointIsBitIdentical) {
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;  // every boundary is a point: preempt at each of them
  const Model lm = long_model(), um = urgent_model();
  const auto long_in = random_inputs(lm, 101), urgent_in = random_inputs(um, 102);
  const Outputs long_alone = run_alone(options, lm, "long", long_in);
  const Outputs urgent_alone = run_alone(options, um, "urgent", urgent_in);

  PreemptionHarness harness(options, lm, um);
  const ModelInfo info = harness.executor().model_info("long");
  const auto points = cancellation_points(info);
  ASSERT_EQ(points.size(), info.steps.size() - 1) << "interval 0: every boundary but the last";
  ASSERT_GE(points.size(), 5u);
  for (std::size_t k : points) {
    SCOPED_TRACE("urgent request submitted after Step " + std::to_string(k));
    const PairRun run = harness.run(long_in, urgent_in, k + 1);
    expect_preempted_once(run, long_alone, urgent_alone, k, 0);  // no memory limit: nothing dumped
    EXPECT_EQ(actions_in_order(run.long_preemptions), (std::vector<std::string>{"pause", "resume"}));
  }
}

TEST(ExecutorPreempt, SameModelUrgentRequestIsBitIdentical) {
  // Both requests on one model share its stream and kernel scratch.
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;
  const Model lm = long_model();
  const auto long_in = random_inputs(lm, 201), urgent_in = random_inputs(lm, 202);
  const Outputs long_alone = run_alone(options, lm, "long", long_in);
  const Outputs urgent_alone = run_alone(options, lm, "long", urgent_in);
  ASSERT_FALSE(same_bits(long_alone, urgent_alone)) << "the two inputs must give different outputs";
  PreemptionHarness harness(options, lm, lm, /*urgent_on_long_model=*/true);
  for (std::size_t k : cancellation_points(harness.executor().model_info("long"))) {
    SCOPED_TRACE("after Step " + std::to_string(k));
    const PairRun run = harness.run(long_in, urgent_in, k + 1);
    EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
    EXPECT_TRUE(same_bits(run.urgent_outputs, urgent_alone));
    EXPECT_EQ(run.completion_order, (std::vector<std::string>{"urgent", "long"}));
  }
}

TEST(ExecutorPreempt, DumpAndRestoreUnderAnArenaLimitIsBitIdentical) {
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;
  const Model lm = long_model(), um = urgent_model();
  const auto long_in = random_inputs(lm, 301), urgent_in = random_inputs(um, 302);
  const Outputs long_alone = run_alone(options, lm, "long", long_in);
  const Outputs urgent_alone = run_alone(options, um, "urgent", urgent_in);
  const auto [long_arena, urgent_arena] = arena_bytes(options, lm, um);
  // Room for either request, never both.
  options.arena_memory_limit_bytes = std::max(long_arena, urgent_arena);
  ASSERT_LT(options.arena_memory_limit_bytes, long_arena + urgent_arena);

  PreemptionHarness harness(options, lm, um);
  const ModelInfo info = harness.executor().model_info("long");
  for (std::size_t k : cancellation_points(info)) {
    SCOPED_TRACE("after Step " + std::to_string(k));
    const PairRun run = harness.run(long_in, urgent_in, k + 1);
    // Exactly the plan's live bytes at that boundary went to host memory and came back.
    expect_preempted_once(run, long_alone, urgent_alone, k, info.steps[k].live_bytes_after);
    EXPECT_EQ(actions_in_order(run.long_preemptions), (std::vector<std::string>{"pause", "dump", "restore", "resume"}));
    for (const auto& e : run.long_preemptions)
      EXPECT_EQ(e.args.at("bytes"), std::to_string(info.steps[k].live_bytes_after));
  }
}

TEST(ExecutorPreempt, WithoutPreemptionAStartedRequestRunsToTheEnd) {
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;
  options.preemption = false;
  const Model lm = long_model(), um = urgent_model();
  const auto long_in = random_inputs(lm, 401), urgent_in = random_inputs(um, 402);
  const Outputs long_alone = run_alone(options, lm, "long", long_in);
  const Outputs urgent_alone = run_alone(options, um, "urgent", urgent_in);
  PreemptionHarness harness(options, lm, um);
  const auto points = cancellation_points(harness.executor().model_info("long"));
  for (std::size_t k : {points.front(), points[points.size() / 2], points.back()}) {
    SCOPED_TRACE("after Step " + std::to_string(k));
    const PairRun run = harness.run(long_in, urgent_in, k + 1);
    EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
    EXPECT_TRUE(same_bits(run.urgent_outputs, urgent_alone));
    EXPECT_EQ(run.completion_order, (std::vector<std::string>{"long", "urgent"}));
    EXPECT_EQ(run.stats_after.preemptions, 0u);
    EXPECT_TRUE(run.long_preemptions.empty());
  }
}

TEST(ExecutorPreempt, PausesOnlyAtCancellationPoints) {
  // Sparse points: the urgent request arrives after every Step; the long one runs on to its next
  // point (or to its end when none is left) before it pauses.
  ExecutorOptions options = cpu_options();
  const Model lm = long_model(), um = urgent_model();
  double total_us = 0;
  {
    Executor probe(options);
    probe.load(lm, "long");
    for (const auto& s : probe.model_info("long").steps) total_us += estimated_us(s);
  }
  options.cancellation_interval_us = total_us / 4;
  const auto long_in = random_inputs(lm, 501), urgent_in = random_inputs(um, 502);
  const Outputs long_alone = run_alone(options, lm, "long", long_in);
  PreemptionHarness harness(options, lm, um);
  const ModelInfo info = harness.executor().model_info("long");
  const auto points = cancellation_points(info);
  ASSERT_GE(points.size(), 2u);
  ASSERT_LT(points.size(), info.steps.size() / 2) << "the points must be sparse for this test to mean anything";
  for (std::size_t launched = 1; launched < info.steps.size(); ++launched) {
    SCOPED_TRACE("urgent request submitted after " + std::to_string(launched) + " Steps");
    const PairRun run = harness.run(long_in, urgent_in, launched);
    EXPECT_TRUE(same_bits(run.long_outputs, long_alone));
    const auto next_point = std::lower_bound(points.begin(), points.end(), launched - 1);
    if (next_point == points.end()) {
      EXPECT_TRUE(run.long_preemptions.empty());
      EXPECT_EQ(run.completion_order, (std::vector<std::string>{"long", "urgent"}));
      continue;
    }
    ASSERT_EQ(actions_in_order(run.long_preemptions), (std::vector<std::string>{"pause", "resume"}));
    EXPECT_EQ(step_of(run.long_preemptions[0]), *next_point);
    EXPECT_TRUE(info.steps[step_of(run.long_preemptions[0])].cancellation_point);
    EXPECT_EQ(run.completion_order, (std::vector<std::string>{"urgent", "long"}));
  }
}

TEST(ExecutorPreempt, NoCancellationPointMeansNoPause) {
  // An interval longer than the whole model: the rule places no point, so nothing can pause.
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 1e12;
  const Model lm = long_model(), um = urgent_model();
  PreemptionHarness harness(options, lm, um);
  EXPECT_TRUE(cancellation_points(harness.executor().model_info("long")).empty());
  const PairRun run = harness.run(random_inputs(lm, 601), random_inputs(um, 602), 2);
  EXPECT_TRUE(run.long_preemptions.empty());
  EXPECT_EQ(run.completion_order, (std::vector<std::string>{"long", "urgent"}));
}

TEST(ExecutorPreempt, ExpiredDeadlineFailsBeforeTheFirstStep) {
  Executor ex(cpu_options());
  const Model lm = long_model();
  ex.load(lm, "cnn");
  RequestOptions late;
  late.deadline = std::chrono::steady_clock::now() - std::chrono::milliseconds(1);
  auto failed = ex.submit("cnn", random_inputs(lm, 1), late);
  try {
    failed.get();
    FAIL() << "a request past its deadline ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::deadline_exceeded);
    EXPECT_NE(std::string(e.what()).find("'cnn'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("request 0"), std::string::npos) << e.what();
  }
  RequestOptions in_time;
  in_time.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
  EXPECT_EQ(ex.submit("cnn", random_inputs(lm, 2), in_time).get().size(), 1u);
  const auto stats = ex.stats();
  EXPECT_EQ(stats.requests_expired, 1u);
  EXPECT_EQ(stats.requests_failed, 1u);
  EXPECT_EQ(stats.requests_completed, 1u);
}

TEST(ExecutorPreempt, AStartedRequestRunsPastItsDeadline) {
  const Model lm = long_model();
  const auto inputs = random_inputs(lm, 3);
  ExecutorOptions options = cpu_options();
  const Outputs alone = run_alone(options, lm, "cnn", inputs);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  // After its first Step, hold the dispatcher until the deadline has passed.
  runtime::ExecutorTestHooks hooks;
  hooks.after_step = [deadline](const std::string&, std::size_t launched) -> std::uint64_t {
    if (launched == 1) std::this_thread::sleep_until(deadline + std::chrono::milliseconds(20));
    return 0;
  };
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& ex = *holder;
  ex.load(lm, "cnn");
  RequestOptions ro;
  ro.deadline = deadline;
  EXPECT_TRUE(same_bits(ex.submit("cnn", inputs, ro).get(), alone));
  EXPECT_EQ(ex.stats().requests_expired, 0u);
}

TEST(ExecutorPreempt, AWaitingRequestExpires) {
  // A background request waits behind a normal one and its deadline passes meanwhile (it cannot
  // start while the normal one is live, and that one is held past the deadline at its Step 2).
  const Model lm = long_model();
  ExecutorOptions options = cpu_options();
  Executor* ex = nullptr;
  std::future<Outputs> background;
  std::mutex mutex;
  runtime::ExecutorTestHooks hooks;
  hooks.after_step = [&](const std::string& model, std::size_t launched) -> std::uint64_t {
    std::lock_guard lock(mutex);
    if (model != "cnn") return 0;
    if (launched == 1) {
      RequestOptions ro;
      ro.priority = Priority::background;
      ro.deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(30);
      // No hold: should the request expire in pre-process it would never reach the dispatcher.
      background = ex->submit("cnn", random_inputs(lm, 5), ro);
      return 0;
    }
    if (launched == 2) std::this_thread::sleep_for(std::chrono::milliseconds(60));
    return 0;
  };
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& executor = *holder;
  ex = &executor;
  executor.load(lm, "cnn");
  EXPECT_EQ(executor.submit("cnn", random_inputs(lm, 4)).get().size(), 1u);
  std::future<Outputs> waiting;
  {
    std::lock_guard lock(mutex);
    waiting = std::move(background);
  }
  ASSERT_TRUE(waiting.valid());
  EXPECT_EQ(code_of([&] { waiting.get(); }), ErrorCode::deadline_exceeded);
  EXPECT_EQ(executor.stats().requests_expired, 1u);
}

namespace {

// Submits "first" (normal), and after its first Step four more of mixed priority; returns the
// order their callbacks ran in.
std::vector<std::string> completion_order_by_priority(bool preemption) {
  const Model m = long_model();
  ExecutorOptions options = cpu_options();
  options.preemption = preemption;
  options.cancellation_interval_us = 0;
  std::mutex mutex;
  std::vector<std::string> order;
  std::vector<std::future<void>> all;
  all.reserve(5);  // the hook adds to it while the test waits on its first element
  Executor* ex = nullptr;
  auto submit = [&](const std::string& tag, Priority p) {
    auto done = std::make_shared<std::promise<void>>();
    all.push_back(done->get_future());
    RequestOptions ro;
    ro.priority = p;
    ex->submit(
        "cnn", random_inputs(m, all.size()),
        [&mutex, &order, tag, done](std::exception_ptr, Outputs) {
          {
            std::lock_guard lock(mutex);
            order.push_back(tag);
          }
          done->set_value();
        },
        ro);
  };
  bool fired = false;
  runtime::ExecutorTestHooks hooks;
  hooks.after_step = [&](const std::string&, std::size_t launched) -> std::uint64_t {
    std::lock_guard lock(mutex);
    if (fired || launched != 1) return 0;
    fired = true;
    submit("background-1", Priority::background);
    submit("normal", Priority::normal);
    submit("background-2", Priority::background);
    submit("urgent", Priority::urgent);
    return 5;  // hold until all four reached the dispatcher
  };
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& executor = *holder;
  ex = &executor;
  executor.load(m, "cnn");
  std::future<void>* first = nullptr;
  {
    std::lock_guard lock(mutex);
    submit("first", Priority::normal);
    first = &all.front();
  }
  first->wait();  // the hook ran before "first" finished
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(all.size(), 5u);
  }
  for (std::size_t i = 1; i < all.size(); ++i) all[i].wait();
  std::lock_guard lock(mutex);
  return order;
}

}  // namespace

TEST(ExecutorPreempt, WaitingRequestsStartByPriority) {
  // The fifo policy orders within a class; the class decides who starts first.
  EXPECT_EQ(completion_order_by_priority(true),
            (std::vector<std::string>{"urgent", "first", "normal", "background-1", "background-2"}));
  EXPECT_EQ(completion_order_by_priority(false),
            (std::vector<std::string>{"first", "urgent", "normal", "background-1", "background-2"}));
}

namespace {

// x[1, widths[0]] -> MatMul -> [1, widths[1]] -> Relu -> MatMul -> ... : one Step per MatMul (the
// Relu joins it), so the live bytes after Step s are those of its output, 4 * widths[s + 1]
// (x is read only by Step 0).
Model matmul_chain(const std::vector<std::int64_t>& widths) {
  ModelBuilder b("chain", 9);
  auto x = b.input("x", DType::f32, Shape{1, widths[0]});
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    auto w = b.random_weight("w" + std::to_string(i), Shape{widths[i], widths[i + 1]}, 0.5f);
    x = b.relu(b.op("MatMul", {x, w}));
  }
  b.output(x);
  return b.build();
}

}  // namespace

TEST(ExecutorPreempt, CancellationPointsRespectTheLiveBytesBound) {
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;  // every qualifying boundary
  options.cancellation_max_live_bytes = 4 * 32;
  Executor ex(options);
  ex.load(matmul_chain({64, 16, 128, 32, 256, 8, 10}), "chain");
  const ModelInfo info = ex.model_info("chain");
  ASSERT_EQ(info.steps.size(), 6u);
  const std::vector<std::uint64_t> live = {4 * 16, 4 * 128, 4 * 32, 4 * 256, 4 * 8, 4 * 10};
  for (std::size_t s = 0; s < 5; ++s) EXPECT_EQ(info.steps[s].live_bytes_after, live[s]) << "Step " << s;
  // At most 128 bytes live: after Steps 0 (64), 2 (128) and 4 (32); never after the last.
  EXPECT_EQ(cancellation_points(info), (std::vector<std::size_t>{0, 2, 4}));
}

TEST(ExecutorPreempt, CancellationPointsEveryInterval) {
  // Eight equal Steps of estimated time d and an interval of 2.5 d: a point whenever waiting for
  // the next boundary would pass the interval, i.e. after every second Step.
  const Model chain = matmul_chain({48, 48, 48, 48, 48, 48, 48, 48, 48});
  double d = 0;
  {
    Executor probe(cpu_options());
    probe.load(chain, "chain");
    const auto steps = probe.model_info("chain").steps;
    ASSERT_EQ(steps.size(), 8u);
    d = estimated_us(steps[0]);
    for (const auto& s : steps) ASSERT_DOUBLE_EQ(estimated_us(s), d);
  }
  ASSERT_GT(d, 0);
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 2.5 * d;
  Executor ex(options);
  ex.load(chain, "chain");
  EXPECT_EQ(cancellation_points(ex.model_info("chain")), (std::vector<std::size_t>{1, 3, 5}));
}

TEST(ExecutorPreempt, ArenaLargerThanTheLimitFails) {
  ExecutorOptions options = cpu_options();
  options.arena_memory_limit_bytes = 1024;
  Executor ex(options);
  const Model lm = long_model();
  ex.load(lm, "cnn");
  ASSERT_GT(ex.model_info("cnn").activation_bytes, 1024u);
  EXPECT_EQ(code_of([&] { ex.submit("cnn", random_inputs(lm, 1)).get(); }), ErrorCode::out_of_memory);
}

TEST(ExecutorPreempt, ManyRequestsUnderATightLimitAllFinishCorrectly) {
  // Mixed priorities, a limit that holds two arenas: every request completes with its alone bits.
  ExecutorOptions options = cpu_options();
  options.cancellation_interval_us = 0;
  const Model lm = long_model(), um = urgent_model();
  std::vector<std::vector<Tensor>> long_in, urgent_in;
  std::vector<Outputs> long_alone, urgent_alone;
  for (int i = 0; i < 4; ++i) {
    long_in.push_back(random_inputs(lm, 700 + i));
    urgent_in.push_back(random_inputs(um, 800 + i));
    long_alone.push_back(run_alone(options, lm, "long", long_in.back()));
    urgent_alone.push_back(run_alone(options, um, "urgent", urgent_in.back()));
  }
  Executor probe(options);
  probe.load(lm, "long");
  probe.load(um, "urgent");
  options.arena_memory_limit_bytes =
      std::max(probe.model_info("long").activation_bytes, probe.model_info("urgent").activation_bytes) * 2;
  Executor ex(options);
  ex.load(lm, "long");
  ex.load(um, "urgent");
  std::vector<std::future<Outputs>> longs, urgents;
  for (int i = 0; i < 4; ++i) {
    RequestOptions background, urgent;
    background.priority = i % 2 ? Priority::background : Priority::normal;
    urgent.priority = Priority::urgent;
    longs.push_back(ex.submit("long", long_in[i], background));
    urgents.push_back(ex.submit("urgent", urgent_in[i], urgent));
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same_bits(longs[i].get(), long_alone[i])) << i;
    EXPECT_TRUE(same_bits(urgents[i].get(), urgent_alone[i])) << i;
  }
  const auto stats = ex.stats();
  EXPECT_EQ(stats.requests_completed, 8u);
  EXPECT_GT(stats.steps_dispatched, 0u);
}

TEST(ExecutorPreempt, StatsCountDispatchedSteps) {
  Executor ex(cpu_options());
  const Model um = urgent_model();
  ex.load(um, "lstm");
  for (int i = 0; i < 3; ++i) ex.submit("lstm", random_inputs(um, i)).get();
  const auto stats = ex.stats();
  EXPECT_EQ(stats.steps_dispatched, 3 * ex.model_info("lstm").steps.size());
  EXPECT_GT(stats.dispatch_host_us, 0);
  EXPECT_EQ(stats.preemptions, 0u);
  EXPECT_EQ(stats.cuda_graph_steps, 0u) << "no graphs on the CPU";
}

TEST(ExecutorPreempt, PriorityNamesRoundTrip) {
  for (Priority p : {Priority::background, Priority::normal, Priority::urgent})
    EXPECT_EQ(priority_from_name(priority_name(p)), p);
  EXPECT_EQ(code_of([] { priority_from_name("high"); }), ErrorCode::invalid_argument);
}
