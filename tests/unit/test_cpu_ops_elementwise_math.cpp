// CPU backend: the unary math ops, broadcasting Sub/Div/Pow/PRelu, comparisons and logic, against
// hand values and naive double-precision loops written here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

using Bools = std::vector<std::uint8_t>;

std::vector<double> map_values(const Tensor& x, const std::function<double(double)>& f) {
  std::vector<double> out;
  for (float v : x.values<float>()) out.push_back(f(v));
  return out;
}

// The flat index of `in` (numpy-broadcast to `out`) that output element `flat` reads.
std::int64_t source_index(const Shape& in, const Shape& out, std::int64_t flat) {
  const auto out_strides = strides_of(out);
  const auto in_strides = strides_of(in);
  const std::size_t shift = out.rank() - in.rank();
  std::int64_t offset = 0;
  for (std::size_t d = shift; d < out.rank(); ++d) {
    const std::int64_t index = (flat / out_strides[d]) % out[d];
    if (in[d - shift] != 1) offset += index * in_strides[d - shift];
  }
  return offset;
}

// out[i] = f(a[.], b[.]) by multi-index, one output element at a time.
template <class R, class A, class B, class F>
std::vector<R> naive_broadcast(const Tensor& a, const Tensor& b, const Shape& out, F f) {
  const auto av = a.values<A>();
  const auto bv = b.values<B>();
  std::vector<R> result;
  for (std::int64_t i = 0; i < out.numel(); ++i)
    result.push_back(f(av[source_index(a.shape(), out, i)], bv[source_index(b.shape(), out, i)]));
  return result;
}

Tensor ints64(const Shape& shape, std::vector<std::int64_t> values) {
  return Tensor::from<std::int64_t>(shape, values);
}
Tensor ints32(const Shape& shape, std::vector<std::int32_t> values) {
  return Tensor::from<std::int32_t>(shape, values);
}
Tensor bools(const Shape& shape, Bools values) { return Tensor::from<std::uint8_t>(shape, values); }

std::string creation_message(const std::string& op, Attributes attrs, const std::vector<OpInput>& inputs,
                             const std::vector<OpOutput>& outputs) {
  auto backend = backend::make_cpu_backend();
  const Node node = make_node(op, std::move(attrs), inputs.size(), outputs, &inputs);
  try {
    (void)backend->create_kernel(make_spec(node, inputs, outputs));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---------------------------------------------------------------- unary

TEST(CpuElementwise, FloatUnaryOpsMatchStdMath) {
  struct Case {
    const char* op;
    Attributes attrs;
    float low, high;
    std::function<double(double)> reference;
  };
  const std::vector<Case> cases = {
      {"LeakyRelu", {}, -3, 3, [](double x) { return x < 0 ? 0.01 * x : x; }},
      {"LeakyRelu", {{"alpha", 0.3f}}, -3, 3, [](double x) { return x < 0 ? 0.3 * x : x; }},
      {"Elu", {}, -4, 3, [](double x) { return x < 0 ? std::exp(x) - 1.0 : x; }},
      {"Elu", {{"alpha", 2.0f}}, -4, 3, [](double x) { return x < 0 ? 2.0 * (std::exp(x) - 1.0) : x; }},
      {"HardSigmoid", {}, -6, 6, [](double x) { return std::max(0.0, std::min(1.0, 0.2 * x + 0.5)); }},
      {"HardSigmoid",
       {{"alpha", 0.5f}, {"beta", 0.6f}},
       -3,
       3,
       [](double x) { return std::max(0.0, std::min(1.0, 0.5 * x + 0.6)); }},
      {"HardSwish", {}, -5, 5, [](double x) { return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5)); }},
      {"Erf", {}, -3, 3, [](double x) { return std::erf(x); }},
      {"Softplus", {}, -20, 20, [](double x) { return std::log(1.0 + std::exp(x)); }},
      {"Sqrt", {}, 0, 9, [](double x) { return std::sqrt(x); }},
      {"Reciprocal", {}, 0.5f, 4, [](double x) { return 1.0 / x; }},
      {"Exp", {}, -5, 5, [](double x) { return std::exp(x); }},
      {"Log", {}, 0.01f, 10, [](double x) { return std::log(x); }},
      {"Neg", {}, -5, 5, [](double x) { return -x; }},
      {"Abs", {}, -5, 5, [](double x) { return std::fabs(x); }},
      {"Relu", {}, -5, 5, [](double x) { return x > 0 ? x : 0.0; }},
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    const Tensor x = random_tensor(Shape{4, 25}, seed++, c.low, c.high);
    const Tensor y = run_cpu_op1(c.op, c.attrs, {x}, Shape{4, 25});
    EXPECT_TRUE(all_close(y, map_values(x, c.reference), 1e-6, 1e-5));
  }
}

TEST(CpuElementwise, UnaryHandValuesAndEdges) {
  const Tensor x = Tensor::from<float>(Shape{4}, {-2.0f, 0.0f, 3.0f, 100.0f});
  EXPECT_TRUE(all_close(run_cpu_op1("HardSwish", {}, {x}, Shape{4}), {-1.0 / 3.0, 0.0, 3.0, 100.0}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(run_cpu_op1("Softplus", {}, {x}, Shape{4}),
                        {0.12692801104297263, 0.6931471805599453, 3.048587351573742, 100.0}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(run_cpu_op1("Elu", {}, {x}, Shape{4}), {-0.8646647167633873, 0.0, 3.0, 100.0}, 1e-6, 1e-6));
  const Tensor y = run_cpu_op1("Log", {}, {Tensor::from<float>(Shape{2}, {0.0f, -1.0f})}, Shape{2});
  EXPECT_EQ(y.values<float>()[0], -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(y.values<float>()[1]));
  const Tensor r = run_cpu_op1("Reciprocal", {}, {Tensor::from<float>(Shape{1}, {0.0f})}, Shape{1});
  EXPECT_EQ(r.values<float>()[0], std::numeric_limits<float>::infinity());
}

TEST(CpuElementwise, IntegerNegAbsRelu) {
  const auto min64 = std::numeric_limits<std::int64_t>::min();
  const Tensor a = ints64(Shape{5}, {-3, 0, 7, min64, -1});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Neg", {}, {a}, Shape{5}, DType::i64), {3, 0, -7, min64, 1}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Abs", {}, {a}, Shape{5}, DType::i64), {3, 0, 7, min64, 1}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Relu", {}, {a}, Shape{5}, DType::i64), {0, 0, 7, 0, 0}));
  const Tensor b = ints32(Shape{3}, {-5, 5, 0});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Neg", {}, {b}, Shape{3}, DType::i32), {5, -5, 0}));
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Abs", {}, {b}, Shape{3}, DType::i32), {5, 5, 0}));
}

TEST(CpuElementwise, ExactUnaryOpsTakeF16) {
  const Tensor x = Tensor::from<float>(Shape{4}, {-1.5f, 0.25f, 2.0f, -0.0f}).to(DType::f16);
  const Tensor y = run_cpu_op1("Abs", {}, {x}, Shape{4}, DType::f16).to(DType::f32);
  EXPECT_TRUE(all_close(y, {1.5, 0.25, 2.0, 0.0}, 0, 0));
  const Tensor r = run_cpu_op1("Relu", {}, {x}, Shape{4}, DType::f16).to(DType::f32);
  EXPECT_TRUE(all_close(r, {0.0, 0.25, 2.0, 0.0}, 0, 0));
}

TEST(CpuElementwise, NotFlipsBools) {
  const Tensor x = bools(Shape{2, 2}, {1, 0, 0, 1});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Not", {}, {x}, Shape{2, 2}, DType::boolean), {0, 1, 1, 0}));
}

TEST(CpuElementwise, UnaryDtypeErrorsNameTheOp) {
  const Tensor i = ints64(Shape{2}, {1, 2});
  const std::string message = creation_message("Sqrt", {}, {i}, {{DType::i64, Shape{2}}});
  EXPECT_NE(message.find("Sqrt"), std::string::npos) << message;
  EXPECT_NE(message.find("i64"), std::string::npos) << message;
  EXPECT_EQ(create_error("Not", {}, {random_tensor(Shape{2}, 1)}, {{DType::f32, Shape{2}}}), ErrorCode::unsupported);
  EXPECT_EQ(create_error("Exp", {}, {random_tensor(Shape{2}, 1)}, {{DType::f32, Shape{3}}}), ErrorCode::shape_mismatch);
}

// ---------------------------------------------------------------- binary arithmetic

TEST(CpuElementwise, SubDivFloatBroadcast) {
  struct Case {
    Shape a, b, out;
  };
  const std::vector<Case> cases = {
      {Shape{3, 4}, Shape{3, 4}, Shape{3, 4}},
      {Shape{2, 3, 4}, Shape{4}, Shape{2, 3, 4}},
      {Shape{3, 1}, Shape{1, 5}, Shape{3, 5}},
      {Shape{}, Shape{2, 2}, Shape{2, 2}},
  };
  std::uint32_t seed = 200;
  for (const Case& c : cases) {
    const Tensor a = random_tensor(c.a, seed++, -2.0f, 2.0f);
    const Tensor b = random_tensor(c.b, seed++, 0.5f, 3.0f);
    const auto sub = naive_broadcast<double, float, float>(a, b, c.out, [](double x, double y) { return x - y; });
    const auto div = naive_broadcast<double, float, float>(a, b, c.out, [](double x, double y) { return x / y; });
    EXPECT_TRUE(all_close(run_cpu_op1("Sub", {}, {a, b}, c.out), sub)) << c.a.to_string() << " - " << c.b.to_string();
    EXPECT_TRUE(all_close(run_cpu_op1("Div", {}, {a, b}, c.out), div)) << c.a.to_string() << " / " << c.b.to_string();
  }
}

TEST(CpuElementwise, IntegerSubDivTruncateLikeC) {
  const Tensor a = ints64(Shape{2, 3}, {7, -7, 7, -7, 0, 9});
  const Tensor b = ints64(Shape{3}, {2, 2, -2});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Div", {}, {a, b}, Shape{2, 3}, DType::i64), {3, -3, -3, -3, 0, -4}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Sub", {}, {a, b}, Shape{2, 3}, DType::i64), {5, -9, 9, -9, -2, 11}));
  const Tensor c = ints32(Shape{3}, {10, -10, 5});
  const Tensor d = ints32(Shape{1}, {3});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Div", {}, {c, d}, Shape{3}, DType::i32), {3, -3, 1}));
  // Undefined in C and ONNX; defined here so the process never traps.
  const auto min32 = std::numeric_limits<std::int32_t>::min();
  const Tensor e = ints32(Shape{2}, {5, min32});
  const Tensor f = ints32(Shape{2}, {0, -1});
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Div", {}, {e, f}, Shape{2}, DType::i32), {0, min32}));
}

TEST(CpuElementwise, IntegerArithmeticWraps) {
  const auto max64 = std::numeric_limits<std::int64_t>::max();
  const auto min64 = std::numeric_limits<std::int64_t>::min();
  const Tensor a = ints64(Shape{1}, {max64});
  const Tensor one = ints64(Shape{1}, {1});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Add", {}, {a, one}, Shape{1}, DType::i64), {min64}));
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Sub", {}, {ints64(Shape{1}, {min64}), one}, Shape{1}, DType::i64), {max64}));
}

TEST(CpuElementwise, PowFloatAndIntegerExponents) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, -2, 0.5f, 4});
  const Tensor yf = Tensor::from<float>(Shape{3}, {2, 3, 0.5f});
  EXPECT_TRUE(all_close(run_cpu_op1("Pow", {}, {x, yf}, Shape{2, 3}), {1, 8, std::sqrt(3.0), 4, 0.125, 2}, 1e-6, 1e-6));
  const Tensor y64 = ints64(Shape{3}, {4, 5, 6});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Pow", {}, {Tensor::from<float>(Shape{3}, {1, 2, 3}), y64}, Shape{3}), {1, 32, 729}, 0, 0));
  const Tensor y32 = ints32(Shape{}, {-2});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Pow", {}, {Tensor::from<float>(Shape{2}, {2, -4}), y32}, Shape{2}), {0.25, 0.0625}, 0, 0));
  // A negative base with a fractional exponent is NaN, as in C.
  const Tensor nan =
      run_cpu_op1("Pow", {}, {Tensor::from<float>(Shape{1}, {-8}), Tensor::from<float>(Shape{1}, {0.5f})}, Shape{1});
  EXPECT_TRUE(std::isnan(nan.values<float>()[0]));
}

TEST(CpuElementwise, PowIntegerBase) {
  const Tensor base = ints64(Shape{5}, {1, 2, 3, -2, 2});
  const Tensor exponent = ints64(Shape{5}, {4, 5, 6, 3, -1});
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("Pow", {}, {base, exponent}, Shape{5}, DType::i64), {1, 32, 729, -8, 0}));
  const Tensor b32 = ints32(Shape{3}, {1, 2, 3});
  const Tensor e32 = Tensor::from<float>(Shape{3}, {4, 5, 0.5f});  // float exponent: truncated real power
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("Pow", {}, {b32, e32}, Shape{3}, DType::i32), {1, 32, 1}));
}

TEST(CpuElementwise, PReluBroadcastsSlope) {
  const Tensor x = random_tensor(Shape{2, 3, 4}, 300, -2.0f, 2.0f);
  const Tensor slope = random_tensor(Shape{3, 1}, 301, 0.0f, 1.0f);
  const auto expected =
      naive_broadcast<double, float, float>(x, slope, x.shape(), [](double v, double s) { return v < 0 ? s * v : v; });
  EXPECT_TRUE(all_close(run_cpu_op1("PRelu", {}, {x, slope}, x.shape()), expected, 1e-7, 1e-6));
  // The slope never grows X: [3] slope on [3, 1] X would broadcast to [3, 3].
  EXPECT_EQ(create_error("PRelu", {}, {random_tensor(Shape{3, 1}, 1), random_tensor(Shape{3}, 2)},
                         {{DType::f32, Shape{3, 3}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuElementwise, ArithmeticRejectsBoolAndMixedDtypes) {
  const Tensor b = bools(Shape{2}, {1, 0});
  std::string message = creation_message("Sub", {}, {b, b}, {{DType::boolean, Shape{2}}});
  EXPECT_NE(message.find("Sub"), std::string::npos) << message;
  EXPECT_NE(message.find("bool"), std::string::npos) << message;
  const Tensor f = random_tensor(Shape{2}, 1);
  EXPECT_EQ(create_error("Div", {}, {f, ints64(Shape{2}, {1, 2})}, {{DType::f32, Shape{2}}}), ErrorCode::unsupported);
  const Tensor h = f.to(DType::f16);
  message = creation_message("Mul", {}, {h, h}, {{DType::f16, Shape{2}}});
  EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
}

// ---------------------------------------------------------------- comparison and logic

TEST(CpuElementwise, ComparisonsBroadcastToBool) {
  const Tensor a = random_tensor(Shape{3, 4}, 400, -1.0f, 1.0f);
  Tensor b = random_tensor(Shape{4}, 401, -1.0f, 1.0f);
  b.values<float>()[2] = a.values<float>()[6];  // one equal pair
  const Shape out{3, 4};
  const auto check = [&](const char* op, auto predicate) {
    const auto expected = naive_broadcast<std::uint8_t, float, float>(a, b, out, predicate);
    EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1(op, {}, {a, b}, out, DType::boolean), expected)) << op;
  };
  check("Equal", [](float x, float y) -> std::uint8_t { return x == y; });
  check("Less", [](float x, float y) -> std::uint8_t { return x < y; });
  check("Greater", [](float x, float y) -> std::uint8_t { return x > y; });
  check("LessOrEqual", [](float x, float y) -> std::uint8_t { return x <= y; });
  check("GreaterOrEqual", [](float x, float y) -> std::uint8_t { return x >= y; });
}

TEST(CpuElementwise, ComparisonsOnIntegersAndBools) {
  const Tensor a = ints64(Shape{2, 2}, {1, 5, -3, 7});
  const Tensor b = ints64(Shape{2}, {5, 5});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Equal", {}, {a, b}, Shape{2, 2}, DType::boolean), {0, 1, 0, 0}));
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Less", {}, {a, b}, Shape{2, 2}, DType::boolean), {1, 0, 1, 0}));
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Greater", {}, {a, b}, Shape{2, 2}, DType::boolean), {0, 0, 0, 1}));
  const Tensor c = ints32(Shape{3}, {4, 0, -2});
  const Tensor d = ints32(Shape{3}, {4, 1, -2});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Equal", {}, {c, d}, Shape{3}, DType::boolean), {1, 0, 1}));
  const Tensor p = bools(Shape{4}, {1, 1, 0, 0});
  const Tensor q = bools(Shape{4}, {1, 0, 1, 0});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Equal", {}, {p, q}, Shape{4}, DType::boolean), {1, 0, 0, 1}));
  // Ordering bools is not an ONNX op.
  EXPECT_EQ(create_error("Less", {}, {p, q}, {{DType::boolean, Shape{4}}}), ErrorCode::unsupported);
}

TEST(CpuElementwise, LogicOpsBroadcast) {
  const Tensor a = bools(Shape{2, 2}, {1, 1, 0, 0});
  const Tensor b = bools(Shape{2}, {1, 0});
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("And", {}, {a, b}, Shape{2, 2}, DType::boolean), {1, 0, 0, 0}));
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Or", {}, {a, b}, Shape{2, 2}, DType::boolean), {1, 1, 1, 0}));
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("Xor", {}, {a, b}, Shape{2, 2}, DType::boolean), {0, 1, 1, 0}));
  const Tensor c = bools(Shape{3, 1, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor d = bools(Shape{2, 1}, {1, 0});
  const auto expected = naive_broadcast<std::uint8_t, std::uint8_t, std::uint8_t>(
      c, d, Shape{3, 2, 2}, [](std::uint8_t x, std::uint8_t y) -> std::uint8_t { return x && y; });
  EXPECT_TRUE(all_equal<std::uint8_t>(run_cpu_op1("And", {}, {c, d}, Shape{3, 2, 2}, DType::boolean), expected));
  const std::string message = creation_message("And", {}, {random_tensor(Shape{2}, 1), random_tensor(Shape{2}, 2)},
                                               {{DType::boolean, Shape{2}}});
  EXPECT_NE(message.find("And"), std::string::npos) << message;
}
