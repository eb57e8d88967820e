// The conv family on the CUDA backend against the CPU backend: Conv and ConvTranspose in 1-D to
// 3-D, pooling with auto_pad / dilations / ceil_mode, GlobalMaxPool, Pad in every dtype, Resize.
#include <gtest/gtest.h>

#include <string>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using Ints = std::vector<std::int64_t>;
using CudaConvFamily = CudaOpTest;

constexpr Tolerance kExact{0, 0};

TEST_F(CudaConvFamily, Conv1d3dAndAutoPad) {
  expect_agree({"Conv",
                {{"strides", Ints{2}}, {"dilations", Ints{2}}, {"pads", Ints{1, 3}}, {"group", std::int64_t{2}}},
                {random_tensor({2, 4, 17}, 1), random_tensor({6, 2, 3}, 2), random_tensor({6}, 3)},
                {{DType::f32, {2, 6, 9}}}});
  expect_agree({"Conv",
                {{"strides", Ints{1, 2, 1}}, {"pads", Ints{1, 0, 1, 1, 1, 0}}},
                {random_tensor({1, 2, 5, 6, 4}, 4), random_tensor({4, 2, 3, 2, 3}, 5), random_tensor({4}, 6)},
                {{DType::f32, {1, 4, 5, 3, 3}}}});
  // SAME_LOWER with stride 2 pads asymmetrically on the odd axis.
  expect_agree({"Conv",
                {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}},
                {random_tensor({1, 3, 6, 5}, 7), random_tensor({4, 3, 2, 3}, 8)},
                {{DType::f32, {1, 4, 3, 3}}}});
  expect_agree({"Conv",
                {{"auto_pad", std::string("SAME_UPPER")}},
                {random_tensor({2, 3, 7, 8}, 9), random_tensor({5, 3, 2, 2}, 10)},
                {{DType::f32, {2, 5, 7, 8}}}});
  expect_agree({"Conv",
                {{"auto_pad", std::string("VALID")}, {"strides", Ints{2, 3}}},
                {random_tensor({1, 2, 9, 9}, 11), random_tensor({2, 2, 3, 3}, 12)},
                {{DType::f32, {1, 2, 4, 3}}}});
}

TEST_F(CudaConvFamily, ConvTranspose) {
  expect_agree({"ConvTranspose",
                {{"strides", Ints{2, 3}}, {"pads", Ints{1, 0, 0, 2}}, {"output_padding", Ints{1, 2}}},
                {random_tensor({2, 4, 5, 4}, 20), random_tensor({4, 3, 3, 3}, 21), random_tensor({3}, 22)},
                {{DType::f32, {2, 3, 11, 12}}}});
  expect_agree(
      {"ConvTranspose",
       {{"strides", Ints{1, 2}}, {"dilations", Ints{2, 1}}, {"pads", Ints{0, 1, 1, 0}}, {"group", std::int64_t{2}}},
       {random_tensor({1, 4, 4, 5}, 23), random_tensor({4, 2, 2, 3}, 24)},
       {{DType::f32, {1, 4, 5, 10}}}});
  expect_agree({"ConvTranspose",
                {{"strides", Ints{3}}, {"output_shape", Ints{20}}, {"group", std::int64_t{3}}},
                {random_tensor({1, 3, 6}, 25), random_tensor({3, 1, 4}, 26), random_tensor({3}, 27)},
                {{DType::f32, {1, 3, 20}}}});
  expect_agree({"ConvTranspose",
                {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}},
                {random_tensor({1, 1, 3, 3}, 28), random_tensor({1, 2, 3, 3}, 29)},
                {{DType::f32, {1, 2, 6, 6}}}});
  expect_agree({"ConvTranspose",
                {{"strides", Ints{2, 1, 2}}, {"dilations", Ints{1, 2, 1}}},
                {random_tensor({1, 2, 3, 2, 4}, 30), random_tensor({2, 2, 2, 3, 2}, 31)},
                {{DType::f32, {1, 2, 6, 6, 8}}}});
}

TEST_F(CudaConvFamily, Pooling) {
  for (const char* op : {"MaxPool", "AveragePool"}) {
    expect_agree(
        {op,
         {{"kernel_shape", Ints{3}}, {"strides", Ints{2}}, {"pads", Ints{1, 2}}, {"ceil_mode", std::int64_t{1}}},
         {random_tensor({2, 3, 11}, 40)},
         {{DType::f32, {2, 3, 6}}}});
    expect_agree({op,
                  {{"kernel_shape", Ints{3, 2}},
                   {"strides", Ints{2, 1}},
                   {"dilations", Ints{2, 3}},
                   {"pads", Ints{2, 1, 1, 0}},
                   {"count_include_pad", std::int64_t{1}}},
                  {random_tensor({1, 2, 9, 8}, 41)},
                  {{DType::f32, {1, 2, 4, 6}}}});
    expect_agree({op,
                  {{"kernel_shape", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}},
                  {random_tensor({1, 3, 7, 6}, 42)},
                  {{DType::f32, {1, 3, 7, 6}}}});
    expect_agree({op,
                  {{"kernel_shape", Ints{2, 3, 2}},
                   {"strides", Ints{2, 1, 2}},
                   {"pads", Ints{1, 1, 0, 0, 1, 1}},
                   {"ceil_mode", std::int64_t{1}}},
                  {random_tensor({1, 2, 5, 6, 4}, 43)},
                  {{DType::f32, {1, 2, 3, 6, 2}}}});
  }
  expect_agree({"GlobalMaxPool", {}, {random_tensor({2, 3, 4, 5, 6}, 44)}, {{DType::f32, {2, 3, 1, 1, 1}}}}, kExact,
               kExact);
  expect_agree({"GlobalAveragePool", {}, {random_tensor({2, 3, 17}, 45)}, {{DType::f32, {2, 3, 1}}}});
}

TEST_F(CudaConvFamily, PadEveryModeAndDtype) {
  for (const char* mode : {"constant", "reflect", "edge"}) {
    expect_agree({"Pad",
                  {{"mode", std::string(mode)}},
                  {random_tensor({2, 3, 4}, 50), int64_initializer({1, 0, 2, 0, 2, 5})},
                  {{DType::f32, {3, 5, 11}}}},
                 kExact, kExact);
    expect_agree({"Pad",
                  {{"mode", std::string(mode)}},
                  {random_ints({3, 4}, 51, -9, 9), int64_initializer({2, -1, 1, 3})},
                  {{DType::i64, {6, 6}}}},
                 kExact, kExact);
    expect_agree({"Pad",
                  {{"mode", std::string(mode)}},
                  {random_ints({3, 4}, 52, -9, 9, DType::i32), int64_initializer({0, 3, 1, 0})},
                  {{DType::i32, {4, 7}}}},
                 kExact, kExact);
  }
  expect_agree({"Pad",
                {},
                {random_tensor({2, 3}, 53), int64_initializer({1, 1, 1, 1}), Tensor::from<float>(Shape{}, {2.5f})},
                {{DType::f32, {4, 5}}}},
               kExact, kExact);
  expect_agree({"Pad",
                {},
                {random_ints({2, 3}, 54, 0, 1).to(DType::i64), int64_initializer({0, 1, 0, 1})},
                {{DType::i64, {2, 5}}}},
               kExact, kExact);
}

TEST_F(CudaConvFamily, Resize) {
  const Tensor x = random_tensor({1, 2, 5, 7}, 60);
  const auto scales = [](float h, float w) {
    return OpInput::initializer(Tensor::from<float>(Shape{4}, {1, 1, h, w}));
  };
  for (const char* transform : {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"}) {
    for (const char* nearest : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
      expect_agree({"Resize",
                    {{"mode", std::string("nearest")},
                     {"coordinate_transformation_mode", std::string(transform)},
                     {"nearest_mode", std::string(nearest)}},
                    {x, OpInput::absent(), scales(2.0f, 1.5f)},
                    {{DType::f32, {1, 2, 10, 10}}}},
                   kExact, kExact);
    for (const char* mode : {"linear", "cubic"})
      expect_agree({"Resize",
                    {{"mode", std::string(mode)}, {"coordinate_transformation_mode", std::string(transform)}},
                    {x, OpInput::absent(), scales(0.6f, 1.75f)},
                    {{DType::f32, {1, 2, 3, 12}}}});
  }
  expect_agree({"Resize",
                {{"mode", std::string("linear")}},
                {x, OpInput::absent(), OpInput::absent(),
                 OpInput::initializer(Tensor::from<std::int64_t>(Shape{4}, {1, 2, 8, 4}))},
                {{DType::f32, {1, 2, 8, 4}}}});
}

}  // namespace
}  // namespace loom::gpu_testing
