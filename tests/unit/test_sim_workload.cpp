// Workload files (docs/workload-format.md), the JSON result, and workloads built from real models.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "loom/model.hpp"
#include "loom/sim.hpp"
#include "sim_test_support.hpp"

using namespace loom;
using namespace loom::sim;

namespace {

Workload parse(const std::string& text) {
  std::istringstream in(text);
  return parse_workload(in, "test.json");
}

// The error parse() throws for `text`: invalid_argument, naming the source and `field`.
void expect_parse_error(const std::string& text, const std::string& field, const std::string& problem) {
  try {
    parse(text);
    ADD_FAILURE() << "no error for " << text;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(message.find("test.json: " + field + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  }
}

const char* kValid = R"({
  "description": "two models",
  "onchip_capacity_bytes": 5e3,
  "models": [
    {"name": "cnn", "steps": [{"name": "conv", "compute_us": 4, "memory_us": 2.5, "onchip_bytes": 1000},
                              {"compute_us": 1, "memory_us": 0}]},
    {"name": "lstm", "description": "memory-bound", "steps": [{"compute_us": 2, "memory_us": 4}]}
  ],
  "requests": [
    {"model": "lstm", "arrival_us": 7, "priority": -2},
    {"model": "cnn", "count": 3, "interval_us": 10}
  ]
})";

// x [1,4] -> MatMul w1 [4,8] -> h [1,8] -> MatMul w2 [8,2] -> y [1,2], f32: two Steps.
Model two_matmuls() {
  ModelBuilder b("mm");
  auto x = b.input("x", DType::f32, Shape{1, 4});
  auto w1 = b.random_weight("w1", Shape{4, 8}, 1.0f);
  auto w2 = b.random_weight("w2", Shape{8, 2}, 1.0f);
  b.output(b.op("MatMul", {b.op("MatMul", {x, w1}), w2}));
  return b.build();
}

}  // namespace

TEST(SimWorkload, ParsesEveryFieldWithDefaults) {
  const Workload w = parse(kValid);
  EXPECT_EQ(w.onchip_capacity_bytes, 5000u);
  ASSERT_EQ(w.models.size(), 2u);
  EXPECT_EQ(w.models[0].name, "cnn");
  ASSERT_EQ(w.models[0].steps.size(), 2u);
  EXPECT_EQ(w.models[0].steps[0].name, "conv");
  EXPECT_DOUBLE_EQ(w.models[0].steps[0].compute_us, 4);
  EXPECT_DOUBLE_EQ(w.models[0].steps[0].memory_us, 2.5);
  EXPECT_EQ(w.models[0].steps[0].onchip_bytes, 1000u);
  EXPECT_EQ(w.models[0].steps[1].name, "step1");  // default: step<index>
  EXPECT_EQ(w.models[0].steps[1].onchip_bytes, 0u);
  // "count": 3 with "interval_us": 10 expands in place to arrivals 0, 10, 20.
  ASSERT_EQ(w.requests.size(), 4u);
  EXPECT_EQ(w.requests[0].model, "lstm");
  EXPECT_DOUBLE_EQ(w.requests[0].arrival_us, 7);
  EXPECT_EQ(w.requests[0].priority, -2);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(w.requests[1 + i].model, "cnn");
    EXPECT_DOUBLE_EQ(w.requests[1 + i].arrival_us, 10.0 * i);
    EXPECT_EQ(w.requests[1 + i].priority, 0);
  }
}

TEST(SimWorkload, WrittenWorkloadReadsBackEqual) {
  const Workload w = parse(kValid);
  const Workload back = parse(workload_json(w));
  EXPECT_EQ(workload_json(back), workload_json(w));
  EXPECT_EQ(back.requests.size(), 4u);
  EXPECT_DOUBLE_EQ(back.models[0].steps[0].memory_us, 2.5);
}

// A Step's "kernels" (the GPU model's launches) are read with their defaults, written back and
// read back equal; a bad entry names its field.
TEST(SimWorkload, KernelsReadAndWriteBack) {
  const Workload w = parse(R"({"models": [{"name": "a", "steps": [{"name": "s", "compute_us": 1, "memory_us": 2,
      "kernels": [{"blocks": 64, "flops": 1e9, "bytes": 4096},
                  {"name": "loop", "blocks": 57, "threads_per_block": 128, "registers_per_thread": 64,
                   "shared_bytes_per_block": 1024, "f16": true, "cooperative": true}]}]}],
      "requests": [{"model": "a"}]})");
  const auto& kernels = w.models[0].steps[0].kernels;
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "s");  // default: the Step's name
  EXPECT_EQ(kernels[0].blocks, 64u);
  EXPECT_EQ(kernels[0].threads_per_block, 256u);
  EXPECT_EQ(kernels[0].registers_per_thread, 32u);
  EXPECT_DOUBLE_EQ(kernels[0].flops, 1e9);
  EXPECT_EQ(kernels[0].bytes, 4096u);
  EXPECT_FALSE(kernels[0].cooperative);
  EXPECT_EQ(kernels[1].threads_per_block, 128u);
  EXPECT_EQ(kernels[1].shared_bytes_per_block, 1024u);
  EXPECT_TRUE(kernels[1].f16);
  EXPECT_TRUE(kernels[1].cooperative);
  EXPECT_EQ(workload_json(parse(workload_json(w))), workload_json(w));
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1,
                         "kernels": [{"flops": 1}]}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].kernels[0].blocks", "missing");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1,
                         "kernels": [{"blocks": 1, "threads_per_block": 2048}]}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].kernels[0].threads_per_block", "out of range");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1,
                         "kernels": [{"blocks": 1, "grid": 3}]}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].kernels[0].grid", "unknown field");
}

TEST(SimWorkload, ErrorsNameTheFileAndTheField) {
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],
                         "requests": [{"model": "a"}, {"model": "b"}]})",
                     "requests[1].model", "unknown model 'b' (known: a)");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": -1}]}],
                         "requests": [{"model": "a"}]})",
                     "models[0].steps[0].memory_us", "negative time");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],
                         "requests": [{"model": "a", "arrival_us": -3}]})",
                     "requests[0].arrival_us", "negative time");
  // A Step larger than onchip_capacity_bytes is no error: it runs as tiles (test_sim_tiling.cpp).
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],)", "malformed JSON",
                     "");  // the "field" of a syntax error is the parser's text
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute": 1, "memory_us": 1}]}],
                         "requests": [{"model": "a"}]})",
                     "models[0].steps[0].compute", "unknown field");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"memory_us": 1}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].compute_us", "missing");
  expect_parse_error(R"({"models": [{"name": "a", "steps": []}], "requests": [{"model": "a"}]})", "models[0].steps",
                     "empty");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]},
                                    {"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],
                         "requests": [{"model": "a"}]})",
                     "models[1].name", "defined twice");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": "1", "memory_us": 1}]}],
                         "requests": [{"model": "a"}]})",
                     "models[0].steps[0].compute_us", "expected a number");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}],
                         "requests": [{"model": "a", "count": 1.5}]})",
                     "requests[0].count", "whole number");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]}]})", "requests",
                     "missing");
  expect_parse_error("[1, 2]", "(top level)", "expected an object");
}

TEST(SimWorkload, MissingFileIsAnErrorNamingThePath) {
  try {
    read_workload("/nonexistent/dir/w.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/w.json"), std::string::npos);
  }
}

// bench/workloads/mission-example.json is MISSION.md §1's example as in sim_test_support.hpp,
// whose schedules test_sim_schedule.cpp checks by hand.
TEST(SimWorkload, MissionExampleFileMatchesTheTestWorkload) {
  const auto path = std::filesystem::path(LOOM_SOURCE_DIR) / "bench/workloads/mission-example.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "source tree not found in " << LOOM_SOURCE_DIR;
  EXPECT_EQ(workload_json(read_workload(path.string())), workload_json(fixtures::mission_example()));
}

TEST(SimWorkload, ResultJsonHasTheDocumentedKeys) {
  const Workload w = fixtures::mission_example();
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  const auto doc = nlohmann::json::parse(result_json(r, w, "fifo"));
  for (const char* key : {"makespan_us", "lower_bound_us", "resource_bound_us", "chain_bound_us", "compute_busy_us",
                          "memory_busy_us", "compute_idle_us", "memory_idle_us"})
    EXPECT_TRUE(doc.at(key).is_number()) << key;
  EXPECT_EQ(doc.at("policy"), "fifo");
  EXPECT_DOUBLE_EQ(doc.at("makespan_us").get<double>(), 16);  // FifoRunsEachRequestToCompletion
  EXPECT_DOUBLE_EQ(doc.at("lower_bound_us").get<double>(), 12);
  ASSERT_EQ(doc.at("requests").size(), 2u);
  const auto& lstm = doc.at("requests")[1];
  EXPECT_EQ(lstm.at("model"), "lstm");
  EXPECT_DOUBLE_EQ(lstm.at("arrival_us").get<double>(), 0);
  EXPECT_DOUBLE_EQ(lstm.at("start_us").get<double>(), 6);
  EXPECT_DOUBLE_EQ(lstm.at("finish_us").get<double>(), 16);
  EXPECT_DOUBLE_EQ(lstm.at("latency_us").get<double>(), 16);
  ASSERT_EQ(doc.at("schedule").size(), 4u);
  const auto& third = doc.at("schedule")[2];
  EXPECT_EQ(third.at("request"), 1);
  EXPECT_EQ(third.at("model"), "lstm");
  EXPECT_EQ(third.at("step"), 0);
  EXPECT_EQ(third.at("step_name"), "L21");
  EXPECT_DOUBLE_EQ(third.at("decided_us").get<double>(), 4);
  EXPECT_DOUBLE_EQ(third.at("memory_start_us").get<double>(), 6);
  EXPECT_DOUBLE_EQ(third.at("memory_end_us").get<double>(), 10);
  EXPECT_DOUBLE_EQ(third.at("compute_start_us").get<double>(), 10);
  EXPECT_DOUBLE_EQ(third.at("compute_end_us").get<double>(), 12);
}

// Roofline at 1 GFLOP/s and 1 GB/s, by hand:
//   Step 0: 2*1*4*8 = 64 FLOPs -> 0.064 us; weights 128 B + x read 16 B + h written 32 B = 176 B
//           -> 0.176 us; working set w1 + x + h = 176 B.
//   Step 1: 2*1*8*2 = 32 FLOPs -> 0.032 us; weights 64 + h 32 + y 8 = 104 B -> 0.104 us.
TEST(SimWorkload, ModelsCompileIntoStepsWithRooflineCosts) {
  const auto models = sim_models({two_matmuls()}, DType::f32, 1e9, 1e9);
  ASSERT_EQ(models.size(), 1u);
  EXPECT_EQ(models[0].name, "mm");
  ASSERT_EQ(models[0].steps.size(), 2u);
  EXPECT_DOUBLE_EQ(models[0].steps[0].compute_us, 0.064);
  EXPECT_DOUBLE_EQ(models[0].steps[0].memory_us, 0.176);
  EXPECT_EQ(models[0].steps[0].onchip_bytes, 176u);
  EXPECT_DOUBLE_EQ(models[0].steps[1].compute_us, 0.032);
  EXPECT_DOUBLE_EQ(models[0].steps[1].memory_us, 0.104);
  EXPECT_EQ(models[0].steps[1].onchip_bytes, 104u);
  EXPECT_THROW(sim_models({two_matmuls()}, DType::f32, 0, 1e9), Error);
}

// Measured 8 us with roofline compute 1, memory 3 -> memory 8 * 3/4 = 6, compute 2. Unmeasured
// Steps keep the roofline; a measured Step with no roofline cost is all compute.
TEST(SimWorkload, MeasuredTimeIsSplitInTheRooflineProportion) {
  ModelInfo info;
  info.name = "m";
  StepInfo measured;
  measured.name = "a";
  measured.compute_us = 1;
  measured.memory_us = 3;
  measured.measured_us = 8;
  measured.working_set_bytes = 64;
  StepInfo roofline = measured;
  roofline.name = "b";
  roofline.measured_us = 0;
  StepInfo free_step;
  free_step.name = "c";
  free_step.measured_us = 5;
  info.steps = {measured, roofline, free_step};
  const SimModel m = sim_model(info);
  ASSERT_EQ(m.steps.size(), 3u);
  EXPECT_DOUBLE_EQ(m.steps[0].memory_us, 6);
  EXPECT_DOUBLE_EQ(m.steps[0].compute_us, 2);
  EXPECT_EQ(m.steps[0].onchip_bytes, 64u);
  EXPECT_DOUBLE_EQ(m.steps[1].memory_us, 3);
  EXPECT_DOUBLE_EQ(m.steps[1].compute_us, 1);
  EXPECT_DOUBLE_EQ(m.steps[2].memory_us, 0);
  EXPECT_DOUBLE_EQ(m.steps[2].compute_us, 5);
}

TEST(SimWorkload, PeriodicRequestsInterleaveModelsByArrival) {
  const std::vector<SimModel> models = {{"a", {{"s", 1, 1, 0}}}, {"b", {{"s", 1, 1, 0}}}};
  const auto requests = periodic_requests(models, 2, 10);
  ASSERT_EQ(requests.size(), 4u);
  const char* names[] = {"a", "b", "a", "b"};
  const double arrivals[] = {0, 0, 10, 10};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(requests[i].model, names[i]);
    EXPECT_DOUBLE_EQ(requests[i].arrival_us, arrivals[i]);
  }
}

// Priorities by name or number, live bytes, given points, a model's own cancellation rule and
// closed-loop requests (docs/workload-format.md).
TEST(SimWorkload, ParsesPrioritiesLiveBytesPointsAndClosedLoops) {
  const Workload w = parse(R"({
    "models": [
      {"name": "a", "steps": [{"compute_us": 1, "memory_us": 2, "live_bytes_after": 64, "cancellation_point": true},
                              {"compute_us": 1, "memory_us": 1}]},
      {"name": "b", "cancellation_interval_us": 2.5, "cancellation_max_live_bytes": 20,
       "steps": [{"compute_us": 1, "memory_us": 0, "live_bytes_after": 10},
                 {"compute_us": 1, "memory_us": 0, "live_bytes_after": 50},
                 {"compute_us": 1, "memory_us": 0, "live_bytes_after": 10},
                 {"compute_us": 1, "memory_us": 0, "live_bytes_after": 50},
                 {"compute_us": 1, "memory_us": 0}]}
    ],
    "requests": [
      {"model": "a", "priority": "urgent"},
      {"model": "a", "priority": "background", "arrival_us": 3},
      {"model": "b", "priority": -1},
      {"model": "b", "count": 3, "back_to_back": true, "interval_us": 0.5, "arrival_us": 7},
      {"model": "a", "follows": 0, "arrival_us": 2}
    ]
  })");
  ASSERT_EQ(w.models.size(), 2u);
  EXPECT_EQ(w.models[0].steps[0].live_bytes_after, 64u);
  EXPECT_EQ(w.models[0].steps[0].cancellation_point, std::optional<bool>(true));
  EXPECT_FALSE(w.models[0].steps[1].cancellation_point.has_value());
  // Model b's rule (interval 2.5, bound 20), walked by hand in test_sim_preempt_points.cpp:
  // only the boundary after Step 2; kept as given points.
  const bool expected_b[] = {false, false, true, false, false};
  for (std::size_t s = 0; s < 5; ++s) EXPECT_EQ(w.models[1].steps[s].cancellation_point, expected_b[s]) << s;

  ASSERT_EQ(w.requests.size(), 7u);
  EXPECT_EQ(w.requests[0].priority, 1);
  EXPECT_EQ(w.requests[1].priority, -1);
  EXPECT_EQ(w.requests[2].priority, -1);
  EXPECT_FALSE(w.requests[3].follows.has_value());
  EXPECT_DOUBLE_EQ(w.requests[3].arrival_us, 7);
  EXPECT_EQ(w.requests[4].follows, std::optional<std::size_t>(3));
  EXPECT_DOUBLE_EQ(w.requests[4].arrival_us, 0.5);
  EXPECT_EQ(w.requests[5].follows, std::optional<std::size_t>(4));
  EXPECT_EQ(w.requests[6].follows, std::optional<std::size_t>(0));
  EXPECT_DOUBLE_EQ(w.requests[6].arrival_us, 2);

  // Everything reads back equal from what workload_json writes.
  std::istringstream again(workload_json(w));
  EXPECT_EQ(workload_json(parse_workload(again, "again.json")), workload_json(w));
}

TEST(SimWorkload, PreemptionFieldErrorsNameTheField) {
  const std::string model = R"({"name": "a", "steps": [{"compute_us": 1, "memory_us": 1}]})";
  expect_parse_error(R"({"models": [)" + model + R"(], "requests": [{"model": "a", "priority": "high"}]})",
                     "requests[0].priority", "unknown priority 'high'");
  expect_parse_error(R"({"models": [)" + model + R"(], "requests": [{"model": "a", "follows": 0}]})",
                     "requests[0].follows", "no earlier request");
  expect_parse_error(R"({"models": [)" + model + R"(], "requests": [{"model": "a"}, {"model": "a", "follows": 1}]})",
                     "requests[1].follows", "out of range");
  expect_parse_error(R"({"models": [{"name": "a", "steps": [{"compute_us": 1, "memory_us": 1,
                        "cancellation_point": 1}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].cancellation_point", "expected true or false");
  expect_parse_error(R"({"models": [{"name": "a", "cancellation_interval_us": 5, "steps": [{"compute_us": 1,
                        "memory_us": 1, "cancellation_point": true}]}], "requests": [{"model": "a"}]})",
                     "models[0].steps[0].cancellation_point", "exclude each other");
  expect_parse_error(R"({"models": [)" + model + R"(], "requests": [{"model": "a", "back_to_back": "yes"}]})",
                     "requests[0].back_to_back", "expected true or false");
}

// sim_model carries the executor's live bytes and cancellation points, every Step's flag given.
TEST(SimWorkload, SimModelCarriesLiveBytesAndCancellationPoints) {
  ModelInfo info;
  info.name = "m";
  StepInfo a;
  a.name = "a";
  a.compute_us = 1;
  a.live_bytes_after = 96;
  a.cancellation_point = true;
  StepInfo b = a;
  b.name = "b";
  b.live_bytes_after = 8;
  b.cancellation_point = false;
  info.steps = {a, b};
  const SimModel m = sim_model(info);
  ASSERT_EQ(m.steps.size(), 2u);
  EXPECT_EQ(m.steps[0].live_bytes_after, 96u);
  EXPECT_EQ(m.steps[0].cancellation_point, std::optional<bool>(true));
  EXPECT_EQ(m.steps[1].live_bytes_after, 8u);
  EXPECT_EQ(m.steps[1].cancellation_point, std::optional<bool>(false));
  // The planner's models carry live bytes and leave the points to the rule.
  const auto planned = sim_models({two_matmuls()}, DType::f32, 1e9, 1e9);
  EXPECT_FALSE(planned[0].steps[0].cancellation_point.has_value());
  EXPECT_GT(planned[0].steps[0].live_bytes_after, 0u);  // h [1,8] f32 is live after Step 0
}
