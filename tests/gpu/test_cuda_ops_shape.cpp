// Slice, Split, Expand, Tile, Squeeze, Unsqueeze, Identity, Dropout, Shape, Constant,
// ConstantOfShape and Range on the CUDA backend against the CPU backend. They move or generate
// elements without arithmetic (Range: one multiply-add), so they must match exactly.
#include <gtest/gtest.h>

#include <limits>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using Ints = std::vector<std::int64_t>;
using CudaShapeOps = CudaOpTest;

constexpr Tolerance kExact{0, 0};
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

TEST_F(CudaShapeOps, Slice) {
  const Tensor x = random_tensor({20, 10, 5}, 1);
  // Negative steps on every axis (the ONNX test's case), clamped starts.
  expect_agree({"Slice",
                {},
                {x, int64_initializer({20, 10, 4}), int64_initializer({0, 0, 1}), int64_initializer({0, 1, 2}),
                 int64_initializer({-1, -3, -2})},
                {{DType::f32, {19, 3, 2}}}},
               kExact, kExact);
  expect_agree({"Slice",
                {},
                {x, int64_initializer({-100, 2}), int64_initializer({kMax, -1}), int64_initializer({-1, 1}),
                 int64_initializer({2, 3})},
                {{DType::f32, {20, 3, 3}}}},
               kExact, kExact);
  expect_agree({"Slice",
                {},
                {x, int64_initializer({1}), int64_initializer({kMin}), int64_initializer({0}), int64_initializer({-1})},
                {{DType::f32, {2, 10, 5}}}},
               kExact, kExact);
  // Contiguous rows only: a single run; and an empty result.
  expect_agree({"Slice", {}, {x, int64_initializer({3}), int64_initializer({7})}, {{DType::f32, {4, 10, 5}}}}, kExact,
               kExact);
  expect_agree({"Slice",
                {},
                {x, int64_initializer({1000}), int64_initializer({1000}), int64_initializer({1})},
                {{DType::f32, {20, 0, 5}}}},
               kExact, kExact);
  expect_agree({"Slice",
                {},
                {random_ints({6, 7}, 2, -99, 99), int64_initializer({5, 1}), int64_initializer({0, 7}),
                 int64_initializer({0, 1}), int64_initializer({-2, 2})},
                {{DType::i64, {3, 3}}}},
               kExact, kExact);
  expect_agree({"Slice",
                {},
                {random_bools({4, 9}, 3), int64_initializer({-2}), int64_initializer({kMin}), int64_initializer({1}),
                 int64_initializer({-3})},
                {{DType::boolean, {4, 3}}}},
               kExact, kExact);
}

TEST_F(CudaShapeOps, Split) {
  expect_agree({"Split",
                {{"axis", std::int64_t{1}}},
                {random_tensor({2, 7, 3}, 10), int64_initializer({2, 0, 5})},
                {{DType::f32, {2, 2, 3}}, {DType::f32, {2, 0, 3}}, {DType::f32, {2, 5, 3}}}},
               kExact, kExact);
  expect_agree(
      {"Split", {}, {random_ints({6, 2}, 11, -9, 9, DType::i32)}, {{DType::i32, {3, 2}}, {DType::i32, {3, 2}}}}, kExact,
      kExact);
  expect_agree({"Split",
                {{"axis", std::int64_t{-1}}},
                {random_bools({3, 5}, 12)},
                {{DType::boolean, {3, 1}}, OpOutput::absent(), {DType::boolean, {3, 2}}}},
               kExact, kExact);
}

TEST_F(CudaShapeOps, ExpandAndTile) {
  expect_agree({"Expand", {}, {random_tensor({3, 1}, 20), int64_initializer({2, 1, 6})}, {{DType::f32, {2, 3, 6}}}},
               kExact, kExact);
  expect_agree({"Expand", {}, {random_ints({2, 1}, 21, -9, 9), int64_initializer({3})}, {{DType::i64, {2, 3}}}}, kExact,
               kExact);
  expect_agree({"Expand", {}, {random_tensor({1}, 22), int64_initializer({4, 5})}, {{DType::f32, {4, 5}}}}, kExact,
               kExact);
  expect_agree({"Tile", {}, {random_tensor({2, 3}, 23), int64_initializer({2, 2})}, {{DType::f32, {4, 6}}}}, kExact,
               kExact);
  expect_agree(
      {"Tile", {}, {random_ints({2, 1, 3}, 24, -9, 9), int64_initializer({1, 4, 2})}, {{DType::i64, {2, 4, 6}}}},
      kExact, kExact);
  expect_agree({"Tile", {}, {random_bools({3}, 25), int64_initializer({3})}, {{DType::boolean, {9}}}}, kExact, kExact);
}

TEST_F(CudaShapeOps, ViewsAndDropout) {
  expect_agree({"Squeeze", {}, {random_tensor({1, 3, 1, 2}, 30)}, {{DType::f32, {3, 2}}}}, kExact, kExact);
  expect_agree(
      {"Unsqueeze", {}, {random_ints({3, 2}, 31, -9, 9), int64_initializer({-1, 0})}, {{DType::i64, {1, 3, 2, 1}}}},
      kExact, kExact);
  expect_agree({"Identity", {}, {random_bools({5}, 32)}, {{DType::boolean, {5}}}}, kExact, kExact);
  expect_agree({"Dropout",
                {},
                {random_tensor({3, 4}, 33), Tensor::from<float>({}, {0.5f})},
                {{DType::f32, {3, 4}}, {DType::boolean, {3, 4}}}},
               kExact, kExact);
}

TEST_F(CudaShapeOps, Generators) {
  expect_agree({"Shape",
                {{"start", std::int64_t{1}}, {"end", std::int64_t{-1}}},
                {random_tensor({2, 3, 4, 5}, 40)},
                {{DType::i64, {2}}}},
               kExact, kExact);
  expect_agree({"Constant", {{"value_ints", Ints{3, -4, 5}}}, {}, {{DType::i64, {3}}}}, kExact, kExact);
  expect_agree({"Constant", {{"value", random_tensor({2, 2}, 41)}}, {}, {{DType::f32, {2, 2}}}}, kExact, kExact);
  expect_agree({"ConstantOfShape",
                {{"value", Tensor::from<std::int32_t>({1}, {7})}},
                {int64_initializer({2, 3})},
                {{DType::i32, {2, 3}}}},
               kExact, kExact);
  expect_agree({"ConstantOfShape",
                {{"value", Tensor::from<std::int64_t>({1}, {-(std::int64_t{1} << 40)})}},
                {int64_initializer({5})},
                {{DType::i64, {5}}}},
               kExact, kExact);
  expect_agree({"ConstantOfShape", {}, {int64_initializer({4})}, {{DType::f32, {4}}}}, kExact, kExact);
  // f32 only (Range has no f16 form), so compared directly rather than through expect_agree.
  const OpCase float_range{
      "Range",
      {},
      {Tensor::from<float>({}, {0.5f}), Tensor::from<float>({}, {40.0f}), Tensor::from<float>({}, {0.3f})},
      {{DType::f32, {132}}}};
  EXPECT_TRUE(all_close(run_op(*cpu_, float_range)[0], run_op(*cuda_, float_range)[0], kExact));
  expect_agree({"Range",
                {},
                {Tensor::from<std::int32_t>({}, {10}), Tensor::from<std::int32_t>({}, {6}),
                 Tensor::from<std::int32_t>({}, {-3})},
                {{DType::i32, {2}}}},
               kExact, kExact);
  expect_agree({"Range",
                {},
                {Tensor::from<std::int64_t>({}, {-5}), Tensor::from<std::int64_t>({}, {100}),
                 Tensor::from<std::int64_t>({}, {7})},
                {{DType::i64, {15}}}},
               kExact, kExact);
}

}  // namespace
}  // namespace loom::gpu_testing
