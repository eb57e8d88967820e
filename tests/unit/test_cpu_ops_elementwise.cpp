// CPU backend: the first release's activations and broadcasting Add/Mul against hand values and
// double references (the rest of the elementwise family: test_cpu_ops_elementwise_*.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

std::vector<double> map_doubles(const Tensor& x, double (*f)(double)) {
  std::vector<double> out;
  for (float v : x.values<float>()) out.push_back(f(v));
  return out;
}

double gelu_erf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

// numpy broadcasting by multi-index, one output element at a time.
template <class T>
std::vector<double> broadcast_reference(const Tensor& a, const Tensor& b, const Shape& out, bool add) {
  const auto a_values = a.values<T>();
  const auto b_values = b.values<T>();
  const auto out_strides = strides_of(out);
  const auto offset_of = [&](const Shape& in, std::int64_t flat) {
    const auto in_strides = strides_of(in);
    std::int64_t offset = 0;
    for (std::size_t d = 0; d < out.rank(); ++d) {
      const std::int64_t index = (flat / out_strides[d]) % out[d];
      const std::size_t shift = out.rank() - in.rank();
      if (d < shift) continue;
      if (in[d - shift] != 1) offset += index * in_strides[d - shift];
    }
    return offset;
  };
  std::vector<double> result;
  for (std::int64_t i = 0; i < out.numel(); ++i) {
    const double x = static_cast<double>(a_values[offset_of(a.shape(), i)]);
    const double y = static_cast<double>(b_values[offset_of(b.shape(), i)]);
    result.push_back(add ? x + y : x * y);
  }
  return result;
}

}  // namespace

TEST(CpuOps, ReluHandValues) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {-1.0f, 0.0f, 2.5f, -0.5f, 3.0f, -7.0f});
  const Tensor y = run_cpu_op1("Relu", {}, {x}, Shape{2, 3});
  EXPECT_TRUE(all_close(y, {0, 0, 2.5, 0, 3, 0}, 0, 0));
}

TEST(CpuOps, SigmoidRandomAndExtremes) {
  const Tensor x = random_tensor(Shape{3, 50}, 11, -12.0f, 12.0f);
  const Tensor y = run_cpu_op1("Sigmoid", {}, {x}, Shape{3, 50});
  EXPECT_TRUE(all_close(y, map_doubles(x, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }), 1e-6, 1e-5));

  const Tensor extremes = Tensor::from<float>(Shape{4}, {-100.0f, 100.0f, 0.0f, -1.0f});
  const Tensor e = run_cpu_op1("Sigmoid", {}, {extremes}, Shape{4});
  EXPECT_TRUE(all_close(e, {0.0, 1.0, 0.5, 0.2689414213699951}, 1e-7, 1e-6));
}

TEST(CpuOps, TanhRandom) {
  const Tensor x = random_tensor(Shape{7, 13}, 12, -5.0f, 5.0f);
  const Tensor y = run_cpu_op1("Tanh", {}, {x}, Shape{7, 13});
  EXPECT_TRUE(all_close(y, map_doubles(x, [](double v) { return std::tanh(v); }), 1e-6, 1e-5));
}

TEST(CpuOps, GeluErfHandAndRandom) {
  const Tensor hand = Tensor::from<float>(Shape{4}, {1.0f, -2.0f, 0.5f, 0.0f});
  const Tensor y = run_cpu_op1("Gelu", {}, {hand}, Shape{4});
  // 0.5 x (1 + erf(x / sqrt 2)), evaluated in double precision by hand.
  EXPECT_TRUE(all_close(y, {0.8413447460685429, -0.04550026389635842, 0.34573123063700656, 0.0}, 1e-6, 1e-5));

  const Tensor x = random_tensor(Shape{5, 40}, 13, -6.0f, 6.0f);
  const Tensor r = run_cpu_op1("Gelu", {{"approximate", std::string("none")}}, {x}, Shape{5, 40});
  EXPECT_TRUE(all_close(r, map_doubles(x, gelu_erf), 1e-6, 1e-5));
}

TEST(CpuOps, GeluTanhHandAndRandom) {
  const Tensor hand = Tensor::from<float>(Shape{2}, {1.0f, -2.0f});
  const Tensor y = run_cpu_op1("Gelu", {{"approximate", std::string("tanh")}}, {hand}, Shape{2});
  EXPECT_TRUE(all_close(y, {0.8411919906082768, -0.04540230591222494}, 1e-6, 1e-5));

  const Tensor x = random_tensor(Shape{200}, 14, -6.0f, 6.0f);
  const Tensor r = run_cpu_op1("Gelu", {{"approximate", std::string("tanh")}}, {x}, Shape{200});
  EXPECT_TRUE(all_close(r, map_doubles(x, gelu_tanh), 1e-6, 1e-5));
}

TEST(CpuOps, GeluRejectsUnknownApproximation) {
  const Tensor x = random_tensor(Shape{4}, 1);
  EXPECT_EQ(create_error("Gelu", {{"approximate", std::string("fast")}}, {x}, {{DType::f32, Shape{4}}}),
            ErrorCode::unsupported);
}

TEST(CpuOps, FloatOpsRejectF16WithCudaHint) {
  const Tensor x = Tensor(DType::f16, Shape{4});
  auto backend = backend::make_cpu_backend();
  const std::vector<OpInput> inputs{x};
  const std::vector<OpOutput> outputs{{DType::f16, Shape{4}}};
  // Sigmoid rounds: 16-bit float math is the CUDA backend's (exact ops like Relu take f16 here).
  const Node node = make_node("Sigmoid", {}, 1, outputs);
  try {
    (void)backend->create_kernel(make_spec(node, inputs, outputs));
    FAIL() << "f16 Sigmoid should be unsupported on the CPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
    EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("test_Sigmoid"), std::string::npos) << e.what();
  }
}

TEST(CpuOps, AddSameShape) {
  const Tensor a = Tensor::from<float>(Shape{2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from<float>(Shape{2, 2}, {10, 20, 30, 40});
  EXPECT_TRUE(all_close(run_cpu_op1("Add", {}, {a, b}, Shape{2, 2}), {11, 22, 33, 44}, 0, 0));
}

TEST(CpuOps, AddBroadcastHandValues) {
  // [2, 1, 3] + [2, 1] -> [2, 2, 3]
  const Tensor a = Tensor::from<float>(Shape{2, 1, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from<float>(Shape{2, 1}, {100, 200});
  const Tensor y = run_cpu_op1("Add", {}, {a, b}, Shape{2, 2, 3});
  EXPECT_TRUE(all_close(y, {101, 102, 103, 201, 202, 203, 104, 105, 106, 204, 205, 206}, 0, 0));
}

TEST(CpuOps, AddBroadcastRandomShapes) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {Shape{4, 5, 6}, Shape{6}, Shape{4, 5, 6}},        // bias add
      {Shape{4, 5, 6}, Shape{5, 1}, Shape{4, 5, 6}},     // middle broadcast
      {Shape{1, 5, 1}, Shape{4, 1, 6}, Shape{4, 5, 6}},  // both broadcast
      {Shape{}, Shape{3, 4}, Shape{3, 4}},               // scalar on the left
      {Shape{2, 3, 1, 5}, Shape{2, 1, 4, 5}, Shape{2, 3, 4, 5}},
      {Shape{3, 0, 2}, Shape{2}, Shape{3, 0, 2}},  // empty
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed++);
    const Tensor b = random_tensor(c.b, seed++);
    EXPECT_TRUE(all_close(run_cpu_op1("Add", {}, {a, b}, c.out), broadcast_reference<float>(a, b, c.out, true)))
        << c.a.to_string() << " + " << c.b.to_string();
    EXPECT_TRUE(all_close(run_cpu_op1("Mul", {}, {a, b}, c.out), broadcast_reference<float>(a, b, c.out, false)))
        << c.a.to_string() << " * " << c.b.to_string();
  }
}

TEST(CpuOps, MulScalarHandValues) {
  const Tensor a = Tensor::from<float>(Shape{3}, {1.5f, -2.0f, 4.0f});
  const Tensor b = Tensor::from<float>(Shape{}, {2.0f});
  EXPECT_TRUE(all_close(run_cpu_op1("Mul", {}, {a, b}, Shape{3}), {3.0, -4.0, 8.0}, 0, 0));
}

TEST(CpuOps, AddMulInt64Broadcast) {
  const Tensor a = Tensor::from<std::int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from<std::int64_t>(Shape{3}, {10, -20, 5000000000LL});
  const Tensor sum = run_cpu_op1("Add", {}, {a, b}, Shape{2, 3}, DType::i64);
  EXPECT_TRUE(all_equal<std::int64_t>(sum, {11, -18, 5000000003LL, 14, -15, 5000000006LL}));
  const Tensor product = run_cpu_op1("Mul", {}, {a, b}, Shape{2, 3}, DType::i64);
  EXPECT_TRUE(all_equal<std::int64_t>(product, {10, -40, 15000000000LL, 40, -100, 30000000000LL}));
}

TEST(CpuOps, AddMulInt32Broadcast) {
  const Tensor a = Tensor::from<std::int32_t>(Shape{2, 1}, {3, -4});
  const Tensor b = Tensor::from<std::int32_t>(Shape{1, 3}, {1, 2, 3});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Add", {}, {a, b}, Shape{2, 3}, DType::i32), {4, 5, 6, -3, -2, -1}));
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Mul", {}, {a, b}, Shape{2, 3}, DType::i32), {3, 6, 9, -4, -8, -12}));
}

TEST(CpuOps, AddRejectsBadShapesAndMixedDtypes) {
  const Tensor a = random_tensor(Shape{2, 3}, 1);
  const Tensor b = random_tensor(Shape{4}, 2);
  EXPECT_EQ(create_error("Add", {}, {a, b}, {{DType::f32, Shape{2, 3}}}), ErrorCode::shape_mismatch);
  const Tensor c = random_tensor(Shape{3}, 3);
  // An output larger than the broadcast of the inputs is a planner bug, not a broadcast.
  EXPECT_EQ(create_error("Add", {}, {a, c}, {{DType::f32, Shape{5, 2, 3}}}), ErrorCode::shape_mismatch);
  const Tensor i = Tensor::from<std::int64_t>(Shape{3}, {1, 2, 3});
  EXPECT_EQ(create_error("Add", {}, {a, i}, {{DType::f32, Shape{2, 3}}}), ErrorCode::unsupported);
}
