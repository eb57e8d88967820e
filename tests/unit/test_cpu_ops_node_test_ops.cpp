// CPU backend: edge cases and errors of the ops added for the ONNX node tests (GatherElements,
// ScatterElements/ScatterND reductions, Trilu, Mod's sign rules, Size, the losses, OneHot,
// Compress, DFT, GridSample). The node tests themselves (loom_onnx_conformance) check the common
// cases.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

TEST(CpuNodeTestOps, GatherElementsNegativeIndexAndOutOfRange) {
  const Tensor data = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor indices = Tensor::from<std::int64_t>(Shape{2, 2}, {-1, 0, 1, -3});
  EXPECT_TRUE(all_close(run_cpu_op1("GatherElements", {{"axis", std::int64_t{1}}}, {data, indices}, Shape{2, 2}),
                        {3, 1, 5, 4}, 0, 0));
  const Tensor bad = Tensor::from<std::int64_t>(Shape{2, 2}, {0, 3, 0, 0});
  try {
    (void)run_cpu_op1("GatherElements", {{"axis", std::int64_t{1}}}, {data, bad}, Shape{2, 2});
    FAIL() << "index 3 should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
  }
}

TEST(CpuNodeTestOps, ScatterReductions) {
  const Tensor data = Tensor::from<float>(Shape{1, 4}, {1, 2, 3, 4});
  const Tensor indices = Tensor::from<std::int64_t>(Shape{1, 3}, {1, 1, -1});
  const Tensor updates = Tensor::from<float>(Shape{1, 3}, {10, 20, 5});
  const Attributes axis1{{"axis", std::int64_t{1}}};
  Attributes add = axis1, mul = axis1, max = axis1;
  add.set("reduction", std::string("add"));
  mul.set("reduction", std::string("mul"));
  max.set("reduction", std::string("max"));
  EXPECT_TRUE(
      all_close(run_cpu_op1("ScatterElements", add, {data, indices, updates}, Shape{1, 4}), {1, 32, 3, 9}, 0, 0));
  EXPECT_TRUE(
      all_close(run_cpu_op1("ScatterElements", mul, {data, indices, updates}, Shape{1, 4}), {1, 400, 3, 20}, 0, 0));
  EXPECT_TRUE(
      all_close(run_cpu_op1("ScatterElements", max, {data, indices, updates}, Shape{1, 4}), {1, 20, 3, 5}, 0, 0));
  // ScatterND: whole rows addressed by one index each.
  const Tensor grid = Tensor::from<std::int32_t>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor rows = Tensor::from<std::int64_t>(Shape{2, 1}, {2, 0});
  const Tensor values = Tensor::from<std::int32_t>(Shape{2, 2}, {7, 8, 9, 10});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("ScatterND", {}, {grid, rows, values}, Shape{3, 2}, DType::i32),
                                      {9, 10, 3, 4, 7, 8}));
  Attributes bad_reduction;
  bad_reduction.set("reduction", std::string("average"));
  EXPECT_TRUE(create_error("ScatterND", bad_reduction, {grid, rows, values}, {{DType::i32, Shape{3, 2}}}).has_value());
}

TEST(CpuNodeTestOps, TriluUpperLowerWithK) {
  const Tensor x = Tensor::from<std::int64_t>(Shape{3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor k = Tensor::from<std::int64_t>(Shape{}, {-1});
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Trilu", {}, {x}, Shape{3, 3}, DType::i64), {1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Trilu", {{"upper", std::int64_t{0}}}, {x, k}, Shape{3, 3}, DType::i64),
                              {0, 0, 0, 4, 0, 0, 7, 8, 0}));
}

TEST(CpuNodeTestOps, ModFollowsTheDivisorUnlessFmod) {
  const Tensor a = Tensor::from<std::int32_t>(Shape{4}, {-7, 7, -7, 5});
  const Tensor b = Tensor::from<std::int32_t>(Shape{4}, {3, -3, -3, 0});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Mod", {}, {a, b}, Shape{4}, DType::i32), {2, -2, -1, 0}));
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Mod", {{"fmod", std::int64_t{1}}}, {a, b}, Shape{4}, DType::i32),
                                      {-1, 1, -1, 0}));
  const Tensor x = Tensor::from<float>(Shape{2}, {-7.5f, 7.5f});
  const Tensor y = Tensor::from<float>(Shape{2}, {2.0f, -2.0f});
  EXPECT_TRUE(all_close(run_cpu_op1("Mod", {{"fmod", std::int64_t{1}}}, {x, y}, Shape{2}), {-1.5, 1.5}, 0, 0));
}

TEST(CpuNodeTestOps, SizeIsAnI64Scalar) {
  const Tensor x(DType::f32, Shape{2, 3, 4});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Size", {}, {x}, Shape{}, DType::i64), {24}));
}

TEST(CpuNodeTestOps, NllLossIgnoreIndexAndWeights) {
  // input (N=2, C=3) log-probabilities; the second target is ignored.
  const Tensor input = Tensor::from<float>(Shape{2, 3}, {-1, -2, -3, -4, -5, -6});
  const Tensor target = Tensor::from<std::int64_t>(Shape{2}, {2, 1});
  const Tensor weight = Tensor::from<float>(Shape{3}, {1, 1, 0.5f});
  Attributes attrs{{"ignore_index", std::int64_t{1}}};
  EXPECT_TRUE(
      all_close(run_cpu_op1("NegativeLogLikelihoodLoss", attrs, {input, target, weight}, Shape{}), {3.0}, 0, 1e-6));
  attrs.set("reduction", std::string("none"));
  EXPECT_TRUE(all_close(run_cpu_op1("NegativeLogLikelihoodLoss", attrs, {input, target, weight}, Shape{2}), {1.5, 0.0},
                        0, 1e-6));
  const Tensor out_of_range = Tensor::from<std::int64_t>(Shape{2}, {3, 0});
  EXPECT_THROW((void)run_cpu_op1("NegativeLogLikelihoodLoss", {}, {input, out_of_range}, Shape{}), Error);
}

TEST(CpuNodeTestOps, OneHotNegativeAndOutOfRangeIndices) {
  const Tensor indices = Tensor::from<std::int64_t>(Shape{3}, {-1, 1, 5});
  const Tensor depth = Tensor::from<std::int64_t>(Shape{}, {3});
  const Tensor values = Tensor::from<float>(Shape{2}, {0, 7});
  EXPECT_TRUE(all_close(run_cpu_op1("OneHot", {}, {indices, OpInput::initializer(depth), values}, Shape{3, 3}),
                        {0, 0, 7, 0, 7, 0, 0, 0, 0}, 0, 0));
  EXPECT_EQ(create_error("OneHot", {}, {indices, depth, values}, {{DType::f32, Shape{3, 3}}}), ErrorCode::unsupported);
}

TEST(CpuNodeTestOps, CompressAlongAnAxisAndFlattened) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor condition = Tensor::from<std::uint8_t>(Shape{2}, {0, 1});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Compress", {{"axis", std::int64_t{1}}}, {x, OpInput::initializer(condition)}, Shape{2, 1}),
                {2, 5}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Compress", {}, {x, OpInput::initializer(condition)}, Shape{1}), {2}, 0, 0));
}

TEST(CpuNodeTestOps, DftOfAnImpulseIsFlatAndInverseRestoresIt) {
  const Tensor impulse = Tensor::from<float>(Shape{1, 4, 1}, {1, 0, 0, 0});
  EXPECT_TRUE(all_close(run_cpu_op1("DFT", {}, {impulse}, Shape{1, 4, 2}), {1, 0, 1, 0, 1, 0, 1, 0}, 1e-6, 0));
  const Tensor flat = Tensor::from<float>(Shape{1, 4, 2}, {1, 0, 1, 0, 1, 0, 1, 0});
  EXPECT_TRUE(all_close(run_cpu_op1("DFT", {{"inverse", std::int64_t{1}}}, {flat}, Shape{1, 4, 2}),
                        {1, 0, 0, 0, 0, 0, 0, 0}, 1e-6, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("DFT", {{"onesided", std::int64_t{1}}}, {impulse}, Shape{1, 3, 2}),
                        {1, 0, 1, 0, 1, 0}, 1e-6, 0));
}

TEST(CpuNodeTestOps, GridSampleIdentityGridWithAlignedCorners) {
  const Tensor x = Tensor::from<float>(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  // (x, y) at the four pixel centres: with align_corners the corners of [-1, 1] are the pixels.
  const Tensor grid = Tensor::from<float>(Shape{1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    Attributes attrs{{"align_corners", std::int64_t{1}}};
    attrs.set("mode", std::string(mode));
    EXPECT_TRUE(all_close(run_cpu_op1("GridSample", attrs, {x, grid}, Shape{1, 1, 2, 2}), {1, 2, 3, 4}, 1e-5, 0))
        << mode;
  }
  Attributes outside{{"padding_mode", std::string("border")}};
  const Tensor far = Tensor::from<float>(Shape{1, 1, 1, 2}, {5, 5});
  EXPECT_TRUE(all_close(run_cpu_op1("GridSample", outside, {x, far}, Shape{1, 1, 1, 1}), {4}, 1e-6, 0));
}

}  // namespace
