// CPU backend and shape inference: the shape family beyond layout (Slice, Split, Expand, Tile,
// Squeeze, Unsqueeze, Identity, Dropout, Shape, Constant, ConstantOfShape, Range), against hand
// values and naive index loops, in f32, i64 and bool.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

using Ints = std::vector<std::int64_t>;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();

Tensor iota_f32(const Shape& shape, float start = 0.0f) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  std::iota(values.begin(), values.end(), start);
  return Tensor::from<float>(shape, values);
}

Tensor iota_i64(const Shape& shape, std::int64_t start = 0) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(shape.numel()));
  std::iota(values.begin(), values.end(), start);
  return Tensor::from<std::int64_t>(shape, values);
}

// 1, 0, 0, 1, 0, 0, ...: a bool pattern where a misplaced element shows.
Tensor pattern_bool(const Shape& shape) {
  std::vector<std::uint8_t> values(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = i % 3 == 0 ? 1 : 0;
  return Tensor::from<std::uint8_t>(shape, values);
}

Tensor ints(Ints values) { return Tensor::from<std::int64_t>(Shape{static_cast<std::int64_t>(values.size())}, values); }
OpInput constant(Ints values) { return OpInput::initializer(ints(std::move(values))); }

// The message of the error kernel creation throws, or "" when it succeeds.
std::string create_message(const std::string& op, Attributes attrs, const std::vector<OpInput>& inputs,
                           const std::vector<OpOutput>& outputs) {
  try {
    (void)run_cpu_op(op, std::move(attrs), inputs, outputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A one-node model: `inputs` are graph inputs unless a value is given (then initializers).
struct NodeInput {
  std::string name;
  DType dtype;
  Shape shape;
  std::optional<Tensor> value;
};

Model one_node(const std::string& op, const std::vector<NodeInput>& inputs, Attributes attrs, int outputs = 1) {
  Model m;
  m.name = "one_" + op;
  Node node;
  node.op_type = op;
  node.name = "n";
  node.attrs = std::move(attrs);
  for (const NodeInput& in : inputs) {
    node.inputs.push_back(in.name);
    if (in.name.empty()) continue;
    if (in.value)
      m.initializers[in.name] = *in.value;
    else
      m.inputs.push_back(ValueInfo{in.name, in.dtype, in.shape, {}});
  }
  for (int i = 0; i < outputs; ++i) {
    node.outputs.push_back("y" + std::to_string(i));
    m.outputs.push_back("y" + std::to_string(i));
  }
  m.nodes.push_back(node);
  return m;
}

NodeInput data(DType dtype, Shape shape) { return {"x", dtype, std::move(shape), std::nullopt}; }
NodeInput init(const std::string& name, Tensor value) { return {name, value.dtype(), value.shape(), std::move(value)}; }

Shape inferred(const Model& m, int output = 0) { return infer_shapes(m).at("y" + std::to_string(output)).shape; }

// The message infer_shapes throws for `m`, or "".
std::string infer_message(const Model& m) {
  try {
    (void)infer_shapes(m);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CpuShapeOps, SliceNegativeStepsAndClamping) {
  const Tensor x = iota_f32(Shape{10});
  // From the last element down to "minus infinity", every third: 9, 6, 3, 0.
  EXPECT_TRUE(all_close(
      run_cpu_op1("Slice", {}, {x, constant({-1}), constant({kMin}), constant({0}), constant({-3})}, Shape{4}),
      {9, 6, 3, 0}, 0, 0));
  // A start past the end clamps to the last element for a negative step; an end far below clamps to -1.
  EXPECT_TRUE(all_close(
      run_cpu_op1("Slice", {}, {x, constant({100}), constant({-100}), constant({0}), constant({-2})}, Shape{5}),
      {9, 7, 5, 3, 1}, 0, 0));
  // A start far below clamps to 0; INT64_MAX as end means "to the end".
  EXPECT_TRUE(all_close(
      run_cpu_op1("Slice", {}, {x, constant({-100}), constant({kMax}), constant({0}), constant({4})}, Shape{3}),
      {0, 4, 8}, 0, 0));
  // Start and end both past the end: empty.
  EXPECT_EQ(run_cpu_op1("Slice", {}, {x, constant({1000}), constant({1000})}, Shape{0}).numel(), 0);
  // Negative start and end, default axes and steps.
  EXPECT_TRUE(all_close(run_cpu_op1("Slice", {}, {x, constant({-4}), constant({-1})}, Shape{3}), {6, 7, 8}, 0, 0));
}

TEST(CpuShapeOps, SliceTwoAxesNegativeAxisAndDtypes) {
  // x[r][c] = 4r + c on [3, 4]; rows 0..1, columns 3, 2, 1.
  const std::vector<OpInput> slice_inputs = {constant({3, 0}), constant({0, 2}), constant({-1, 0}), constant({-1, 1})};
  std::vector<OpInput> f32_inputs = {iota_f32(Shape{3, 4})};
  f32_inputs.insert(f32_inputs.end(), slice_inputs.begin(), slice_inputs.end());
  EXPECT_TRUE(all_close(run_cpu_op1("Slice", {}, f32_inputs, Shape{2, 3}), {3, 2, 1, 7, 6, 5}, 0, 0));

  std::vector<OpInput> i64_inputs = {iota_i64(Shape{3, 4}, 100)};
  i64_inputs.insert(i64_inputs.end(), slice_inputs.begin(), slice_inputs.end());
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Slice", {}, i64_inputs, Shape{2, 3}, DType::i64),
                                      {103, 102, 101, 107, 106, 105}));

  // Bool, middle axis of [2, 3, 2], a naive loop as reference.
  const Tensor b = pattern_bool(Shape{2, 3, 2});
  const Tensor y = run_cpu_op1("Slice", {}, {b, constant({2}), constant({kMin}), constant({1}), constant({-2})},
                               Shape{2, 2, 2}, DType::boolean);
  std::vector<std::uint8_t> expected;
  for (int i = 0; i < 2; ++i)
    for (int j : {2, 0})
      for (int k = 0; k < 2; ++k) expected.push_back(b.values<std::uint8_t>()[(i * 3 + j) * 2 + k]);
  EXPECT_TRUE(all_equal<std::uint8_t>(y, expected));

  // i32 starts/ends work like i64.
  const Tensor starts32 = Tensor::from<std::int32_t>(Shape{1}, {1});
  const Tensor ends32 = Tensor::from<std::int32_t>(Shape{1}, {3});
  EXPECT_TRUE(all_close(
      run_cpu_op1("Slice", {}, {iota_f32(Shape{5}), OpInput::initializer(starts32), OpInput::initializer(ends32)},
                  Shape{2}),
      {1, 2}, 0, 0));
}

TEST(CpuShapeOps, SliceErrorsNameTheOp) {
  const Tensor x = iota_f32(Shape{4, 4});
  // starts not known when the kernel is made.
  const std::string runtime_starts =
      create_message("Slice", {}, {x, ints({0}), constant({2})}, {{DType::f32, Shape{2, 4}}});
  EXPECT_NE(runtime_starts.find("Slice node 'test_Slice'"), std::string::npos) << runtime_starts;
  EXPECT_NE(runtime_starts.find("starts"), std::string::npos) << runtime_starts;
  EXPECT_EQ(create_error("Slice", {}, {x, ints({0}), constant({2})}, {{DType::f32, Shape{2, 4}}}),
            ErrorCode::unsupported);
  // The same axis twice, an axis out of range, a zero step.
  EXPECT_EQ(create_error("Slice", {}, {x, constant({0, 0}), constant({2, 2}), constant({1, -1})},
                         {{DType::f32, Shape{4, 2}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Slice", {}, {x, constant({0}), constant({2}), constant({2})}, {{DType::f32, Shape{4, 2}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Slice", {}, {x, constant({0}), constant({2}), constant({0}), constant({0})},
                         {{DType::f32, Shape{2, 4}}}),
            ErrorCode::shape_mismatch);
  // A planner shape that disagrees with the constants.
  EXPECT_EQ(create_error("Slice", {}, {x, constant({0}), constant({2})}, {{DType::f32, Shape{3, 4}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, SplitUnevenEqualAndAbsent) {
  // [2, 5] split along axis 1 into 2 + 3.
  const Tensor x = iota_f32(Shape{2, 5});
  const OpResult parts = run_cpu_op("Split", {{"axis", std::int64_t{-1}}}, {x, constant({2, 3})},
                                    {{DType::f32, Shape{2, 2}}, {DType::f32, Shape{2, 3}}});
  EXPECT_TRUE(all_close(parts[0], {0, 1, 5, 6}, 0, 0));
  EXPECT_TRUE(all_close(parts[1], {2, 3, 4, 7, 8, 9}, 0, 0));
  // Without the split input the output shapes decide; i64 data, axis 0, three equal parts.
  const OpResult thirds = run_cpu_op("Split", {}, {iota_i64(Shape{6, 1})},
                                     {{DType::i64, Shape{2, 1}}, {DType::i64, Shape{2, 1}}, {DType::i64, Shape{2, 1}}});
  EXPECT_TRUE(all_equal<std::int64_t>(thirds[0], {0, 1}));
  EXPECT_TRUE(all_equal<std::int64_t>(thirds[1], {2, 3}));
  EXPECT_TRUE(all_equal<std::int64_t>(thirds[2], {4, 5}));
  // An absent output and a zero-size part, bool data.
  const Tensor b = pattern_bool(Shape{4});
  const OpResult some = run_cpu_op("Split", {}, {b, constant({1, 0, 3})},
                                   {OpOutput::absent(), {DType::boolean, Shape{0}}, {DType::boolean, Shape{3}}});
  EXPECT_EQ(some[1].numel(), 0);
  EXPECT_TRUE(all_equal<std::uint8_t>(some[2], {0, 0, 1}));
  // Sizes that do not add up.
  EXPECT_EQ(create_error("Split", {}, {x, constant({2, 2})}, {{DType::f32, Shape{1, 5}}, {DType::f32, Shape{1, 5}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, ExpandBidirectional) {
  // [3, 1] to shape [2, 1, 4]: the result is [2, 3, 4] with y[i][j][k] = x[j].
  const Tensor x = Tensor::from<float>(Shape{3, 1}, {1, 2, 3});
  const Tensor y = run_cpu_op1("Expand", {}, {x, constant({2, 1, 4})}, Shape{2, 3, 4});
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) expected.push_back(j + 1);
  EXPECT_TRUE(all_close(y, expected, 0, 0));
  // A shape of lower rank than the input ([2, 1] with shape [3]): [2, 3], y[i][k] = x[i].
  const Tensor ids = Tensor::from<std::int64_t>(Shape{2, 1}, {7, -7});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Expand", {}, {ids, constant({3})}, Shape{2, 3}, DType::i64),
                                      {7, 7, 7, -7, -7, -7}));
  // Bool row broadcast down the first axis.
  const Tensor row = Tensor::from<std::uint8_t>(Shape{3}, {1, 0, 1});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Expand", {}, {row, constant({2, 1})}, Shape{2, 3}, DType::boolean),
                                      {1, 0, 1, 1, 0, 1}));
  EXPECT_EQ(create_error("Expand", {}, {x, constant({2, 4})}, {{DType::f32, Shape{3, 4}}}), ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, Tile) {
  // y[i][j] = x[i % 2][j % 3] on [4, 6].
  const Tensor x = iota_f32(Shape{2, 3}, 1);
  const Tensor y = run_cpu_op1("Tile", {}, {x, constant({2, 2})}, Shape{4, 6});
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) expected.push_back(x.values<float>()[(i % 2) * 3 + j % 3]);
  EXPECT_TRUE(all_close(y, expected, 0, 0));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("Tile", {}, {iota_i64(Shape{2}), constant({3})}, Shape{6}, DType::i64), {0, 1, 0, 1, 0, 1}));
  EXPECT_TRUE(all_equal<std::uint8_t>(
      run_cpu_op1("Tile", {}, {pattern_bool(Shape{2, 2}), constant({1, 2})}, Shape{2, 4}, DType::boolean),
      {1, 0, 1, 0, 0, 1, 0, 1}));
  EXPECT_EQ(create_error("Tile", {}, {x, constant({2})}, {{DType::f32, Shape{4, 3}}}), ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, SqueezeUnsqueezeIdentityCopyBytes) {
  const Tensor x = iota_i64(Shape{1, 3, 1});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Squeeze", {}, {x}, Shape{3}, DType::i64), {0, 1, 2}));
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Squeeze", {}, {x, constant({-1})}, Shape{1, 3}, DType::i64), {0, 1, 2}));
  const Tensor b = pattern_bool(Shape{3});
  EXPECT_TRUE(all_equal<std::uint8_t>(
      run_cpu_op1("Unsqueeze", {}, {b, constant({0, -1})}, Shape{1, 3, 1}, DType::boolean), {1, 0, 0}));
  EXPECT_TRUE(all_close(run_cpu_op1("Identity", {}, {iota_f32(Shape{2, 2})}, Shape{2, 2}), {0, 1, 2, 3}, 0, 0));
  EXPECT_EQ(create_error("Squeeze", {}, {x}, {{DType::i64, Shape{4}}}), ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, DropoutPassesThroughWithTrueMask) {
  const Tensor x = iota_f32(Shape{2, 3}, -2);
  const Tensor ratio = Tensor::from<float>(Shape{}, {0.5f});
  const OpResult r = run_cpu_op("Dropout", {}, {x, ratio}, {{DType::f32, Shape{2, 3}}, {DType::boolean, Shape{2, 3}}});
  EXPECT_TRUE(all_close(r[0], {-2, -1, 0, 1, 2, 3}, 0, 0));
  EXPECT_TRUE(all_equal<std::uint8_t>(r[1], {1, 1, 1, 1, 1, 1}));
  const Tensor off = Tensor::from<std::uint8_t>(Shape{}, {0});
  const Tensor on = Tensor::from<std::uint8_t>(Shape{}, {1});
  EXPECT_TRUE(all_close(run_cpu_op1("Dropout", {}, {x, OpInput::absent(), OpInput::initializer(off)}, Shape{2, 3}),
                        {-2, -1, 0, 1, 2, 3}, 0, 0));
  EXPECT_EQ(create_error("Dropout", {}, {x, OpInput::absent(), OpInput::initializer(on)}, {{DType::f32, Shape{2, 3}}}),
            ErrorCode::unsupported);
  // Training with a ratio of 0 drops nothing: the same as inference.
  const Tensor zero = Tensor::from<float>(Shape{}, {0.0f});
  EXPECT_TRUE(
      all_equal<std::uint8_t>(run_cpu_op("Dropout", {}, {x, OpInput::initializer(zero), OpInput::initializer(on)},
                                         {{DType::f32, Shape{2, 3}}, {DType::boolean, Shape{2, 3}}})[1],
                              {1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(create_error("Dropout", {}, {x, OpInput::initializer(ratio), OpInput::initializer(on)},
                         {{DType::f32, Shape{2, 3}}}),
            ErrorCode::unsupported);
}

TEST(CpuShapeOps, ShapeStartEnd) {
  const Tensor x(DType::f32, Shape{2, 3, 4, 5});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Shape", {}, {x}, Shape{4}, DType::i64), {2, 3, 4, 5}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("Shape", {{"start", std::int64_t{1}}, {"end", std::int64_t{-1}}}, {x}, Shape{2}, DType::i64),
      {3, 4}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("Shape", {{"start", std::int64_t{-10}}, {"end", std::int64_t{10}}}, {x}, Shape{4}, DType::i64),
      {2, 3, 4, 5}));
  EXPECT_EQ(
      run_cpu_op1("Shape", {{"start", std::int64_t{3}}, {"end", std::int64_t{1}}}, {x}, Shape{0}, DType::i64).numel(),
      0);
  const Tensor flags(DType::boolean, Shape{7});
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Shape", {{"start", std::int64_t{-1}}}, {flags}, Shape{1}, DType::i64), {7}));
}

TEST(CpuShapeOps, ConstantAndConstantOfShape) {
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Constant", {{"value_ints", Ints{4, -5}}}, {}, Shape{2}, DType::i64),
                                      {4, -5}));
  EXPECT_TRUE(all_close(run_cpu_op1("Constant", {{"value_float", 2.5f}}, {}, Shape{}), {2.5}, 0, 0));
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Constant", {{"value_int", std::int64_t{9}}}, {}, Shape{}, DType::i64), {9}));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Constant", {{"value_floats", std::vector<float>{1, 2}}}, {}, Shape{2}), {1, 2}, 0, 0));
  const Tensor table = Tensor::from<std::uint8_t>(Shape{2, 2}, {1, 0, 0, 1});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Constant", {{"value", table}}, {}, Shape{2, 2}, DType::boolean),
                                      {1, 0, 0, 1}));

  const Tensor seven = Tensor::from<std::int32_t>(Shape{1}, {7});
  EXPECT_TRUE(all_equal<std::int32_t>(
      run_cpu_op1("ConstantOfShape", {{"value", seven}}, {constant({2, 3})}, Shape{2, 3}, DType::i32),
      {7, 7, 7, 7, 7, 7}));
  EXPECT_TRUE(all_close(run_cpu_op1("ConstantOfShape", {}, {constant({3})}, Shape{3}), {0, 0, 0}, 0, 0));
  const Tensor big = Tensor::from<std::int64_t>(Shape{1}, {-(std::int64_t{1} << 40)});
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("ConstantOfShape", {{"value", big}}, {constant({2})}, Shape{2}, DType::i64),
                              {-(std::int64_t{1} << 40), -(std::int64_t{1} << 40)}));
  EXPECT_EQ(create_error("ConstantOfShape", {{"value", seven}}, {constant({2, 3})}, {{DType::i32, Shape{3, 2}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuShapeOps, RangeFloatAndInt) {
  const auto f = [](float v) { return Tensor::from<float>(Shape{}, {v}); };
  EXPECT_TRUE(all_close(run_cpu_op1("Range", {}, {f(1), f(5), f(2)}, Shape{2}), {1, 3}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Range", {}, {f(0.5f), f(-1), f(-0.5f)}, Shape{3}), {0.5, 0, -0.5}, 0, 0));
  const auto i32 = [](std::int32_t v) { return OpInput::initializer(Tensor::from<std::int32_t>(Shape{}, {v})); };
  EXPECT_TRUE(
      all_equal<std::int32_t>(run_cpu_op1("Range", {}, {i32(10), i32(6), i32(-3)}, Shape{2}, DType::i32), {10, 7}));
  const auto i64 = [](std::int64_t v) { return Tensor::from<std::int64_t>(Shape{}, {v}); };
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Range", {}, {i64(-2), i64(3), i64(2)}, Shape{3}, DType::i64), {-2, 0, 2}));
  // With constants the length is checked: 10, 7 is two elements, not three.
  EXPECT_EQ(create_error("Range", {}, {i32(10), i32(6), i32(-3)}, {{DType::i32, Shape{3}}}), ErrorCode::shape_mismatch);
}

TEST(ShapeInferenceShapeOps, SqueezeUnsqueezeAxes) {
  EXPECT_EQ(inferred(one_node("Squeeze", {data(DType::f32, Shape{1, 3, 1, 2})}, {})), (Shape{3, 2}));
  EXPECT_EQ(inferred(one_node("Squeeze", {data(DType::f32, Shape{1, 3, 1, 2}), init("axes", ints({-2}))}, {})),
            (Shape{1, 3, 2}));
  // Negative Unsqueeze axes count from the end of the output (rank 2 + 2 = 4).
  EXPECT_EQ(inferred(one_node("Unsqueeze", {data(DType::i64, Shape{3, 4}), init("axes", ints({-1, 0}))}, {})),
            (Shape{1, 3, 4, 1}));
  EXPECT_EQ(inferred(one_node("Unsqueeze", {data(DType::boolean, Shape{3}), init("axes", ints({2, 0}))}, {})),
            (Shape{1, 3, 1}));
  // Axis 3 is past the output's rank 3.
  const std::string past =
      infer_message(one_node("Unsqueeze", {data(DType::f32, Shape{3}), init("axes", ints({1, 3}))}, {}));
  EXPECT_NE(past.find("(Unsqueeze)"), std::string::npos) << past;
  const std::string bad_axis =
      infer_message(one_node("Squeeze", {data(DType::f32, Shape{2, 3}), init("axes", ints({0}))}, {}));
  EXPECT_NE(bad_axis.find("(Squeeze)"), std::string::npos) << bad_axis;
  const std::string runtime_axes = infer_message(
      one_node("Unsqueeze", {data(DType::f32, Shape{2}), {"axes", DType::i64, Shape{1}, std::nullopt}}, {}));
  EXPECT_NE(runtime_axes.find("(Unsqueeze)"), std::string::npos) << runtime_axes;
  EXPECT_NE(runtime_axes.find("constant"), std::string::npos) << runtime_axes;
}

TEST(ShapeInferenceShapeOps, SliceSplitExpandTileShapes) {
  EXPECT_EQ(inferred(one_node("Slice",
                              {data(DType::f32, Shape{20, 10, 5}), init("s", ints({20, 10, 4})),
                               init("e", ints({0, 0, 1})), init("a", ints({0, 1, 2})), init("t", ints({-1, -3, -2}))},
                              {})),
            (Shape{19, 3, 2}));
  const Model split = one_node("Split", {data(DType::f32, Shape{2, 7})},
                               {{"axis", std::int64_t{1}}, {"num_outputs", std::int64_t{3}}}, 3);
  const auto values = infer_shapes(split);
  EXPECT_EQ(values.at("y0").shape, (Shape{2, 3}));
  EXPECT_EQ(values.at("y2").shape, (Shape{2, 1}));
  EXPECT_EQ(inferred(one_node("Expand", {data(DType::i64, Shape{3, 1}), init("s", ints({2, 1, 6}))}, {})),
            (Shape{2, 3, 6}));
  EXPECT_EQ(inferred(one_node("Tile", {data(DType::boolean, Shape{2, 3}), init("r", ints({3, 0}))}, {})),
            (Shape{6, 0}));
  const std::string runtime_shape =
      infer_message(one_node("Expand", {data(DType::f32, Shape{3}), {"s", DType::i64, Shape{2}, std::nullopt}}, {}));
  EXPECT_NE(runtime_shape.find("(Expand)"), std::string::npos) << runtime_shape;
  const std::string uneven = infer_message(one_node("Split", {data(DType::f32, Shape{5})}, {}, 2));
  EXPECT_NE(uneven.find("(Split)"), std::string::npos) << uneven;
}

TEST(ShapeInferenceShapeOps, GeneratorShapes) {
  EXPECT_EQ(inferred(one_node("Shape", {data(DType::f32, Shape{2, 3, 4})}, {{"start", std::int64_t{-2}}})), (Shape{2}));
  const Model range =
      one_node("Range",
               {init("a", Tensor::from<float>(Shape{}, {1})), init("b", Tensor::from<float>(Shape{}, {5})),
                init("c", Tensor::from<float>(Shape{}, {2}))},
               {});
  EXPECT_EQ(inferred(range), (Shape{2}));
  const Model irange = one_node(
      "Range",
      {init("a", Tensor::from<std::int32_t>(Shape{}, {10})), init("b", Tensor::from<std::int32_t>(Shape{}, {6})),
       init("c", Tensor::from<std::int32_t>(Shape{}, {-3}))},
      {});
  EXPECT_EQ(infer_shapes(irange).at("y0").dtype, DType::i32);
  EXPECT_EQ(inferred(irange), (Shape{2}));
  const Model fill =
      one_node("ConstantOfShape", {init("s", ints({0}))}, {{"value", Tensor::from<std::int32_t>(Shape{1}, {0})}});
  EXPECT_EQ(infer_shapes(fill).at("y0").dtype, DType::i32);
  EXPECT_EQ(inferred(fill), (Shape{0}));
  const Model dropout = one_node("Dropout", {data(DType::f32, Shape{3})}, {}, 2);
  EXPECT_EQ(infer_shapes(dropout).at("y1").dtype, DType::boolean);
}
