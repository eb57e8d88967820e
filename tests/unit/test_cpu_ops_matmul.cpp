// CPU backend: MatMul and Gemm against hand values and naive double-precision products. Sizes
// are chosen to reach every path of the shared GEMM (few rows, several row/depth/column blocks,
// transposed operands).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

// Batched matmul reference with numpy broadcasting of the batch dims; both inputs rank >= 2.
std::vector<double> matmul_reference(const Tensor& a, const Tensor& b, const Shape& out) {
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  const std::int64_t m = as[as.rank() - 2], k = as[as.rank() - 1], n = bs[bs.rank() - 1];
  const std::size_t batch_rank = out.rank() - 2;
  const auto av = a.values<float>();
  const auto bv = b.values<float>();
  std::vector<double> result(static_cast<std::size_t>(out.numel()));
  std::int64_t batches = 1;
  for (std::size_t d = 0; d < batch_rank; ++d) batches *= out[d];
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    // Decompose the batch index, then map it into each input (index 0 along size-1 dims).
    std::vector<std::int64_t> index(batch_rank);
    std::int64_t rest = batch;
    for (std::size_t d = batch_rank; d-- > 0;) {
      index[d] = rest % out[d];
      rest /= out[d];
    }
    const auto matrix_of = [&](const Shape& s) {
      std::int64_t flat = 0;
      const std::size_t shift = batch_rank - (s.rank() - 2);
      for (std::size_t d = shift; d < batch_rank; ++d) flat = flat * s[d - shift] + (s[d - shift] == 1 ? 0 : index[d]);
      return flat;
    };
    const std::int64_t a0 = matrix_of(as) * m * k, b0 = matrix_of(bs) * k * n;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (std::int64_t p = 0; p < k; ++p) sum += double(av[a0 + i * k + p]) * bv[b0 + p * n + j];
        result[(batch * m + i) * n + j] = sum;
      }
  }
  return result;
}

// Gemm reference: alpha * op(A) op(B) + beta * broadcast(C).
std::vector<double> gemm_reference(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb, double alpha,
                                   double beta) {
  const std::int64_t m = ta ? a.shape()[1] : a.shape()[0];
  const std::int64_t k = ta ? a.shape()[0] : a.shape()[1];
  const std::int64_t n = tb ? b.shape()[0] : b.shape()[1];
  const auto av = a.values<float>();
  const auto bv = b.values<float>();
  std::vector<double> result;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p)
        sum += double(ta ? av[p * m + i] : av[i * k + p]) * (tb ? bv[j * k + p] : bv[p * n + j]);
      double bias = 0;
      if (c) {
        const Shape& cs = c->shape();
        const std::int64_t ci = cs.rank() == 2 && cs[0] != 1 ? i : 0;
        const std::int64_t cj = cs.rank() >= 1 && cs[cs.rank() - 1] != 1 ? j : 0;
        const std::int64_t cols = cs.rank() >= 1 ? cs[cs.rank() - 1] : 1;
        bias = c->values<float>()[ci * cols + cj];
      }
      result.push_back(alpha * sum + beta * bias);
    }
  return result;
}

}  // namespace

TEST(CpuOps, MatMulHandValues) {
  const Tensor a = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from<float>(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  // [1 2 3; 4 5 6] x [7 8; 9 10; 11 12] = [58 64; 139 154]
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {a, b}, Shape{2, 2}), {58, 64, 139, 154}, 0, 0));
}

TEST(CpuOps, MatMulBatchedBroadcast) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {Shape{2, 1, 4, 5}, Shape{3, 5, 6}, Shape{2, 3, 4, 6}},  // both broadcast
      {Shape{2, 3, 4, 5}, Shape{5, 7}, Shape{2, 3, 4, 7}},     // shared B: one tall GEMM
      {Shape{4, 5}, Shape{3, 5, 6}, Shape{3, 4, 6}},           // shared A
      {Shape{3, 9, 17}, Shape{3, 17, 33}, Shape{3, 9, 33}},    // plain batch
      {Shape{1, 2, 3}, Shape{1, 3, 4}, Shape{1, 2, 4}},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed++);
    const Tensor b = random_tensor(c.b, seed++);
    EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {a, b}, c.out), matmul_reference(a, b, c.out), 1e-5, 1e-5))
        << c.a.to_string() << " x " << c.b.to_string();
  }
}

TEST(CpuOps, MatMulVectors) {
  const Tensor v = Tensor::from<float>(Shape{3}, {1, 2, 3});
  const Tensor m = Tensor::from<float>(Shape{3, 2}, {1, 0, 0, 1, 1, 1});
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {v, m}, Shape{2}), {4, 5}, 0, 0));  // [3] x [3, 2]
  const Tensor m2 = Tensor::from<float>(Shape{2, 3}, {1, 1, 1, 0, 2, 0});
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {m2, v}, Shape{2}), {6, 4}, 0, 0));  // [2, 3] x [3]
}

TEST(CpuOps, MatMulLargeCrossesAllBlocks) {
  // 130 rows > one row block, depth 300 > one depth block, 1100 columns > one column block.
  const Tensor a = random_tensor(Shape{130, 300}, 21);
  const Tensor b = random_tensor(Shape{300, 1100}, 22);
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {a, b}, Shape{130, 1100}), matmul_reference(a, b, Shape{130, 1100}),
                        1e-4, 1e-4));
}

TEST(CpuOps, MatMulFewRows) {
  for (std::int64_t rows : {1, 3, 4, 5}) {
    const Tensor a = random_tensor(Shape{rows, 600}, 30 + static_cast<std::uint32_t>(rows));
    const Tensor b = random_tensor(Shape{600, 530}, 40);
    EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {a, b}, Shape{rows, 530}), matmul_reference(a, b, Shape{rows, 530}),
                          1e-4, 1e-4))
        << rows << " rows";
  }
}

TEST(CpuOps, MatMulRejectsMismatchedInner) {
  const Tensor a = random_tensor(Shape{2, 3}, 1);
  const Tensor b = random_tensor(Shape{4, 2}, 2);
  EXPECT_EQ(create_error("MatMul", {}, {a, b}, {{DType::f32, Shape{2, 2}}}), ErrorCode::shape_mismatch);
  const Tensor c = random_tensor(Shape{3, 2}, 3);
  EXPECT_EQ(create_error("MatMul", {}, {a, c}, {{DType::f32, Shape{2, 3}}}), ErrorCode::shape_mismatch);
}

TEST(CpuOps, GemmHandValues) {
  const Tensor a = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from<float>(Shape{3, 2}, {7, 8, 9, 10, 11, 12});
  const Tensor c = Tensor::from<float>(Shape{2}, {1, -1});
  // 0.5 * [58 64; 139 154] + 2 * [1 -1; 1 -1]
  const Tensor y = run_cpu_op1("Gemm", {{"alpha", 0.5f}, {"beta", 2.0f}}, {a, b, c}, Shape{2, 2});
  EXPECT_TRUE(all_close(y, {31, 30, 71.5, 75}, 0, 0));
}

TEST(CpuOps, GemmTransposesAlphaBetaAndCBroadcast) {
  struct Case {
    std::int64_t m, k, n;
  };
  const std::vector<Case> sizes = {{7, 9, 5}, {33, 270, 20}, {2, 300, 17}, {1, 40, 10}};
  std::uint32_t seed = 50;
  for (const Case& s : sizes) {
    for (int ta = 0; ta < 2; ++ta) {
      for (int tb = 0; tb < 2; ++tb) {
        const Tensor a = random_tensor(ta ? Shape{s.k, s.m} : Shape{s.m, s.k}, seed++);
        const Tensor b = random_tensor(tb ? Shape{s.n, s.k} : Shape{s.k, s.n}, seed++);
        const std::vector<Shape> c_shapes = {Shape{}, Shape{s.n}, Shape{s.m, 1}, Shape{1, s.n}, Shape{s.m, s.n}};
        Attributes attrs{{"alpha", 0.75f}, {"beta", -1.5f}, {"transA", std::int64_t{ta}}, {"transB", std::int64_t{tb}}};
        for (const Shape& cs : c_shapes) {
          const Tensor c = random_tensor(cs, seed++);
          EXPECT_TRUE(all_close(run_cpu_op1("Gemm", attrs, {a, b, c}, Shape{s.m, s.n}),
                                gemm_reference(a, b, &c, ta, tb, 0.75, -1.5), 1e-4, 1e-4))
              << s.m << "x" << s.k << "x" << s.n << " transA " << ta << " transB " << tb << " C " << cs.to_string();
        }
        // Without C.
        EXPECT_TRUE(all_close(run_cpu_op1("Gemm", attrs, {a, b, OpInput::absent()}, Shape{s.m, s.n}),
                              gemm_reference(a, b, nullptr, ta, tb, 0.75, 0.0), 1e-4, 1e-4));
        EXPECT_TRUE(all_close(run_cpu_op1("Gemm", attrs, {a, b}, Shape{s.m, s.n}),
                              gemm_reference(a, b, nullptr, ta, tb, 0.75, 0.0), 1e-4, 1e-4));
      }
    }
  }
}

TEST(CpuOps, GemmBetaZeroIgnoresC) {
  const Tensor a = random_tensor(Shape{4, 6}, 1);
  const Tensor b = random_tensor(Shape{6, 3}, 2);
  const Tensor c = random_tensor(Shape{4, 3}, 3);
  EXPECT_TRUE(all_close(run_cpu_op1("Gemm", {{"beta", 0.0f}}, {a, b, c}, Shape{4, 3}),
                        gemm_reference(a, b, nullptr, false, false, 1.0, 0.0), 1e-5, 1e-5));
}

TEST(CpuOps, GemmRejectsBadShapes) {
  const Tensor a = random_tensor(Shape{4, 6}, 1);
  const Tensor b = random_tensor(Shape{5, 3}, 2);
  EXPECT_EQ(create_error("Gemm", {}, {a, b}, {{DType::f32, Shape{4, 3}}}), ErrorCode::shape_mismatch);
  const Tensor b2 = random_tensor(Shape{6, 3}, 2);
  const Tensor c = random_tensor(Shape{2, 3}, 3);  // does not broadcast to [4, 3]
  EXPECT_EQ(create_error("Gemm", {}, {a, b2, c}, {{DType::f32, Shape{4, 3}}}), ErrorCode::shape_mismatch);
}

namespace {

// The same values under another shape (numpy's 1-D promotion is a reshape).
Tensor reshaped(const Tensor& t, const Shape& shape) {
  const auto v = t.values<float>();
  return Tensor::from<float>(shape, std::vector<float>(v.begin(), v.end()));
}

}  // namespace

TEST(CpuOps, MatMulVectorsWithBatches) {
  // 1-D A is [1, K] and 1-D B is [K, 1]; the added dimension is dropped from Y.
  const Tensor v = random_tensor(Shape{5}, 61);
  const Tensor batched_b = random_tensor(Shape{2, 3, 5, 4}, 62);
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {v, batched_b}, Shape{2, 3, 4}),
                        matmul_reference(reshaped(v, Shape{1, 5}), batched_b, Shape{2, 3, 1, 4}), 1e-5, 1e-5));
  const Tensor batched_a = random_tensor(Shape{3, 1, 6, 5}, 63);
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {batched_a, v}, Shape{3, 1, 6}),
                        matmul_reference(batched_a, reshaped(v, Shape{5, 1}), Shape{3, 1, 6, 1}), 1e-5, 1e-5));
  // [5] x [5] is a dot product with shape [].
  const Tensor u = random_tensor(Shape{5}, 64);
  double dot = 0;
  for (std::int64_t i = 0; i < 5; ++i) dot += double(u.values<float>()[i]) * v.values<float>()[i];
  EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {u, v}, Shape{}), {dot}, 1e-6, 1e-5));
}

TEST(CpuOps, MatMulBroadcastOfEveryRank) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {Shape{2, 1, 3, 4, 5}, Shape{3, 1, 5, 2}, Shape{2, 3, 3, 4, 2}},  // rank 5 against rank 4
      {Shape{1, 4, 5}, Shape{2, 1, 5, 3}, Shape{2, 1, 4, 3}},
      {Shape{3, 1, 2, 5}, Shape{1, 4, 5, 2}, Shape{3, 4, 2, 2}},
  };
  std::uint32_t seed = 70;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed++);
    const Tensor b = random_tensor(c.b, seed++);
    EXPECT_TRUE(all_close(run_cpu_op1("MatMul", {}, {a, b}, c.out), matmul_reference(a, b, c.out), 1e-5, 1e-5))
        << c.a.to_string() << " x " << c.b.to_string();
  }
}

TEST(CpuOps, MatMulErrorsNameTheOp) {
  const Tensor a = random_tensor(Shape{2, 3, 4}, 1);
  const Tensor b = random_tensor(Shape{3, 4, 2}, 2);  // batch 2 vs 3 does not broadcast
  const std::vector<OpInput> inputs{a, b};
  const std::vector<OpOutput> outputs{{DType::f32, Shape{3, 3, 2}}};
  const Node node = make_node("MatMul", {}, inputs.size(), outputs, &inputs);
  try {
    (void)backend::make_cpu_backend()->create_kernel(make_spec(node, inputs, outputs));
    FAIL() << "batch dims 2 and 3 should be rejected";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    EXPECT_NE(std::string(e.what()).find("MatMul"), std::string::npos) << e.what();
  }
}
