// CPU backend: the data-movement ops (Reshape, Flatten, Transpose, Concat, Gather) for several
// dtypes, against hand values and index-by-index references.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

Tensor iota_tensor(const Shape& shape, float start = 0.0f) {
  std::vector<float> values(static_cast<std::size_t>(shape.numel()));
  std::iota(values.begin(), values.end(), start);
  return Tensor::from<float>(shape, values);
}

Tensor shape_tensor(std::vector<std::int64_t> dims) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  return Tensor::from<std::int64_t>(Shape{rank}, dims);
}

// Element i of the output of a transpose, found by decomposing i over the output shape.
std::vector<double> transpose_reference(const Tensor& x, const std::vector<std::int64_t>& perm) {
  const Shape& in = x.shape();
  std::vector<std::int64_t> out_dims;
  for (auto p : perm) out_dims.push_back(in[p]);
  const Shape out(out_dims);
  const auto in_strides = strides_of(in);
  const auto out_strides = strides_of(out);
  std::vector<double> result;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < out.rank(); ++d) offset += (i / out_strides[d]) % out[d] * in_strides[perm[d]];
    result.push_back(x.values<float>()[offset]);
  }
  return result;
}

}  // namespace

TEST(CpuOps, ReshapeWithZeroAndMinusOne) {
  const Tensor x = iota_tensor(Shape{2, 3, 4});
  const std::vector<double> same = to_doubles(x);
  // 0 copies dim 0 (2), -1 is inferred (12 / 2 / 3 = 2)... as [2, -1] -> [2, 12].
  EXPECT_TRUE(all_close(run_cpu_op1("Reshape", {}, {x, OpInput::initializer(shape_tensor({0, -1}))}, Shape{2, 12}),
                        same, 0, 0));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Reshape", {}, {x, OpInput::initializer(shape_tensor({0, 0, 2, -1}))}, Shape{2, 3, 2, 2}),
                same, 0, 0));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Reshape", {}, {x, OpInput::initializer(shape_tensor({-1}))}, Shape{24}), same, 0, 0));
  // A shape that is not a constant: the kernel trusts the planner's output shape.
  EXPECT_TRUE(all_close(run_cpu_op1("Reshape", {}, {x, shape_tensor({4, 6})}, Shape{4, 6}), same, 0, 0));
  // The planner's shape must agree with the constant.
  EXPECT_EQ(create_error("Reshape", {}, {x, OpInput::initializer(shape_tensor({0, -1}))}, {{DType::f32, Shape{4, 6}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Reshape", {}, {x, shape_tensor({5, 5})}, {{DType::f32, Shape{5, 5}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuOps, ReshapeAllowZeroAndOtherDtypes) {
  const Tensor ids = Tensor::from<std::int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor y =
      run_cpu_op1("Reshape", {}, {ids, OpInput::initializer(shape_tensor({3, -1}))}, Shape{3, 2}, DType::i64);
  EXPECT_TRUE(all_equal<std::int64_t>(y, {1, 2, 3, 4, 5, 6}));
  // Without allowzero a 0 copies the input dim: [2, 3] -> [3, 3] is not a reshape of 6 elements.
  EXPECT_EQ(create_error("Reshape", {}, {ids, OpInput::initializer(shape_tensor({3, 0}))}, {{DType::i64, Shape{3, 2}}}),
            ErrorCode::shape_mismatch);
  // With allowzero a 0 is a real zero-sized dim; an empty input reshapes to it.
  const Tensor empty(DType::f32, Shape{0, 3});
  EXPECT_EQ(create_error("Reshape", {{"allowzero", std::int64_t{1}}},
                         {empty, OpInput::initializer(shape_tensor({3, 0}))}, {{DType::f32, Shape{3, 0}}}),
            std::nullopt);
}

TEST(CpuOps, Flatten) {
  const Tensor x = iota_tensor(Shape{2, 3, 4, 5});
  const std::vector<double> same = to_doubles(x);
  EXPECT_TRUE(all_close(run_cpu_op1("Flatten", {}, {x}, Shape{2, 60}), same, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Flatten", {{"axis", std::int64_t{0}}}, {x}, Shape{1, 120}), same, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Flatten", {{"axis", std::int64_t{-1}}}, {x}, Shape{24, 5}), same, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Flatten", {{"axis", std::int64_t{4}}}, {x}, Shape{120, 1}), same, 0, 0));
  EXPECT_EQ(create_error("Flatten", {}, {x}, {{DType::f32, Shape{6, 20}}}), ErrorCode::shape_mismatch);
}

TEST(CpuOps, TransposeHandValues) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(all_close(run_cpu_op1("Transpose", {}, {x}, Shape{3, 2}), {1, 4, 2, 5, 3, 6}, 0, 0));  // default: reverse
}

TEST(CpuOps, TransposePermutations) {
  const Tensor x = iota_tensor(Shape{2, 3, 4, 5});
  const std::vector<std::vector<std::int64_t>> perms = {
      {0, 2, 1, 3},                              // attention head split: inner dim stays contiguous
      {0, 2, 3, 1},                              // NCHW -> NHWC
      {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2},  // K^T
      {0, 1, 2, 3},                              // identity
  };
  for (const auto& perm : perms) {
    std::vector<std::int64_t> out;
    for (auto p : perm) out.push_back(x.shape()[p]);
    EXPECT_TRUE(
        all_close(run_cpu_op1("Transpose", {{"perm", perm}}, {x}, Shape(out)), transpose_reference(x, perm), 0, 0))
        << "perm " << perm[0] << perm[1] << perm[2] << perm[3];
  }
  // Size-1 dims and the reversed default on rank 3.
  const Tensor y = iota_tensor(Shape{1, 4, 1, 3});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Transpose", {{"perm", std::vector<std::int64_t>{2, 3, 0, 1}}}, {y}, Shape{1, 3, 1, 4}),
                transpose_reference(y, {2, 3, 0, 1}), 0, 0));
  const Tensor z = iota_tensor(Shape{3, 4, 5});
  EXPECT_TRUE(all_close(run_cpu_op1("Transpose", {}, {z}, Shape{5, 4, 3}), transpose_reference(z, {2, 1, 0}), 0, 0));
}

TEST(CpuOps, TransposeOtherDtypes) {
  const Tensor i64 = Tensor::from<std::int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Transpose", {}, {i64}, Shape{3, 2}, DType::i64), {1, 4, 2, 5, 3, 6}));
  const Tensor bytes = Tensor::from<std::uint8_t>(Shape{2, 2}, {1, 0, 0, 1});
  EXPECT_TRUE(
      all_equal<std::uint8_t>(run_cpu_op1("Transpose", {}, {bytes}, Shape{2, 2}, DType::boolean), {1, 0, 0, 1}));
  const Tensor halves = Tensor::from<f16_t>(Shape{2, 2}, {f16_t{1}, f16_t{2}, f16_t{3}, f16_t{4}});
  const Tensor t = run_cpu_op1("Transpose", {}, {halves}, Shape{2, 2}, DType::f16);
  const auto v = t.values<f16_t>();
  EXPECT_EQ(v[0].bits, 1);
  EXPECT_EQ(v[1].bits, 3);
  EXPECT_EQ(v[2].bits, 2);
  EXPECT_EQ(v[3].bits, 4);
  EXPECT_EQ(create_error("Transpose", {{"perm", std::vector<std::int64_t>{0, 0}}}, {i64}, {{DType::i64, Shape{2, 2}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuOps, ConcatHandValuesAndNegativeAxis) {
  const Tensor a = Tensor::from<float>(Shape{2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from<float>(Shape{2, 1}, {5, 6});
  const Tensor c = Tensor::from<float>(Shape{2, 3}, {7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(all_close(run_cpu_op1("Concat", {{"axis", std::int64_t{-1}}}, {a, b, c}, Shape{2, 6}),
                        {1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12}, 0, 0));
  const Tensor d = Tensor::from<float>(Shape{1, 2}, {9, 9});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Concat", {{"axis", std::int64_t{0}}}, {a, d}, Shape{3, 2}), {1, 2, 3, 4, 9, 9}, 0, 0));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Concat", {{"axis", std::int64_t{-2}}}, {d, a}, Shape{3, 2}), {9, 9, 1, 2, 3, 4}, 0, 0));
}

TEST(CpuOps, ConcatMiddleAxisIntsAndEmptyInput) {
  const Tensor a = Tensor::from<std::int32_t>(Shape{2, 1, 2}, {1, 2, 3, 4});
  const Tensor empty(DType::i32, Shape{2, 0, 2});
  const Tensor b = Tensor::from<std::int32_t>(Shape{2, 2, 2}, {5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(all_equal<std::int32_t>(
      run_cpu_op1("Concat", {{"axis", std::int64_t{1}}}, {a, empty, b}, Shape{2, 3, 2}, DType::i32),
      {1, 2, 5, 6, 7, 8, 3, 4, 9, 10, 11, 12}));
  EXPECT_EQ(create_error("Concat", {{"axis", std::int64_t{0}}}, {a, b}, {{DType::i32, Shape{4, 1, 2}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuOps, GatherAxis0NegativeIndices) {
  const Tensor data = Tensor::from<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  const Tensor indices = Tensor::from<std::int64_t>(Shape{2, 2}, {0, -1, 2, 1});
  EXPECT_TRUE(all_close(run_cpu_op1("Gather", {}, {data, indices}, Shape{2, 2, 2}), {1, 2, 5, 6, 5, 6, 3, 4}, 0, 0));
  // A scalar index drops the axis.
  const Tensor scalar = Tensor::from<std::int64_t>(Shape{}, {-2});
  EXPECT_TRUE(all_close(run_cpu_op1("Gather", {}, {data, scalar}, Shape{2}), {3, 4}, 0, 0));
}

TEST(CpuOps, GatherAxis1Int32Indices) {
  const Tensor data = Tensor::from<float>(Shape{2, 3, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const Tensor indices = Tensor::from<std::int32_t>(Shape{2}, {2, -3});
  EXPECT_TRUE(all_close(run_cpu_op1("Gather", {{"axis", std::int64_t{1}}}, {data, indices}, Shape{2, 2, 2}),
                        {5, 6, 1, 2, 11, 12, 7, 8}, 0, 0));
  const Tensor swap = Tensor::from<std::int32_t>(Shape{2}, {1, -2});
  EXPECT_TRUE(all_close(run_cpu_op1("Gather", {{"axis", std::int64_t{-1}}}, {data, swap}, Shape{2, 3, 2}),
                        {2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11}, 0, 0));
}

TEST(CpuOps, GatherEmbeddingInt64Table) {
  // An embedding lookup: [vocab, hidden] table, [batch, seq] ids.
  const Tensor table = Tensor::from<std::int64_t>(Shape{4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  const Tensor ids = Tensor::from<std::int64_t>(Shape{1, 3}, {3, 0, 3});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Gather", {}, {table, ids}, Shape{1, 3, 2}, DType::i64),
                                      {30, 31, 0, 1, 30, 31}));
}

TEST(CpuOps, GatherIndexOutOfRangeThrows) {
  const Tensor data = Tensor::from<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6});
  for (std::int64_t bad : {3LL, -4LL, 1000LL}) {
    const Tensor indices = Tensor::from<std::int64_t>(Shape{2}, {0, bad});
    try {
      (void)run_cpu_op1("Gather", {}, {data, indices}, Shape{2, 2});
      FAIL() << "index " << bad << " should be rejected";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("test_Gather"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(bad)), std::string::npos) << e.what();
    }
  }
  const Tensor float_indices = random_tensor(Shape{2}, 1);
  EXPECT_EQ(create_error("Gather", {}, {data, float_indices}, {{DType::f32, Shape{2, 2}}}), ErrorCode::unsupported);
}
