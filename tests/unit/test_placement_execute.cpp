// Executing a placement across processors (PlacementOptions::execute, docs/placement.md): a model
// with a shape subgraph split between cpu and cpu:accel by a hand-made function library, its plan's
// Steps and copies against a hand-computed expectation, and its outputs bit for bit equal to the
// same model on one device; one processor inserts no copies; bad settings are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <future>

#include "loom/executor.hpp"
#include "loom/placement.hpp"
#include "test_executor_preempt_support.hpp"
#include "test_placement_library.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::expect_error;

namespace {

// The hand-made library (test_placement_library.hpp). With th1 = 1 and th2 = 10 the rule puts the
// shape chain on the cpu (only the host has a benefit for scalar work: o = cpu:accel's round trip)
// and the tensor work on cpu:accel (s = 8 for the MatMuls there) — the test checks that it did,
// then what the planner made of it.

// x [2,3,4] -> MatMul(w [4,8]) -> Relu -> divided by x's last dimension -> MatMul(w2 [8,5]) -> y.
// The divisor comes from a shape subgraph (Shape -> Gather -> Cast), which loading keeps in the
// graph when constant folding is off.
Model shape_subgraph_model() {
  ModelBuilder b("shaped");
  const auto x = b.input("x", DType::f32, Shape{2, 3, 4});
  const auto shape = b.op("Shape", {x});
  const auto last = b.op("Gather", {shape, b.constant("last", Tensor::from<std::int64_t>(Shape{1}, {2}))},
                         {{"axis", std::int64_t{0}}});
  const auto count = b.op("Cast", {last}, {{"to", std::int64_t{1}}});  // to float
  const auto hidden = b.relu(b.op("MatMul", {x, b.random_weight("w", Shape{4, 8}, 0.5f)}));
  const auto scaled = b.op("Div", {hidden, count});
  b.output(b.op("MatMul", {scaled, b.random_weight("w2", Shape{8, 5}, 0.5f)}));
  return b.build();
}

ExecutorOptions executor_options(const std::string& device, const std::string& library, bool stream_workers) {
  ExecutorOptions options;
  options.device = device;
  options.profile = "none";
  options.function_library = library;
  options.cpu_stream_shares = stream_workers;
  return options;
}

LoadOptions split_load(bool execute) {
  LoadOptions load;
  load.optimize.fold_constants = false;
  load.placement.processors = {"cpu:accel", "cpu"};
  load.placement.benefit_threshold_us = 1;
  load.placement.cost_threshold_us = 10;
  load.placement.execute = execute;
  return load;
}

// Runs `count` requests at once (seeds 1..count) and returns their outputs.
std::vector<Outputs> run_requests(Executor& executor, const Model& model, const std::string& name, int count) {
  std::vector<std::future<Outputs>> futures;
  for (int seed = 1; seed <= count; ++seed)
    futures.push_back(executor.submit(name, random_inputs(model, static_cast<std::uint64_t>(seed))));
  std::vector<Outputs> outputs;
  for (auto& f : futures) outputs.push_back(f.get());
  return outputs;
}

void expect_bitwise_equal(const std::vector<Outputs>& got, const std::vector<Outputs>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t r = 0; r < got.size(); ++r) {
    ASSERT_EQ(got[r].size(), expected[r].size());
    for (std::size_t o = 0; o < got[r].size(); ++o) {
      SCOPED_TRACE("request " + std::to_string(r) + ", output " + std::to_string(o));
      ASSERT_EQ(got[r][o].shape(), expected[r][o].shape());
      ASSERT_EQ(got[r][o].bytes(), expected[r][o].bytes());
      EXPECT_EQ(std::memcmp(got[r][o].data(), expected[r][o].data(), got[r][o].bytes()), 0);
    }
  }
}

// A Step as the test states it: name prefix, processor, copy_from -> copy_to.
struct ExpectedStep {
  std::string name;
  std::string processor;
  std::string copy_from, copy_to;
};

void expect_steps(const ModelInfo& info, const std::vector<ExpectedStep>& expected) {
  ASSERT_EQ(info.steps.size(), expected.size());
  for (std::size_t s = 0; s < expected.size(); ++s) {
    SCOPED_TRACE("Step " + std::to_string(s) + " '" + info.steps[s].name + "'");
    EXPECT_EQ(info.steps[s].name.rfind(expected[s].name, 0), 0u);
    EXPECT_EQ(info.steps[s].processor, expected[s].processor);
    EXPECT_EQ(info.steps[s].copy_from, expected[s].copy_from);
    EXPECT_EQ(info.steps[s].copy_to, expected[s].copy_to);
    if (!expected[s].copy_from.empty()) {
      // Copies are memory work: bytes and no FLOPs.
      EXPECT_EQ(info.steps[s].flops, 0);
      EXPECT_EQ(info.steps[s].compute_us, 0);
      EXPECT_GT(info.steps[s].memory_us, 0);
      EXPECT_GT(info.steps[s].bytes_written, 0u);
      EXPECT_EQ(info.steps[s].ops, std::vector<std::string>(info.steps[s].ops.size(), "Copy"));
    }
  }
}

class PlacementExecute : public ::testing::TestWithParam<bool> {};  // stream workers on the device

}  // namespace

// Device cpu. The placement: the shape subgraph on cpu, the MatMuls, Relu and Div on cpu:accel.
// Hand-computed plan:
//   Shape                                 on cpu (an anchor: a Step of its own)
//   Gather + Cast                         on cpu (Cast is pointwise: it joins the Gather's Step)
//   copy cpu->cpu:accel of x and count    (the MatMul reads the request's input, which arrives on
//                                          the device; the Div, in the MatMul's Step, reads count)
//   MatMul + Relu + Div                   on cpu:accel
//   MatMul                                on cpu:accel
//   copy cpu:accel->cpu of y              (outputs are read on the executor's device)
// Copies between cpu:accel and the host run on cpu:accel's stream.
TEST_P(PlacementExecute, SplitAcrossCpuAndAccelEqualsOneDeviceBitForBit) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  const Model model = shape_subgraph_model();
  Executor single(executor_options("cpu", library.path(), GetParam()));
  single.load(model, split_load(false));
  Executor split(executor_options("cpu", library.path(), GetParam()));
  split.load(model, split_load(true));

  const ModelInfo info = split.model_info("shaped");
  const auto& nodes = info.placement.nodes;
  ASSERT_EQ(info.placement.graph_nodes, 7u);
  const std::vector<std::pair<std::string, std::string>> placed = {
      {"Shape", "cpu"},      {"Gather", "cpu"},    {"Cast", "cpu"},        {"MatMul", "cpu:accel"},
      {"Relu", "cpu:accel"}, {"Div", "cpu:accel"}, {"MatMul", "cpu:accel"}};
  for (std::size_t n = 0; n < placed.size(); ++n) {
    SCOPED_TRACE(nodes[n].node);
    EXPECT_EQ(nodes[n].op, placed[n].first);
    EXPECT_EQ(nodes[n].processor, placed[n].second);
  }
  expect_steps(info, {{nodes[0].node, "cpu", "", ""},
                      {nodes[1].node, "cpu", "", ""},
                      {"copy cpu->cpu:accel", "cpu:accel", "cpu", "cpu:accel"},
                      {nodes[3].node, "cpu:accel", "", ""},
                      {nodes[6].node, "cpu:accel", "", ""},
                      {"copy cpu:accel->cpu", "cpu:accel", "cpu:accel", "cpu"}});
  // x (2*3*4 floats) and count (1 float); then y (2*3*5 floats).
  EXPECT_EQ(info.steps[2].bytes_written, 2u * 3 * 4 * 4 + 4);
  EXPECT_EQ(info.steps[2].ops.size(), 2u);
  EXPECT_EQ(info.steps[5].bytes_written, 2u * 3 * 5 * 4);
  // The one-device plan: the same nodes in 4 Steps, no copies, no processors.
  const ModelInfo one = single.model_info("shaped");
  EXPECT_EQ(one.steps.size(), 4u);
  for (const auto& step : one.steps) EXPECT_TRUE(step.processor.empty() && step.copy_from.empty());

  expect_bitwise_equal(run_requests(split, model, "shaped", 8), run_requests(single, model, "shaped", 8));
  EXPECT_EQ(split.stats().requests_completed, 8u);
  EXPECT_EQ(split.stats().steps_dispatched, 8u * 6);
}

// Device cpu:accel, the same placement: now the shape subgraph runs beside the device, on the
// host. The Shape reads only x's shape, so x does not cross; count crosses to the device for the
// Div; the output is on the device already. Hand-computed plan:
//   Shape; Gather + Cast                  on cpu
//   copy cpu->cpu:accel of count          (on cpu:accel's stream)
//   MatMul + Relu + Div; MatMul           on cpu:accel
TEST_P(PlacementExecute, SplitWithTheAcceleratorAsTheDeviceCopiesOnlyWhatIsRead) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  const Model model = shape_subgraph_model();
  Executor single(executor_options("cpu:accel", library.path(), GetParam()));
  single.load(model, split_load(false));
  Executor split(executor_options("cpu:accel", library.path(), GetParam()));
  split.load(model, split_load(true));
  const ModelInfo info = split.model_info("shaped");
  const auto& nodes = info.placement.nodes;
  ASSERT_EQ(info.placement.graph_nodes, 7u);
  ASSERT_EQ(nodes[0].processor, "cpu");
  ASSERT_EQ(nodes[2].processor, "cpu");
  ASSERT_EQ(nodes[3].processor, "cpu:accel");
  expect_steps(info, {{nodes[0].node, "cpu", "", ""},
                      {nodes[1].node, "cpu", "", ""},
                      {"copy cpu->cpu:accel", "cpu:accel", "cpu", "cpu:accel"},
                      {nodes[3].node, "cpu:accel", "", ""},
                      {nodes[6].node, "cpu:accel", "", ""}});
  EXPECT_EQ(info.steps[2].bytes_written, 4u);  // count
  expect_bitwise_equal(run_requests(split, model, "shaped", 6), run_requests(single, model, "shaped", 6));
}

INSTANTIATE_TEST_SUITE_P(StreamWorkers, PlacementExecute, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Asynchronous" : "Synchronous"; });

// The default thresholds place every node on the first processor (the device): executing that
// placement is the one-device plan, without a copy.
TEST(PlacementExecuteOneProcessor, EverythingOnTheDeviceInsertsNoCopies) {
  const Model model = shape_subgraph_model();
  Executor executor(executor_options("cpu", "defaults", false));
  LoadOptions load;
  load.optimize.fold_constants = false;
  load.placement.execute = true;
  load.name = "executed";
  executor.load(model, load);
  load.placement.execute = false;
  load.name = "recorded";
  executor.load(model, load);
  const ModelInfo executed = executor.model_info("executed");
  const ModelInfo recorded = executor.model_info("recorded");
  for (const auto& node : executed.placement.nodes) EXPECT_EQ(node.processor, "cpu");
  ASSERT_EQ(executed.steps.size(), recorded.steps.size());
  for (std::size_t s = 0; s < executed.steps.size(); ++s) {
    EXPECT_EQ(executed.steps[s].name, recorded.steps[s].name);
    EXPECT_EQ(executed.steps[s].ops, recorded.steps[s].ops);
    EXPECT_TRUE(executed.steps[s].processor.empty());
    EXPECT_TRUE(executed.steps[s].copy_from.empty());
  }
  expect_bitwise_equal(run_requests(executor, model, "executed", 2), run_requests(executor, model, "recorded", 2));
}

// A boundary is a cancellation point only where every live value is on the device alone: there a
// dump from the device's arena is the whole state.
TEST(PlacementExecuteSplit, CancellationPointsOnlyWhereTheLiveValuesAreOnTheDeviceAlone) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  ExecutorOptions options = executor_options("cpu", library.path(), false);
  options.cancellation_interval_us = 0;  // every boundary that qualifies
  Executor executor(options);
  executor.load(shape_subgraph_model(), split_load(true));
  const ModelInfo info = executor.model_info("shaped");
  ASSERT_EQ(info.steps.size(), 6u);
  // After Shape and Gather + Cast: x, the shape and count are on the cpu only: dumpable. After
  // the copy (x and count on both) and the two MatMul Steps (values on cpu:accel): not.
  const std::vector<bool> expected = {true, true, false, false, false};
  for (std::size_t s = 0; s + 1 < info.steps.size(); ++s) {
    SCOPED_TRACE(info.steps[s].name);
    EXPECT_EQ(info.steps[s].cancellation_point, expected[s]);
  }
}

// The timeline shows every Step of every request, copy Steps included, and each request's
// phases still add up to its latency.
TEST(PlacementExecuteSplit, TimelineAndRequestTimesCoverEveryStep) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  ExecutorOptions options = executor_options("cpu", library.path(), false);
  options.record_timeline = true;
  options.stage_timing = true;
  Executor executor(options);
  const Model model = shape_subgraph_model();
  executor.load(model, split_load(true));
  const std::size_t steps = executor.model_info("shaped").steps.size();
  std::vector<std::promise<RequestTimes>> done(3);
  for (std::size_t r = 0; r < done.size(); ++r)
    executor.submit("shaped", random_inputs(model, r + 1),
                    [&done, r](std::exception_ptr error, Outputs, const RequestTimes& times) {
                      if (error)
                        done[r].set_exception(error);
                      else
                        done[r].set_value(times);
                    });
  for (auto& d : done) {
    const RequestTimes times = d.get_future().get();
    EXPECT_GT(times.total_us, 0);
    EXPECT_GE(times.compute_us, 0);
    EXPECT_NEAR(times.queue_us + times.h2d_us + times.compute_us + times.d2h_us + times.post_us, times.total_us, 1.0);
  }
  std::size_t step_events = 0;
  for (const TraceEvent& e : executor.timeline().events())
    if (e.category == "step") {
      ++step_events;
      EXPECT_GE(e.duration_us, 0) << e.name;
    }
  EXPECT_EQ(step_events, done.size() * steps);
}

// An urgent request that needs the split model's memory preempts it at the first boundary after
// two Steps (Gather + Cast's: every live value on the device alone), dumping the device's arena;
// the split request resumes with the copy to cpu:accel from its restored arena. Both outputs equal
// their runs alone bit for bit.
TEST(PlacementExecuteSplit, PreemptedAtABoundaryOnTheDeviceDumpsAndResumes) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  ExecutorOptions options = executor_options("cpu", library.path(), false);
  options.cancellation_interval_us = 0;
  const Model long_model = shape_subgraph_model();
  ModelBuilder b("urgent");
  b.output(
      b.relu(b.op("MatMul", {b.input("u", DType::f32, Shape{4, 16}), b.random_weight("wu", Shape{16, 16}, 0.3f)})));
  const Model urgent_model = b.build();
  std::uint64_t long_arena = 0, urgent_arena = 0, dumped = 0;
  {
    Executor probe(options);
    probe.load(long_model, split_load(true));
    probe.load(urgent_model);
    const ModelInfo info = probe.model_info("shaped");
    ASSERT_TRUE(info.steps[1].cancellation_point);
    long_arena = info.activation_bytes;
    urgent_arena = probe.model_info("urgent").activation_bytes;
    dumped = info.steps[1].live_bytes_after;
  }
  // Room for one arena at a time: the urgent request takes the split one's.
  options.arena_memory_limit_bytes = std::max(long_arena, urgent_arena);
  test_support::PreemptionHarness harness(options, long_model, urgent_model, false, split_load(true));
  const auto long_in = random_inputs(long_model, 5);
  const auto urgent_in = random_inputs(urgent_model, 6);
  const test_support::PairRun run = harness.run(long_in, urgent_in, 2);
  ExecutorOptions alone = executor_options("cpu", library.path(), false);
  Executor single(alone);
  single.load(long_model, split_load(false));
  test_support::expect_preempted_once(run, single.submit("shaped", long_in).get(),
                                      test_support::run_alone(alone, urgent_model, "urgent", urgent_in), 1, dumped);
}

TEST(PlacementExecuteErrors, BadSettingsAreRefusedNamingTheCombination) {
  const test_support::HandMadeLibraryFile library("loom_execute_library");
  const Model model = shape_subgraph_model();
  Executor executor(executor_options("cpu", library.path(), false));
  LoadOptions load = split_load(true);
  load.name = "a";
  load.placement.processors = {"cpu:accel", "tpu"};
  expect_error([&] { executor.load(model, load); }, ErrorCode::invalid_argument,
               {"load 'a'", "processor 'tpu'", "available: "});
  load.placement.processors = {"cpu:accel", "cpu:accel"};
  expect_error([&] { executor.load(model, load); }, ErrorCode::invalid_argument, {"listed twice"});
  load.placement.processors = {"cpu:accel", "cpu"};
  load.placement.enabled = false;
  expect_error([&] { executor.load(model, load); }, ErrorCode::invalid_argument,
               {"load 'a'", "placement.execute needs the placement pass"});

  ExecutorOptions compare = executor_options("cpu", library.path(), false);
  compare.debug = DebugMode::compare;
  Executor debugged(compare);
  expect_error([&] { debugged.load(model, split_load(true)); }, ErrorCode::invalid_argument,
               {"load 'shaped'", "cpu, cpu:accel", "debug = compare"});
  // On one processor the comparison works as before.
  LoadOptions one;
  one.placement.execute = true;
  debugged.load(model, one);
}
