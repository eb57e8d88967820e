// The reduce family on the CUDA backend against the CPU backend: Reduce* (the row kernel and the
// one-thread-per-output kernel), Softmax/LogSoftmax, LayerNormalization with its statistics
// outputs, ArgMax/ArgMin and TopK, in f32, f16 and the integer dtypes each op takes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using Ints = std::vector<std::int64_t>;
using CudaReduceOps = CudaOpTest;

constexpr Tolerance kExact{0, 0};

Shape reduced_shape(const Shape& s, const Ints& axes, bool keepdims) {
  std::vector<std::int64_t> dims;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const bool reduced =
        axes.empty() || std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(d)) != axes.end();
    if (!reduced)
      dims.push_back(s[d]);
    else if (keepdims)
      dims.push_back(1);
  }
  return Shape(dims);
}

OpCase reduce_case(const char* op, const Tensor& x, const Ints& axes, bool keepdims) {
  Attributes attrs{{"keepdims", std::int64_t{keepdims}}};
  if (!axes.empty()) attrs.set("axes", axes);
  return {op, attrs, {x}, {{x.dtype(), reduced_shape(x.shape(), axes, keepdims)}}};
}

TEST_F(CudaReduceOps, EveryFloatReductionOnEveryAxisPattern) {
  // Positive values keep ReduceLogSum and ReduceProd defined and the products in f16 range.
  const Tensor x = random_tensor({3, 4, 5}, 1, 0.5f, 1.5f);
  const std::vector<Ints> axis_sets = {{}, {0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1}};
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"}) {
    for (const Ints& axes : axis_sets) {
      SCOPED_TRACE(std::string(op) + " over " + std::to_string(axes.size()) + " axes");
      expect_agree(reduce_case(op, x, axes, true));
    }
  }
  expect_agree(reduce_case("ReduceMean", x, {1}, false));
}

TEST_F(CudaReduceOps, LongRowsAndManyOutputs) {
  const Tensor rows = random_tensor({64, 1000}, 2);
  expect_agree(reduce_case("ReduceMean", rows, {1}, true));
  expect_agree(reduce_case("ReduceMax", rows, {1}, false));
  expect_agree(reduce_case("ReduceSum", rows, {0}, true));  // 1000 outputs of 64 strided elements
  expect_agree(reduce_case("ReduceLogSumExp", rows, {1}, true));
  const Tensor all = random_tensor({100000}, 3);
  expect_agree(reduce_case("ReduceSum", all, {}, false), kF32Tolerance, Tolerance{5e-2, 1e-2});
  expect_agree(reduce_case("ReduceMin", all, {}, true));
  // A 4-d pattern that needs the general kernel: reduced, kept, reduced, kept.
  const Tensor x4 = random_tensor({6, 7, 8, 9}, 4);
  expect_agree(reduce_case("ReduceMean", x4, {0, 2}, true));
  expect_agree(reduce_case("ReduceL2", x4, {0, 2}, false));
}

TEST_F(CudaReduceOps, AxesInputNoopAndIntegers) {
  const Tensor x = random_tensor({3, 4, 2}, 5);
  expect_agree({"ReduceSum",
                {},
                {x, OpInput::initializer(Tensor::from<std::int64_t>({2}, {-1, 0}))},
                {{DType::f32, {1, 4, 1}}}});
  expect_agree({"ReduceSum",
                {{"noop_with_empty_axes", std::int64_t{1}}},
                {x, OpInput::initializer(Tensor(DType::i64, Shape{0}))},
                {{DType::f32, x.shape()}}},
               kExact, kExact);
  for (const DType dtype : {DType::i64, DType::i32}) {
    const Tensor xi = random_ints({5, 6, 7}, 6, -20, 20, dtype);
    for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin", "ReduceMean"})
      for (const Ints& axes : std::vector<Ints>{{}, {0}, {2}, {0, 2}})
        expect_agree(reduce_case(op, xi, axes, true), kExact);
    expect_agree(reduce_case("ReduceProd", random_ints({4, 5}, 7, -3, 3, dtype), {1}, true), kExact);
  }
}

TEST_F(CudaReduceOps, SoftmaxAndLogSoftmax) {
  const Tensor x = random_tensor({4, 5, 6}, 10, -4.0f, 4.0f);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    for (const std::int64_t axis : {0, 1, 2, -2}) expect_agree({op, {{"axis", axis}}, {x}, {{DType::f32, x.shape()}}});
    const Tensor rows = random_tensor({8, 3000}, 11, -10.0f, 10.0f);
    expect_agree({op, {}, {rows}, {{DType::f32, rows.shape()}}});
  }
  // Large inputs: the max is subtracted first.
  const Tensor big = Tensor::from<float>({2, 3}, {1000, 1001, 1002, -1000, -999, -998});
  expect_agree({"LogSoftmax", {}, {big}, {{DType::f32, big.shape()}}});
}

TEST_F(CudaReduceOps, LayerNormWithStatisticsOutputs) {
  const Tensor x = random_tensor({2, 3, 4}, 20, -2.0f, 2.0f);
  expect_agree({"LayerNormalization",
                {{"axis", std::int64_t{1}}, {"epsilon", 1e-3f}},
                {x, random_tensor({3, 4}, 21), random_tensor({3, 4}, 22)},
                {{DType::f32, x.shape()}, {DType::f32, {2, 1, 1}}, {DType::f32, {2, 1, 1}}}});
  const Tensor rows = random_tensor({16, 768}, 23);
  expect_agree({"LayerNormalization",
                {},
                {rows, random_tensor({768}, 24), OpInput::absent()},
                {{DType::f32, rows.shape()}, OpOutput::absent(), {DType::f32, {16, 1}}}});
}

TEST_F(CudaReduceOps, ArgMaxArgMin) {
  const Tensor rows = random_tensor({16, 1000}, 30);
  for (const char* op : {"ArgMax", "ArgMin"}) {
    expect_agree({op, {{"axis", std::int64_t{-1}}}, {rows}, {{DType::i64, {16, 1}}}}, kExact, kExact);
    expect_agree({op, {{"axis", std::int64_t{0}}, {"keepdims", std::int64_t{0}}}, {rows}, {{DType::i64, {1000}}}},
                 kExact, kExact);
  }
  // Many ties: small integer ranges, first and last index, both kernels.
  for (const DType dtype : {DType::i64, DType::i32}) {
    const Tensor ties = random_ints({6, 300}, 31, -2, 2, dtype);
    for (const std::int64_t last : {0, 1}) {
      expect_agree({"ArgMax", {{"axis", std::int64_t{1}}, {"select_last_index", last}}, {ties}, {{DType::i64, {6, 1}}}},
                   kExact, kExact);
      expect_agree(
          {"ArgMin", {{"axis", std::int64_t{0}}, {"select_last_index", last}}, {ties}, {{DType::i64, {1, 300}}}},
          kExact, kExact);
    }
  }
  // Integer-valued floats (exact in f16 too) with ties.
  const Tensor ft = Tensor::from<float>({4, 500}, [] {
    std::vector<float> v;
    for (int i = 0; i < 2000; ++i) v.push_back(static_cast<float>((i * 7919) % 5));
    return v;
  }());
  expect_agree(
      {"ArgMax", {{"axis", std::int64_t{1}}, {"select_last_index", std::int64_t{1}}}, {ft}, {{DType::i64, {4, 1}}}},
      kExact, kExact);
}

TEST_F(CudaReduceOps, TopK) {
  const auto k = [](std::int64_t value) { return OpInput::initializer(Tensor::from<std::int64_t>({1}, {value})); };
  const Tensor rows = random_tensor({8, 1000}, 40);
  for (const std::int64_t largest : {0, 1}) {
    expect_agree({"TopK", {{"largest", largest}}, {rows, k(10)}, {{DType::f32, {8, 10}}, {DType::i64, {8, 10}}}},
                 kExact, kExact);
    expect_agree({"TopK",
                  {{"axis", std::int64_t{0}}, {"largest", largest}},
                  {random_tensor({50, 6}, 41), k(5)},
                  {{DType::f32, {5, 6}}, {DType::i64, {5, 6}}}},
                 kExact, kExact);
  }
  // Ties resolved by the lower index on both backends.
  for (const DType dtype : {DType::i64, DType::i32}) {
    const Tensor ties = random_ints({3, 40, 2}, 42, 0, 4, dtype);
    expect_agree({"TopK", {{"axis", std::int64_t{1}}}, {ties, k(7)}, {{dtype, {3, 7, 2}}, {DType::i64, {3, 7, 2}}}},
                 kExact, kExact);
    expect_agree({"TopK",
                  {{"axis", std::int64_t{1}}, {"largest", std::int64_t{0}}},
                  {ties, k(40)},
                  {{dtype, {3, 40, 2}}, {DType::i64, {3, 40, 2}}}},
                 kExact, kExact);
  }
}

}  // namespace
}  // namespace loom::gpu_testing
