// The conformance runner's verdict logic (tests/onnx/conformance_support.hpp): tensor comparison,
// which graph inputs must be fixed at load, and the unsupported-case list.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "onnx/conformance_support.hpp"

namespace loom::conformance {
namespace {

TEST(OnnxCompare, AcceptsDifferencesWithinAbsolutePlusRelativeTolerance) {
  // Bound for expected 100: 1e-5 + 1e-3 * 100 = 0.10001.
  const Tensor expected = Tensor::from<float>({3}, {100.0f, 0.0f, -2.0f});
  const Tensor inside = Tensor::from<float>({3}, {100.1f, 9e-6f, -2.0019f});
  EXPECT_TRUE(compare_tensors(inside, expected).equal);
  const Tensor outside = Tensor::from<float>({3}, {100.0f, 2e-5f, -2.0f});
  const Comparison result = compare_tensors(outside, expected);
  EXPECT_FALSE(result.equal);
  EXPECT_NE(result.message.find("element [1]"), std::string::npos) << result.message;
  EXPECT_NE(result.message.find("1 of 3"), std::string::npos) << result.message;
}

TEST(OnnxCompare, NanMatchesOnlyNanAndInfinityOnlyTheSameInfinity) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor expected = Tensor::from<float>({3}, {nan, inf, -inf});
  EXPECT_TRUE(compare_tensors(Tensor::from<float>({3}, {nan, inf, -inf}), expected).equal);
  EXPECT_FALSE(compare_tensors(Tensor::from<float>({3}, {0.0f, inf, -inf}), expected).equal);
  EXPECT_FALSE(compare_tensors(Tensor::from<float>({3}, {nan, -inf, -inf}), expected).equal);
  EXPECT_FALSE(compare_tensors(Tensor::from<float>({3}, {nan, 3e38f, -inf}), expected).equal);
  EXPECT_FALSE(close_enough(nan, 1.0, {}));
}

TEST(OnnxCompare, IntegersAndBoolsMustMatchExactly) {
  const Tensor expected = Tensor::from<std::int64_t>({2, 2}, {1, 2, 3, 1'000'000'000'000});
  EXPECT_TRUE(compare_tensors(Tensor::from<std::int64_t>({2, 2}, {1, 2, 3, 1'000'000'000'000}), expected).equal);
  const Comparison off_by_one =
      compare_tensors(Tensor::from<std::int64_t>({2, 2}, {1, 2, 3, 1'000'000'000'001}), expected);
  EXPECT_FALSE(off_by_one.equal);
  EXPECT_NE(off_by_one.message.find("element [1,1] is 1000000000001, expected 1000000000000"), std::string::npos)
      << off_by_one.message;
  const Tensor bools = Tensor::from<std::uint8_t>({2}, {1, 0});
  EXPECT_TRUE(compare_tensors(Tensor::from<std::uint8_t>({2}, {1, 0}), bools).equal);
  EXPECT_FALSE(compare_tensors(Tensor::from<std::uint8_t>({2}, {0, 0}), bools).equal);
}

TEST(OnnxCompare, RejectsDifferentDtypeOrShape) {
  const Tensor expected = Tensor::from<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Comparison dtype = compare_tensors(Tensor::from<std::int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}), expected);
  EXPECT_FALSE(dtype.equal);
  EXPECT_EQ(dtype.message, "dtype i32, expected f32");
  const Comparison shape = compare_tensors(expected.reshaped({3, 2}), expected);
  EXPECT_FALSE(shape.equal);
  EXPECT_EQ(shape.message, "shape 3x2, expected 2x3");
  // Scalars and empty tensors compare by shape alone.
  EXPECT_TRUE(compare_tensors(Tensor(DType::f32, Shape{0, 3}), Tensor(DType::f32, Shape{0, 3})).equal);
  EXPECT_FALSE(compare_tensors(Tensor(DType::f32, Shape{}), Tensor(DType::f32, Shape{1})).equal);
}

TEST(OnnxCompare, HalfPrecisionAllowsOneUnitInTheLastPlace) {
  // 1024 and 1025 are adjacent f16 values (spacing 1 in [1024, 2048)): 1/1025 < 2e-3.
  const Tensor expected = Tensor::from<f16_t>({1}, {float_to_f16(1024.0f)});
  EXPECT_TRUE(compare_tensors(Tensor::from<f16_t>({1}, {float_to_f16(1025.0f)}), expected).equal);
  EXPECT_FALSE(compare_tensors(Tensor::from<f16_t>({1}, {float_to_f16(1028.0f)}), expected).equal);
}

Node make_node(std::string op, std::vector<std::string> inputs, std::vector<std::string> outputs) {
  Node node;
  node.op_type = std::move(op);
  node.inputs = std::move(inputs);
  node.outputs = std::move(outputs);
  return node;
}

TEST(OnnxShapeDecidingInputs, FollowsChainsIntoHostInputsButNotThroughShape) {
  // x -> Reshape(x, Concat(Cast(a), b)); y -> Expand(y, Shape(z)). Reshape's input 1 and Expand's
  // input 1 decide shapes: a and b reach one through Cast/Concat, z only through Shape.
  Model model;
  for (const char* name : {"x", "a", "b", "y", "z"}) model.inputs.push_back(ValueInfo{name, DType::f32, {}, {}});
  model.nodes.push_back(make_node("Cast", {"a"}, {"a_i64"}));
  model.nodes.push_back(make_node("Concat", {"a_i64", "b"}, {"shape"}));
  model.nodes.push_back(make_node("Reshape", {"x", "shape"}, {"x2"}));
  model.nodes.push_back(make_node("Shape", {"z"}, {"z_shape"}));
  model.nodes.push_back(make_node("Expand", {"y", "z_shape"}, {"y2"}));
  model.outputs = {"x2", "y2"};
  EXPECT_EQ(shape_deciding_inputs(model), (std::set<std::string>{"a", "b"}));
}

TEST(OnnxShapeDecidingInputs, IgnoresOmittedOptionalInputs) {
  // Slice(data, starts, ends, "", steps): the empty name is an omitted axes input.
  Model model;
  for (const char* name : {"data", "starts", "ends", "steps"})
    model.inputs.push_back(ValueInfo{name, DType::i64, {}, {}});
  model.nodes.push_back(make_node("Slice", {"data", "starts", "ends", "", "steps"}, {"out"}));
  model.outputs = {"out"};
  EXPECT_EQ(shape_deciding_inputs(model), (std::set<std::string>{"starts", "ends", "steps"}));
}

TEST(OnnxUnsupportedList, ParsesNamesReasonsDevicePrefixesAndReportsBadLines) {
  std::istringstream text(
      "# header comment\n"
      "\n"
      "test_a\tneeds mode=cubic\n"
      "cuda:test_b\tf16 rounding\r\n"
      "test_c without a tab\n"
      "test_a\tagain\n");
  const UnsupportedList list = parse_unsupported_list(text);
  ASSERT_NE(list.find("test_a", "cpu"), nullptr);
  EXPECT_EQ(*list.find("test_a", "cuda"), "needs mode=cubic");
  EXPECT_EQ(list.find("test_b", "cpu"), nullptr);
  ASSERT_NE(list.find("test_b", "cuda"), nullptr);
  EXPECT_EQ(*list.find("test_b", "cuda"), "f16 rounding");
  ASSERT_EQ(list.errors.size(), 2u);
  EXPECT_NE(list.errors[0].find("line 5"), std::string::npos);
  EXPECT_NE(list.errors[1].find("listed twice"), std::string::npos);
}

}  // namespace
}  // namespace loom::conformance
