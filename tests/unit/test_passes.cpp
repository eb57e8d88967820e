// optimize(): binding symbolic dimensions, host folding of shape computations, BatchNorm fused
// into Conv, no-op and dead-code removal. Numerical checks compare the optimized model with the
// same model run without the passes, or with values computed here.
#include <gtest/gtest.h>

#include <cmath>

#include "core/random.hpp"
#include "loom/executor.hpp"
#include "loom/model.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::code_of;

namespace {

std::size_t count_ops(const Model& model, const std::string& op) {
  std::size_t n = 0;
  for (const auto& node : model.nodes) n += node.op_type == op;
  return n;
}

// Makes input `index` symbolic along `axis` under `name`, as the ONNX importer does.
void make_symbolic(Model& model, std::size_t index, std::size_t axis, const std::string& name) {
  auto& input = model.inputs.at(index);
  auto dims = input.shape.dims();
  dims[axis] = -1;
  input.shape = Shape(dims);
  input.dim_params.resize(dims.size());
  input.dim_params[axis] = name;
}

Outputs run_cpu(const Model& model, std::vector<Tensor> inputs, OptimizeOptions optimize = {}) {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  Executor executor(options);
  LoadOptions load;
  load.optimize = std::move(optimize);
  executor.load(model, load);
  return executor.submit(model.name, std::move(inputs)).get();
}

// x [B, 6] → Reshape(Relu(x), Concat(Gather(Shape(x), [0]), [2, 3])) → [B, 2, 3]: the shape chain
// exported models compute, which must fold to one constant. Assembled by hand: ModelBuilder::build()
// checks shapes with infer_shapes(), which needs the folded form.
Model reshape_by_shape_chain() {
  Model model;
  model.name = "shape_chain";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{4, 6}, {}}};
  model.initializers["zero"] = Tensor::from<std::int64_t>(Shape{1}, {0});
  model.initializers["rest"] = Tensor::from<std::int64_t>(Shape{2}, {2, 3});
  model.nodes = {
      Node{"Shape", "shape", {"x"}, {"dims"}, {}},
      Node{"Gather", "batch", {"dims", "zero"}, {"b"}, {}},
      Node{"Concat", "target", {"b", "rest"}, {"t"}, {{"axis", std::int64_t{0}}}},
      Node{"Relu", "relu", {"x"}, {"r"}, {}},
      Node{"Reshape", "reshape", {"r", "t"}, {"y"}, {}},
  };
  model.outputs = {"y"};
  return model;
}

}  // namespace

TEST(Optimize, BindsSymbolicDimensionsByNameShapeOrDefault) {
  ModelBuilder mb("two_inputs");
  auto a = mb.input("a", DType::f32, Shape{2, 5});
  auto b = mb.input("b", DType::f32, Shape{2, 5});
  mb.output(mb.add(a, b));
  Model model = mb.build();
  make_symbolic(model, 0, 0, "batch");
  make_symbolic(model, 1, 0, "batch");
  EXPECT_TRUE(has_symbolic_dims(model));

  OptimizeOptions by_name;
  by_name.dim_values["batch"] = 3;
  OptimizeReport report;
  Model bound = optimize(model, by_name, &report);
  EXPECT_FALSE(has_symbolic_dims(bound));
  EXPECT_EQ(bound.inputs[0].shape, (Shape{3, 5}));
  EXPECT_EQ(bound.inputs[1].shape, (Shape{3, 5}));
  EXPECT_TRUE(bound.inputs[0].dim_params.empty());
  EXPECT_EQ(report.bound_inputs.at("b"), (Shape{3, 5}));

  // A shape for one input binds "batch" for the other too.
  OptimizeOptions by_shape;
  by_shape.input_shapes["a"] = Shape{7, 5};
  EXPECT_EQ(optimize(model, by_shape).inputs[1].shape, (Shape{7, 5}));

  EXPECT_EQ(optimize(model).inputs[0].shape, (Shape{1, 5}));  // default_dim_value

  OptimizeOptions strict;
  strict.default_dim_value = 0;
  try {
    optimize(model, strict);
    FAIL() << "an unbound symbolic dimension must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'batch'"), std::string::npos) << e.what();
  }
}

TEST(Optimize, RejectsBindingsThatContradictTheModel) {
  ModelBuilder mb("two_inputs");
  auto a = mb.input("a", DType::f32, Shape{2, 5});
  auto b = mb.input("b", DType::f32, Shape{2, 5});
  mb.output(mb.add(a, b));
  Model model = mb.build();
  make_symbolic(model, 0, 0, "batch");
  make_symbolic(model, 1, 0, "batch");

  OptimizeOptions fixed_dim;
  fixed_dim.input_shapes["a"] = Shape{2, 6};  // axis 1 is fixed at 5
  EXPECT_EQ(code_of([&] { optimize(model, fixed_dim); }), ErrorCode::invalid_argument);

  OptimizeOptions disagree;
  disagree.input_shapes["a"] = Shape{2, 5};
  disagree.input_shapes["b"] = Shape{3, 5};
  try {
    optimize(model, disagree);
    FAIL() << "inputs sharing 'batch' with different sizes must be an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("'batch' is 2 in input 'a' but 3 in input 'b'"), std::string::npos)
        << e.what();
  }

  OptimizeOptions unknown;
  unknown.input_shapes["c"] = Shape{1};
  EXPECT_EQ(code_of([&] { optimize(model, unknown); }), ErrorCode::invalid_argument);
  OptimizeOptions rank;
  rank.input_shapes["a"] = Shape{2, 5, 1};
  EXPECT_EQ(code_of([&] { optimize(model, rank); }), ErrorCode::invalid_argument);
}

// Size, like Shape, needs only its input's shape: it folds even when the input is request data.
TEST(Optimize, FoldsSizeOfRequestData) {
  Model model;
  model.name = "size";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{4, 6}, {}}};
  model.nodes = {
      Node{"Size", "size", {"x"}, {"n"}, {}},
      Node{"Cast", "cast", {"n"}, {"nf"}, {{"to", std::int64_t{1}}}},
      Node{"Mul", "scale", {"x", "nf"}, {"y"}, {}},
  };
  model.outputs = {"y"};
  OptimizeReport report;
  const Model optimized = optimize(model, {}, &report);
  EXPECT_EQ(count_ops(optimized, "Size") + count_ops(optimized, "Cast"), 0u);
  ASSERT_EQ(optimized.nodes.size(), 1u);
  const Tensor& factor = optimized.initializers.at(optimized.nodes[0].inputs[1]);
  ASSERT_EQ(factor.dtype(), DType::f32);
  EXPECT_EQ(factor.values<float>()[0], 24.0f);
}

TEST(Optimize, ShapeChainsFoldOnTheHostIntoOneConstant) {
  Model model = reshape_by_shape_chain();
  make_symbolic(model, 0, 0, "batch");
  OptimizeOptions options;
  options.dim_values["batch"] = 3;
  OptimizeReport report;
  const Model optimized = optimize(model, options, &report);
  // Left: Relu and Reshape; Shape, Gather and Concat ran once on the host.
  EXPECT_EQ(optimized.nodes.size(), 2u);
  EXPECT_EQ(count_ops(optimized, "Shape") + count_ops(optimized, "Gather") + count_ops(optimized, "Concat"), 0u);
  EXPECT_EQ(report.folded_nodes, 3u);
  const Node& reshape = optimized.nodes.back();
  ASSERT_EQ(reshape.op_type, "Reshape");
  const Tensor& target = optimized.initializers.at(reshape.inputs[1]);
  ASSERT_EQ(target.dtype(), DType::i64);
  EXPECT_EQ(std::vector<std::int64_t>(target.values<std::int64_t>().begin(), target.values<std::int64_t>().end()),
            (std::vector<std::int64_t>{3, 2, 3}));
  // The folded initializers the Reshape does not read are gone.
  EXPECT_EQ(optimized.initializers.size(), 1u);
  EXPECT_EQ(infer_shapes(optimized).at(optimized.outputs[0]).shape, (Shape{3, 2, 3}));

  SplitMix64 rng(3);
  Tensor x(DType::f32, Shape{3, 6});
  for (auto& v : x.values<float>()) v = rng.uniform(-1, 1);
  const Outputs out = run_cpu(model, {x}, options);
  ASSERT_EQ(out[0].shape(), (Shape{3, 2, 3}));
  for (std::size_t i = 0; i < 18; ++i) EXPECT_EQ(out[0].values<float>()[i], std::max(x.values<float>()[i], 0.0f));
}

TEST(Optimize, ConstantInputsBecomeInitializers) {
  // The shape is a graph input, as in the ONNX node tests; ModelBuilder::build() would reject it.
  Model model;
  model.name = "reshape_input";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{2, 6}, {}}, ValueInfo{"shape", DType::i64, Shape{2}, {}}};
  model.nodes = {Node{"Reshape", "r", {"x", "shape"}, {"y"}, {}}};
  model.outputs = {"y"};
  EXPECT_EQ(code_of([&] { optimize(model); }), ErrorCode::unsupported);

  OptimizeOptions options;
  options.constant_inputs["shape"] = Tensor::from<std::int64_t>(Shape{2}, {3, -1});
  const Model optimized = optimize(model, options);
  ASSERT_EQ(optimized.inputs.size(), 1u);
  EXPECT_EQ(optimized.inputs[0].name, "x");
  EXPECT_EQ(infer_shapes(optimized).at("y").shape, (Shape{3, 4}));

  options.constant_inputs["shape"] = Tensor::from<std::int32_t>(Shape{2}, {3, -1});
  EXPECT_EQ(code_of([&] { optimize(model, options); }), ErrorCode::invalid_argument);  // dtype differs
}

TEST(Optimize, BatchNormFoldsIntoTheConvBeforeIt) {
  ModelBuilder mb("conv_bn", 11);
  auto x = mb.input("x", DType::f32, Shape{2, 3, 8, 8});
  auto c = mb.conv2d(x, 3, 4, 3, 1, 1, /*bias=*/true);
  auto y = mb.relu(mb.batch_norm(c, 4));
  auto c2 = mb.conv2d(y, 4, 2, 1, 1, 0, /*bias=*/false);
  mb.output(mb.batch_norm(c2, 2));
  const Model model = mb.build();

  OptimizeReport report;
  const Model fused = optimize(model, {}, &report);
  EXPECT_EQ(report.fused_batch_norms, 2u);
  EXPECT_EQ(count_ops(fused, "BatchNormalization"), 0u);
  EXPECT_EQ(count_ops(fused, "Conv"), 2u);

  SplitMix64 rng(5);
  Tensor input(DType::f32, Shape{2, 3, 8, 8});
  for (auto& v : input.values<float>()) v = rng.uniform(-1, 1);
  OptimizeOptions unfused;
  unfused.fuse_batch_norm = false;
  const Outputs reference = run_cpu(model, {input}, unfused);
  const Outputs actual = run_cpu(model, {input});
  ASSERT_EQ(actual[0].shape(), reference[0].shape());
  for (std::size_t i = 0; i < static_cast<std::size_t>(actual[0].numel()); ++i) {
    const float r = reference[0].values<float>()[i];
    EXPECT_NEAR(actual[0].values<float>()[i], r, 1e-5f + 1e-5f * std::fabs(r)) << "element " << i;
  }
}

TEST(Optimize, BatchNormAfterASharedConvOutputStays) {
  ModelBuilder mb("conv_bn_shared", 12);
  auto x = mb.input("x", DType::f32, Shape{1, 2, 4, 4});
  auto c = mb.conv2d(x, 2, 2, 1, 1, 0);
  mb.output(mb.add(mb.batch_norm(c, 2), c));  // the Conv output has a second reader
  const Model fused = optimize(mb.build());
  EXPECT_EQ(count_ops(fused, "BatchNormalization"), 1u);
}

TEST(Optimize, DeadNodesNoOpsAndUnusedWeightsAreDropped) {
  Model model;
  model.name = "dead";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{2, 3}, {}}};
  model.initializers["unused"] = Tensor(DType::f32, Shape{100});
  model.initializers["w"] = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  model.nodes = {
      Node{"Identity", "id", {"x"}, {"x1"}, {}},           Node{"Dropout", "drop", {"x1"}, {"x2"}, {}},
      Node{"Relu", "dangling", {"x"}, {"never_read"}, {}}, Node{"Add", "add", {"x2", "w"}, {"sum"}, {}},
      Node{"Identity", "out_id", {"sum"}, {"y"}, {}},  // produces a graph output: kept
  };
  model.outputs = {"y"};
  OptimizeReport report;
  const Model optimized = optimize(model, {}, &report);
  ASSERT_EQ(optimized.nodes.size(), 2u);
  EXPECT_EQ(optimized.nodes[0].op_type, "Add");
  EXPECT_EQ(optimized.nodes[0].inputs[0], "x");
  EXPECT_EQ(optimized.nodes[1].name, "out_id");
  EXPECT_EQ(optimized.initializers.count("unused"), 0u);
  EXPECT_EQ(report.removed_nodes, 3u);
  EXPECT_EQ(report.nodes_before, 5u);
  EXPECT_EQ(report.nodes_after, 2u);

  const Outputs out = run_cpu(model, {Tensor::from<float>(Shape{2, 3}, {1, 1, 1, -1, -1, -1})});
  EXPECT_EQ(std::vector<float>(out[0].values<float>().begin(), out[0].values<float>().end()),
            (std::vector<float>{2, 3, 4, 3, 4, 5}));
}

TEST(Optimize, ErrorsNameTheSourceFileNodeAndOp) {
  Model model;
  model.name = "bad";
  model.metadata["source"] = "/models/bad.onnx";
  model.inputs = {ValueInfo{"x", DType::f32, Shape{2, 3}, {}}};
  model.initializers["shape"] = Tensor::from<std::int64_t>(Shape{1}, {7});
  model.nodes = {Node{"Reshape", "to_seven", {"x", "shape"}, {"y"}, {}}};
  model.outputs = {"y"};
  try {
    optimize(model);
    FAIL() << "reshaping 6 elements to 7 must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    const std::string what = e.what();
    EXPECT_NE(what.find("/models/bad.onnx"), std::string::npos) << what;
    EXPECT_NE(what.find("'to_seven' (Reshape)"), std::string::npos) << what;
  }
}

TEST(Optimize, ExecutorLoadBindsShapesFromLoadOptions) {
  Model model = reshape_by_shape_chain();
  make_symbolic(model, 0, 0, "batch");
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  Executor executor(options);
  LoadOptions load;
  load.name = "chain";
  load.optimize.dim_values["batch"] = 5;
  executor.load(model, load);
  const ModelInfo info = executor.model_info("chain");
  EXPECT_EQ(info.inputs[0].shape, (Shape{5, 6}));
  EXPECT_EQ(info.outputs[0].shape, (Shape{5, 2, 3}));
  EXPECT_EQ(info.steps.size(), 1u);  // Relu and the Reshape view: one Step, no shape work
  // Requests are checked against the bound shape.
  EXPECT_EQ(code_of([&] { executor.submit("chain", {Tensor(DType::f32, Shape{4, 6})}); }), ErrorCode::shape_mismatch);
}
