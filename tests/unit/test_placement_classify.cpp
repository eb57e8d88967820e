// Classification (graph::passes::classify_work): tensor and scalar work on small hand-built graphs,
// and the classes optimize() reports for what it folds and removes.
#include <gtest/gtest.h>

#include "control_flow_models.hpp"
#include "graph/passes/passes.hpp"
#include "loom/model.hpp"

using namespace loom;
using graph::passes::classify_work;
using graph::passes::NodeWork;

namespace {

Tensor i64s(Shape shape, std::vector<std::int64_t> values) {
  return Tensor::from<std::int64_t>(std::move(shape), values);
}

// y = Relu(Reshape(x, Concat(Gather(Shape(x), [0]), [-1]))): the shape chain of a flatten, not
// folded yet (so the Reshape's shape is computed by nodes, as an exported model has it).
Model shape_chain_model() {
  Model m;
  m.name = "shape_chain";
  m.inputs = {ValueInfo{"x", DType::f32, Shape{2, 3, 4}, {}}};
  m.initializers["first"] = i64s(Shape{1}, {0});
  m.initializers["rest"] = i64s(Shape{1}, {-1});
  m.nodes = {Node{"Shape", "shape", {"x"}, {"s"}, {}},
             Node{"Gather", "gather", {"s", "first"}, {"batch"}, {{"axis", std::int64_t{0}}}},
             Node{"Concat", "concat", {"batch", "rest"}, {"target"}, {{"axis", std::int64_t{0}}}},
             Node{"Reshape", "reshape", {"x", "target"}, {"flat"}, {}}, Node{"Relu", "relu", {"flat"}, {"y"}, {}}};
  m.outputs = {"y"};
  return m;
}

}  // namespace

// Shape reads only metadata; Gather and Concat compute on its output and small constants (index
// math); Reshape moves the tensor, taking the Concat's result as a kernel argument.
TEST(PlacementClassify, ShapeChainIsScalarWorkAndFeedsTheReshapeAsAnArgument) {
  const std::vector<NodeWork> work = classify_work(shape_chain_model());
  ASSERT_EQ(work.size(), 5u);
  EXPECT_EQ(work[0].work_class, WorkClass::scalar);
  EXPECT_EQ(work[0].rule, "shape metadata");
  EXPECT_EQ(work[1].work_class, WorkClass::scalar);
  EXPECT_EQ(work[1].rule, "index math on scalar values");
  EXPECT_EQ(work[2].work_class, WorkClass::scalar);
  EXPECT_EQ(work[3].work_class, WorkClass::tensor);
  EXPECT_EQ(work[3].scalar_arguments, std::vector<std::string>{"target"});
  EXPECT_EQ(work[4].work_class, WorkClass::tensor);
  EXPECT_TRUE(work[4].scalar_arguments.empty());
}

TEST(PlacementClassify, ConvolutionAndMatrixProductAreTensorWork) {
  ModelBuilder b("tensor_ops");
  const auto x = b.input("x", DType::f32, Shape{1, 3, 8, 8});
  const auto conv = b.conv2d(x, 3, 4, 3, 1, 1);
  const auto flat = b.reshape(conv, {1, 256});
  const auto product = b.op("MatMul", {flat, b.random_weight("w", Shape{256, 10}, 0.1f)});
  b.output(product);
  const Model model = b.build();
  const auto work = classify_work(model);
  for (std::size_t n = 0; n < model.nodes.size(); ++n)
    EXPECT_EQ(work[n].work_class, WorkClass::tensor) << model.nodes[n].op_type;
}

// A Loop whose trip count is the length of n's first axis: Shape and the Gather of that length
// are scalar work, and the Loop takes the count as an argument (its body is tensor work).
TEST(PlacementClassify, LoopTripCountIsScalarWork) {
  using namespace loom::control_flow_models;
  Model m = loop_model();
  m.initializers.erase("M");
  m.inputs.push_back(ValueInfo{"n", DType::f32, Shape{4, 3}, {}});
  m.initializers["zero"] = i64_scalar(0);
  m.nodes.insert(m.nodes.begin(), {Node{"Shape", "shape_n", {"n"}, {"n_shape"}, {}},
                                   Node{"Gather", "count", {"n_shape", "zero"}, {"M"}, {{"axis", std::int64_t{0}}}}});
  const auto work = classify_work(m);
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0].work_class, WorkClass::scalar);
  EXPECT_EQ(work[1].work_class, WorkClass::scalar);
  EXPECT_EQ(m.nodes[2].op_type, "Loop");
  EXPECT_EQ(work[2].work_class, WorkClass::tensor);
  ASSERT_FALSE(work[2].scalar_arguments.empty());
  EXPECT_EQ(work[2].scalar_arguments.front(), "M");
}

// k comes with the request; k + 1 is read only as TopK's K: computing it is scalar work (it feeds
// a shape-deciding input), although it starts from a request input rather than from a shape.
TEST(PlacementClassify, WhatOnlyFeedsShapeInputsIsScalarWork) {
  Model m;
  m.name = "topk";
  m.inputs = {ValueInfo{"x", DType::f32, Shape{1, 16}, {}}, ValueInfo{"k", DType::i64, Shape{1}, {}}};
  m.initializers["one"] = i64s(Shape{1}, {1});
  m.nodes = {Node{"Add", "k_plus_one", {"k", "one"}, {"k1"}, {}},
             Node{"TopK", "topk", {"x", "k1"}, {"values", "indices"}, {}}};
  m.outputs = {"values", "indices"};
  const auto work = classify_work(m);
  EXPECT_EQ(work[0].work_class, WorkClass::scalar);
  EXPECT_EQ(work[0].rule, "computes shape or control inputs");
  EXPECT_EQ(work[1].work_class, WorkClass::tensor);
  EXPECT_EQ(work[1].scalar_arguments, std::vector<std::string>{"k1"});
}

// A small integer mask on the data path (it becomes a float tensor the model computes with) is
// tensor work, small as it is: it is neither computed from shapes nor read as an argument.
TEST(PlacementClassify, SmallIntegerDataOnTheTensorPathStaysTensorWork) {
  Model m;
  m.name = "mask";
  m.inputs = {ValueInfo{"mask", DType::i64, Shape{2, 16}, {}}, ValueInfo{"x", DType::f32, Shape{2, 16}, {}}};
  m.initializers["axes"] = i64s(Shape{1}, {1});
  m.nodes = {Node{"Unsqueeze", "unsqueeze", {"mask", "axes"}, {"m4"}, {}},
             Node{"Cast", "cast", {"m4"}, {"mf"}, {{"to", std::int64_t{1}}}},
             Node{"Reshape", "flat", {"x", "shape"}, {"x4"}, {}}, Node{"Mul", "apply", {"x4", "mf"}, {"y"}, {}}};
  m.initializers["shape"] = i64s(Shape{3}, {2, 1, 16});
  m.outputs = {"y"};
  const auto work = classify_work(m);
  for (std::size_t n = 0; n < m.nodes.size(); ++n) EXPECT_EQ(work[n].work_class, WorkClass::tensor) << m.nodes[n].name;
}

// optimize() folds the chain on the host and says so, with each folded node's class.
TEST(PlacementClassify, OptimizeReportsTheFoldedShapeChainAsScalarWork) {
  OptimizeReport report;
  const Model optimized = optimize(shape_chain_model(), {}, &report);
  ASSERT_EQ(report.folded.size(), 3u);
  EXPECT_EQ(report.folded[0].name, "shape");
  EXPECT_EQ(report.folded[1].name, "gather");
  EXPECT_EQ(report.folded[2].name, "concat");
  for (const auto& folded : report.folded) EXPECT_EQ(folded.work_class, WorkClass::scalar) << folded.name;
  EXPECT_TRUE(report.removed.empty());
  ASSERT_EQ(optimized.nodes.size(), 2u);  // Reshape and Relu
}
