// The placement pass at load (Executor::load, LoadOptions::placement): a hand-made function library
// and a small model placed as computed by hand, the folded shape chain reported as scalar work on
// the CPU, the report's JSON, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "loom/executor.hpp"
#include "loom/placement.hpp"
#include "test_placement_library.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::expect_error;

namespace {

// The hand-made library (test_placement_library.hpp) has entries at exactly the sizes of the model
// below, so no scaling: MatMul [1,16] x [16,16] (bucket 4), Relu of 16 elements (bucket 2).

Model matmul_relu() {
  ModelBuilder b("matmul_relu");
  const auto y = b.op("MatMul", {b.input("x", DType::f32, Shape{1, 16}), b.random_weight("w", Shape{16, 16}, 0.1f)});
  b.output(b.relu(y));
  return b.build();
}

ExecutorOptions cpu_executor(const std::string& library) {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  options.function_library = library;
  return options;
}

}  // namespace

// Processors cpu:accel then cpu; th1 = 1, th2 = 10.
//   MatMul: a = 2 (cpu:accel), 10 (cpu); s = 10 - a = 8, 0; o = 0. On cpu:accel its 64-byte input
//     crosses from the host: t = 1 + 64/64 = 2, c = 4 <= 10, p = 8 >= 1: passes, first in order.
//   Relu: fused with the MatMul on cpu:accel: alone there t = 2 (its 64-byte graph output goes
//     to the host), a = 1, c = 3, p = 0; the pair c = 4 + 3 = 7 <= 10, p = 8 + 0 = 8 >= 1: passes.
//     (Alone it would fail everywhere: p = 0 < 1.)
TEST(PlacementLoad, PlacesTheLoadedGraphByTheRuleWithTheLibrarysFigures) {
  const test_support::HandMadeLibraryFile library_file("loom_placement_library");
  const std::string& library = library_file.path();
  Executor executor(cpu_executor(library));
  LoadOptions load;
  load.placement.processors = {"cpu:accel", "cpu"};
  load.placement.benefit_threshold_us = 1;
  load.placement.cost_threshold_us = 10;
  executor.load(matmul_relu(), load);
  const ModelPlacement& placement = executor.model_info("matmul_relu").placement;

  ASSERT_TRUE(placement.enabled);
  EXPECT_EQ(placement.library, library);
  EXPECT_EQ(placement.processors, (std::vector<std::string>{"cpu:accel", "cpu"}));
  ASSERT_EQ(placement.graph_nodes, 2u);
  ASSERT_EQ(placement.nodes.size(), 2u);
  const NodePlacement& matmul = placement.nodes[0];
  EXPECT_EQ(matmul.op, "MatMul");
  EXPECT_EQ(matmul.work_class, WorkClass::tensor);
  EXPECT_EQ(matmul.processor, "cpu:accel");
  EXPECT_EQ(matmul.reason, PlacementReason::passed);
  EXPECT_DOUBLE_EQ(matmul.terms.transfer_us, 2);
  EXPECT_DOUBLE_EQ(matmul.terms.accumulated_us, 2);
  EXPECT_DOUBLE_EQ(matmul.terms.speed_us, 8);
  EXPECT_DOUBLE_EQ(matmul.cost_us, 4);
  EXPECT_DOUBLE_EQ(matmul.benefit_us, 8);
  ASSERT_EQ(matmul.evaluated.size(), 2u);
  EXPECT_DOUBLE_EQ(matmul.evaluated[1].terms.cost(), 10);
  const NodePlacement& relu = placement.nodes[1];
  EXPECT_EQ(relu.op, "Relu");
  EXPECT_EQ(relu.processor, "cpu:accel");
  EXPECT_TRUE(relu.fused_with_previous);
  EXPECT_EQ(relu.reason, PlacementReason::fused_with_previous);
  EXPECT_DOUBLE_EQ(relu.terms.transfer_us, 2);
  EXPECT_DOUBLE_EQ(relu.cost_us, 7);
  EXPECT_DOUBLE_EQ(relu.benefit_us, 8);
  // Placement is advisory: the model still runs on the executor's device.
  const auto outputs = executor.submit("matmul_relu", random_inputs(matmul_relu(), 3)).get();
  EXPECT_EQ(outputs.size(), 1u);
}

// The shape chain of a flatten is folded on the CPU at load: three scalar entries after the
// loaded graph's two nodes; the Reshape takes the folded shape as a kernel argument.
TEST(PlacementLoad, FoldedShapeChainIsReportedAsScalarWorkOnTheCpu) {
  Model m;
  m.name = "flatten";
  m.inputs = {ValueInfo{"x", DType::f32, Shape{2, 3, 4}, {}}};
  m.initializers["first"] = Tensor::from<std::int64_t>(Shape{1}, {0});
  m.initializers["rest"] = Tensor::from<std::int64_t>(Shape{1}, {-1});
  m.nodes = {Node{"Shape", "shape", {"x"}, {"s"}, {}},
             Node{"Gather", "gather", {"s", "first"}, {"batch"}, {{"axis", std::int64_t{0}}}},
             Node{"Concat", "concat", {"batch", "rest"}, {"target"}, {{"axis", std::int64_t{0}}}},
             Node{"Reshape", "reshape", {"x", "target"}, {"flat"}, {}},
             Node{"Identity", "keep", {"flat"}, {"kept"}, {}},
             Node{"Relu", "relu", {"kept"}, {"y"}, {}}};
  m.outputs = {"y"};
  Executor executor(cpu_executor("defaults"));
  executor.load(m);
  const ModelInfo info = executor.model_info("flatten");
  const ModelPlacement& placement = info.placement;
  EXPECT_EQ(placement.library, "built-in defaults");
  EXPECT_EQ(placement.processors, (std::vector<std::string>{"cpu", "cpu:accel"}));
  ASSERT_EQ(placement.graph_nodes, 2u);
  ASSERT_EQ(placement.nodes.size(), 6u);
  EXPECT_EQ(placement.nodes[0].node, "reshape");
  EXPECT_EQ(placement.nodes[0].scalar_arguments, std::vector<std::string>{"target"});
  EXPECT_EQ(placement.nodes[1].node, "relu");
  for (std::size_t i = 2; i < 5; ++i) {
    SCOPED_TRACE(placement.nodes[i].node);
    EXPECT_EQ(placement.nodes[i].work_class, WorkClass::scalar);
    EXPECT_EQ(placement.nodes[i].processor, "cpu");
    EXPECT_EQ(placement.nodes[i].reason, PlacementReason::folded_at_load);
  }
  EXPECT_EQ(placement.nodes[5].node, "keep");
  EXPECT_EQ(placement.nodes[5].processor, "none");
  EXPECT_EQ(placement.nodes[5].reason, PlacementReason::removed_at_load);

  // The report: one object per entry, each with a processor and figures.
  const auto doc = nlohmann::json::parse(placement_report_json(info));
  EXPECT_EQ(doc["model"], "flatten");
  EXPECT_TRUE(doc["thresholds"]["cost_us"].is_null());  // th2 unbounded by default
  ASSERT_EQ(doc["nodes"].size(), 6u);
  EXPECT_EQ(doc["summary"]["by_class"]["scalar"], 3);
  for (const auto& node : doc["nodes"]) {
    EXPECT_FALSE(node["processor"].get<std::string>().empty());
    EXPECT_TRUE(node["cost_us"].is_number());
    EXPECT_TRUE(node["terms"]["t_us"].is_number());
  }
  EXPECT_EQ(doc["nodes"][0]["evaluated"].size(), 2u);
  EXPECT_EQ(doc["nodes"][2]["reason"], "folded_at_load");
}

TEST(PlacementLoad, BadSettingsAreRefusedAndTheTurnedOffPassRecordsNothing) {
  Executor executor(cpu_executor("defaults"));
  LoadOptions load;
  load.name = "a";
  load.placement.processors = {"tpu"};
  expect_error([&] { executor.load(matmul_relu(), load); }, ErrorCode::invalid_argument,
               {"load 'a'", "processor 'tpu'", "available: "});
  load.placement.processors = {"cpu", "cpu"};
  expect_error([&] { executor.load(matmul_relu(), load); }, ErrorCode::invalid_argument, {"listed twice"});
  load.placement.processors.clear();
  load.placement.enabled = false;
  executor.load(matmul_relu(), load);
  const ModelInfo info = executor.model_info("a");
  EXPECT_FALSE(info.placement.enabled);
  EXPECT_TRUE(info.placement.nodes.empty());
  expect_error([&] { placement_report_json(info); }, ErrorCode::invalid_argument, {"no placement"});
  expect_error([] { Executor bad(cpu_executor("/nonexistent/library.json")); }, ErrorCode::invalid_argument,
               {"function library '/nonexistent/library.json'"});
}
