// Activations, Add/Mul broadcasting, normalisation, Softmax and pooling on the CUDA backend
// against the CPU backend, in f32 and f16.
#include <gtest/gtest.h>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using Ints = std::vector<std::int64_t>;

using CudaPointwiseOps = CudaOpTest;

TEST_F(CudaPointwiseOps, Activations) {
  const Shape shape{3, 17, 5};
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Gelu"})
    expect_agree({op, {}, {random_tensor(shape, 1, -4.0f, 4.0f)}, {{DType::f32, shape}}});
  expect_agree(
      {"Gelu", {{"approximate", std::string("tanh")}}, {random_tensor(shape, 2, -4.0f, 4.0f)}, {{DType::f32, shape}}});
  // Large enough for the grid-stride loop to wrap on small grids.
  expect_agree({"Sigmoid", {}, {random_tensor({1 << 20}, 3, -8.0f, 8.0f)}, {{DType::f32, {1 << 20}}}});
}

OpCase binary(const char* op, const Shape& a, const Shape& b, const Shape& y, std::uint32_t seed) {
  return {op, {}, {random_tensor(a, seed), random_tensor(b, seed + 1)}, {{DType::f32, y}}};
}

TEST_F(CudaPointwiseOps, AddMulBroadcast) {
  for (const char* op : {"Add", "Mul"}) {
    SCOPED_TRACE(op);
    expect_agree(binary(op, {4, 5, 6}, {4, 5, 6}, {4, 5, 6}, 10));
    expect_agree(binary(op, {2, 3, 4}, {4}, {2, 3, 4}, 11));
    expect_agree(binary(op, {2, 1, 4}, {3, 1}, {2, 3, 4}, 12));
    expect_agree(binary(op, {3, 4}, {}, {3, 4}, 13));
    expect_agree(binary(op, {1, 5}, {4, 1}, {4, 5}, 14));
    expect_agree(binary(op, {2, 3, 1, 5, 1}, {3, 4, 1, 6}, {2, 3, 4, 5, 6}, 15));
  }
}

TEST_F(CudaPointwiseOps, AddMulIntegers) {
  for (const char* op : {"Add", "Mul"}) {
    for (DType dtype : {DType::i64, DType::i32}) {
      SCOPED_TRACE(std::string(op) + " " + std::string(dtype_name(dtype)));
      expect_agree({op,
                    {},
                    {random_ints({2, 3}, 20, -100, 100, dtype), random_ints({3}, 21, -100, 100, dtype)},
                    {{dtype, {2, 3}}}});
      expect_agree({op,
                    {},
                    {random_ints({5, 7}, 22, -1000, 1000, dtype), random_ints({5, 7}, 23, -1000, 1000, dtype)},
                    {{dtype, {5, 7}}}});
    }
  }
}

OpCase batch_norm(const Shape& x, float epsilon, std::uint32_t seed) {
  const Shape c{x[1]};
  return {"BatchNormalization",
          {{"epsilon", epsilon}},
          {random_tensor(x, seed), random_tensor(c, seed + 1), random_tensor(c, seed + 2), random_tensor(c, seed + 3),
           random_tensor(c, seed + 4, 0.5f, 1.5f)},
          {{DType::f32, x}}};
}

TEST_F(CudaPointwiseOps, BatchNormalization) {
  expect_agree(batch_norm({2, 3, 4, 5}, 1e-5f, 30));
  expect_agree(batch_norm({4, 6}, 1e-3f, 31));
  expect_agree(batch_norm({2, 3, 5}, 1e-5f, 32));
}

OpCase layer_norm(const Shape& x, std::int64_t axis, bool bias, std::uint32_t seed, float low = -1.0f,
                  float high = 1.0f) {
  const std::size_t first = static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(x.rank()) : axis);
  const Shape normalised(std::vector<std::int64_t>(x.dims().begin() + first, x.dims().end()));
  OpCase op{"LayerNormalization",
            {{"axis", axis}, {"epsilon", 1e-5f}},
            {random_tensor(x, seed, low, high), random_tensor(normalised, seed + 1)},
            {{DType::f32, x}}};
  if (bias) op.inputs.push_back(random_tensor(normalised, seed + 2));
  return op;
}

TEST_F(CudaPointwiseOps, LayerNormalization) {
  expect_agree(layer_norm({2, 5, 16}, -1, true, 40));
  expect_agree(layer_norm({2, 5, 16}, 1, true, 41));
  expect_agree(layer_norm({3, 7}, -1, false, 42));
  expect_agree(layer_norm({4, 1000}, -1, true, 43));
  expect_agree(layer_norm({4, 64}, -1, true, 44, 100.0f, 101.0f));  // large mean, small variance
}

OpCase softmax(const Shape& x, std::int64_t axis, std::uint32_t seed) {
  return {"Softmax", {{"axis", axis}}, {random_tensor(x, seed, -5.0f, 5.0f)}, {{DType::f32, x}}};
}

TEST_F(CudaPointwiseOps, Softmax) {
  expect_agree(softmax({4, 10}, -1, 50));
  expect_agree(softmax({3, 1000}, 1, 51));     // rows longer than a block
  expect_agree(softmax({2, 3, 4, 5}, 1, 52));  // strided axis
  expect_agree(softmax({6, 4}, 0, 53));
  expect_agree(softmax({2, 3, 4, 5}, -2, 54));
}

OpCase pool(const char* op, Attributes attrs, const Shape& x, const Shape& y, std::uint32_t seed) {
  return {op, std::move(attrs), {random_tensor(x, seed)}, {{DType::f32, y}}};
}

TEST_F(CudaPointwiseOps, MaxPool) {
  expect_agree(pool("MaxPool", {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}},
                    {2, 3, 9, 9}, {2, 3, 5, 5}, 60));
  expect_agree(pool("MaxPool", {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", std::int64_t{1}}},
                    {1, 2, 8, 8}, {1, 2, 4, 4}, 61));
  expect_agree(pool("MaxPool", {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 0, 1}}},
                    {1, 1, 5, 5}, {1, 1, 3, 3}, 62));
  expect_agree(pool("MaxPool", {{"kernel_shape", Ints{2, 3}}}, {2, 2, 6, 7}, {2, 2, 5, 5}, 63));
}

TEST_F(CudaPointwiseOps, AveragePool) {
  for (std::int64_t include_pad : {0, 1}) {
    SCOPED_TRACE("count_include_pad=" + std::to_string(include_pad));
    expect_agree(pool("AveragePool",
                      {{"kernel_shape", Ints{3, 3}},
                       {"strides", Ints{2, 2}},
                       {"pads", Ints{1, 1, 1, 1}},
                       {"count_include_pad", include_pad}},
                      {2, 3, 9, 9}, {2, 3, 5, 5}, 70));
    expect_agree(pool("AveragePool",
                      {{"kernel_shape", Ints{3, 3}},
                       {"strides", Ints{2, 2}},
                       {"pads", Ints{1, 1, 1, 1}},
                       {"ceil_mode", std::int64_t{1}},
                       {"count_include_pad", include_pad}},
                      {1, 2, 8, 8}, {1, 2, 5, 5}, 71));
    expect_agree(pool("AveragePool",
                      {{"kernel_shape", Ints{2, 2}},
                       {"strides", Ints{2, 2}},
                       {"pads", Ints{1, 0, 0, 1}},
                       {"count_include_pad", include_pad}},
                      {1, 1, 5, 5}, {1, 1, 3, 3}, 72));
  }
}

TEST_F(CudaPointwiseOps, GlobalAveragePool) {
  expect_agree(pool("GlobalAveragePool", {}, {2, 3, 5, 7}, {2, 3, 1, 1}, 80));
  expect_agree(pool("GlobalAveragePool", {}, {2, 4, 10}, {2, 4, 1}, 81));
  expect_agree(pool("GlobalAveragePool", {}, {1, 2, 32, 32}, {1, 2, 1, 1}, 82));
}

}  // namespace
}  // namespace loom::gpu_testing
