// CPU backend: the reduce family (Reduce*, Softmax/LogSoftmax, LayerNormalization with its
// statistics outputs, ArgMax/ArgMin, TopK) against hand values and naive references written here,
// plus the shape inference of those ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "graph/ops.hpp"
#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

using Ints = std::vector<std::int64_t>;

Tensor iota_tensor(const Shape& shape, float start = 1.0f) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  std::iota(v.begin(), v.end(), start);
  return Tensor::from<float>(shape, v);
}

// Multi-index of flat position `flat` in `shape`.
Ints unravel(std::int64_t flat, const Shape& shape) {
  Ints index(shape.rank());
  for (std::size_t d = shape.rank(); d-- > 0;) {
    index[d] = flat % shape[d];
    flat /= shape[d];
  }
  return index;
}

// Naive reduction: groups the input values by output position, then applies `combine` to each
// group. `axes` are non-negative; empty means all.
std::vector<double> reduce_reference(const Tensor& x, Ints axes,
                                     const std::function<double(const std::vector<double>&)>& combine) {
  const Shape& s = x.shape();
  if (axes.empty())
    for (std::size_t d = 0; d < s.rank(); ++d) axes.push_back(static_cast<std::int64_t>(d));
  std::vector<std::int64_t> out_dims;
  for (std::size_t d = 0; d < s.rank(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(d)) == axes.end()) out_dims.push_back(s[d]);
  const Shape out_shape(out_dims);
  std::vector<std::vector<double>> groups(static_cast<std::size_t>(out_shape.numel()));
  const auto values = to_doubles(x);
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    const Ints index = unravel(i, s);
    std::int64_t o = 0;
    for (std::size_t d = 0; d < s.rank(); ++d)
      if (std::find(axes.begin(), axes.end(), static_cast<std::int64_t>(d)) == axes.end()) o = o * s[d] + index[d];
    groups[static_cast<std::size_t>(o)].push_back(values[static_cast<std::size_t>(i)]);
  }
  std::vector<double> result;
  for (const auto& g : groups) result.push_back(combine(g));
  return result;
}

double sum_of(const std::vector<double>& g) { return std::accumulate(g.begin(), g.end(), 0.0); }

struct ReduceCase {
  const char* op;
  std::function<double(const std::vector<double>&)> combine;
};

std::vector<ReduceCase> all_reductions() {
  return {
      {"ReduceSum", sum_of},
      {"ReduceMean", [](const auto& g) { return sum_of(g) / static_cast<double>(g.size()); }},
      {"ReduceMax", [](const auto& g) { return *std::max_element(g.begin(), g.end()); }},
      {"ReduceMin", [](const auto& g) { return *std::min_element(g.begin(), g.end()); }},
      {"ReduceProd", [](const auto& g) { return std::accumulate(g.begin(), g.end(), 1.0, std::multiplies<>()); }},
      {"ReduceSumSquare", [](const auto& g) { return std::inner_product(g.begin(), g.end(), g.begin(), 0.0); }},
      {"ReduceL1",
       [](const auto& g) {
         double s = 0;
         for (double v : g) s += std::fabs(v);
         return s;
       }},
      {"ReduceL2", [](const auto& g) { return std::sqrt(std::inner_product(g.begin(), g.end(), g.begin(), 0.0)); }},
      {"ReduceLogSum", [](const auto& g) { return std::log(sum_of(g)); }},
      {"ReduceLogSumExp",
       [](const auto& g) {
         double s = 0;
         for (double v : g) s += std::exp(v);
         return std::log(s);
       }},
  };
}

// Output shape of a reduction over non-negative `axes` (empty = all).
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

std::string create_message(const std::string& op_type, Attributes attrs, const std::vector<OpInput>& inputs,
                           const std::vector<OpOutput>& outputs) {
  auto backend = backend::make_cpu_backend();
  const Node node = make_node(op_type, std::move(attrs), inputs.size(), outputs, &inputs);
  try {
    (void)backend->create_kernel(make_spec(node, inputs, outputs));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- Reduce* -------------------------------------------------------------------------------

TEST(CpuReduceOps, HandValuesKeepdimsAndNegativeAxes) {
  const Tensor x = iota_tensor(Shape{3, 2, 2});  // 1..12
  // Sum over axis 1, kept: pairs (1,3) (2,4) (5,7) (6,8) (9,11) (10,12).
  EXPECT_TRUE(all_close(
      run_cpu_op1("ReduceSum", {}, {x, OpInput::initializer(Tensor::from<std::int64_t>({1}, {1}))}, Shape{3, 1, 2}),
      {4, 6, 12, 14, 20, 22}));
  // Mean over axis -2 (= 1), dropped.
  EXPECT_TRUE(
      all_close(run_cpu_op1("ReduceMean", {{"axes", Ints{-2}}, {"keepdims", std::int64_t{0}}}, {x}, Shape{3, 2}),
                {2, 3, 6, 7, 10, 11}));
  // Max over every axis: kept as [1,1,1], dropped to a scalar.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceMax", {}, {x}, Shape{1, 1, 1}), {12}));
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceMax", {{"keepdims", std::int64_t{0}}}, {x}, Shape{}), {12}));
  // Max over axes {0, 2}: each j of axis 1 takes max over the rest: j=0 -> 10, j=1 -> 12.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceMax", {{"axes", Ints{0, -1}}}, {x}, Shape{1, 2, 1}), {10, 12}));
  // Sum of 1..12 = 78, mean 6.5.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceSum", {{"keepdims", std::int64_t{0}}}, {x}, Shape{}), {78}));
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceMean", {}, {x}, Shape{1, 1, 1}), {6.5}));
}

TEST(CpuReduceOps, EveryReductionAgainstNaiveReference) {
  // Positive values keep ReduceLogSum and ReduceProd well defined.
  const Tensor x = random_tensor(Shape{2, 3, 4, 5}, 7, 0.5f, 1.5f);
  const std::vector<Ints> axis_sets = {{}, {0}, {3}, {1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {0, 1, 2, 3}};
  for (const ReduceCase& c : all_reductions()) {
    for (const Ints& axes : axis_sets) {
      for (const bool keepdims : {true, false}) {
        Attributes attrs{{"keepdims", std::int64_t{keepdims}}};
        if (!axes.empty()) attrs.set("axes", axes);
        const Tensor y = run_cpu_op1(c.op, attrs, {x}, reduced_shape(x.shape(), axes, keepdims));
        EXPECT_TRUE(all_close(y, reduce_reference(x, axes, c.combine), 1e-5, 1e-5))
            << c.op << " axes " << axes.size() << " keepdims " << keepdims;
      }
    }
  }
}

TEST(CpuReduceOps, AxesAsConstantInputAndNoopWithEmptyAxes) {
  const Tensor x = random_tensor(Shape{3, 4, 2}, 11);
  const auto sum = [](const std::vector<double>& g) { return sum_of(g); };
  // Axes input, negative and unordered.
  EXPECT_TRUE(all_close(
      run_cpu_op1("ReduceSum", {}, {x, OpInput::initializer(Tensor::from<std::int64_t>({2}, {-1, 0}))}, Shape{1, 4, 1}),
      reduce_reference(x, {0, 2}, sum)));
  // i32 axes work too.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceSum", {{"keepdims", std::int64_t{0}}},
                                    {x, OpInput::initializer(Tensor::from<std::int32_t>({1}, {1}))}, Shape{3, 2}),
                        reduce_reference(x, {1}, sum)));
  const OpInput empty_axes = OpInput::initializer(Tensor(DType::i64, Shape{0}));
  // Empty axes: all axes by default, the identity with noop_with_empty_axes.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceSum", {}, {x, empty_axes}, Shape{1, 1, 1}), reduce_reference(x, {}, sum)));
  EXPECT_TRUE(
      all_close(run_cpu_op1("ReduceSum", {{"noop_with_empty_axes", std::int64_t{1}}}, {x, empty_axes}, x.shape()),
                to_doubles(x), 0, 0));
  EXPECT_TRUE(all_close(
      run_cpu_op1("ReduceSum", {{"noop_with_empty_axes", std::int64_t{1}}}, {x, OpInput::absent()}, x.shape()),
      to_doubles(x), 0, 0));
  // An omitted axes input behaves like no axes.
  EXPECT_TRUE(all_close(run_cpu_op1("ReduceSum", {{"keepdims", std::int64_t{0}}}, {x, OpInput::absent()}, Shape{}),
                        reduce_reference(x, {}, sum)));
}

TEST(CpuReduceOps, IntegerReductions) {
  const Tensor x = Tensor::from<std::int64_t>({2, 3}, {4, -7, 2, 9, 0, -3});
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ReduceSum", {}, {x, OpInput::initializer(Tensor::from<std::int64_t>({1}, {1}))}, Shape{2, 1},
                  DType::i64),
      {-1, 6}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ReduceMax", {{"axes", Ints{0}}, {"keepdims", std::int64_t{0}}}, {x}, Shape{3}, DType::i64),
      {9, 0, 2}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ReduceMin", {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}, {x}, Shape{2}, DType::i64),
      {-7, -3}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("ReduceProd", {}, {x}, Shape{1, 1}, DType::i64), {0}));
  // Integer mean truncates: (4 - 7 + 2) / 3 = -1/3 -> 0, (9 + 0 - 3) / 3 = 2.
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ReduceMean", {{"axes", Ints{1}}, {"keepdims", std::int64_t{0}}}, {x}, Shape{2}, DType::i64),
      {0, 2}));
  // Shape arithmetic in i32: the product of a shape.
  const Tensor dims = Tensor::from<std::int32_t>({3}, {2, 5, 7});
  EXPECT_TRUE(all_equal<std::int32_t>(
      run_cpu_op1("ReduceProd", {{"keepdims", std::int64_t{0}}}, {dims}, Shape{}, DType::i32), {70}));
  EXPECT_TRUE(all_equal<std::int32_t>(run_cpu_op1("ReduceMax", {}, {dims}, Shape{1}, DType::i32), {7}));
}

TEST(CpuReduceOps, LogSumExpAndMaxStayFiniteForLargeInputs) {
  const Tensor x = Tensor::from<float>({1, 3}, {1000.0f, 1001.0f, 1002.0f});
  // log(e^0 + e^1 + e^2) = 2.40760596.
  EXPECT_TRUE(
      all_close(run_cpu_op1("ReduceLogSumExp", {{"axes", Ints{1}}}, {x}, Shape{1, 1}), {1002.40760596}, 1e-3, 1e-6));
}

TEST(CpuReduceOps, ErrorsNameTheOp) {
  const Tensor x = random_tensor(Shape{2, 3}, 3);
  // Axes input that is not a constant.
  EXPECT_EQ(create_error("ReduceSum", {}, {x, Tensor::from<std::int64_t>({1}, {0})}, {{DType::f32, Shape{1, 3}}}),
            ErrorCode::unsupported);
  EXPECT_NE(create_message("ReduceSum", {}, {x, Tensor::from<std::int64_t>({1}, {0})}, {{DType::f32, Shape{1, 3}}})
                .find("ReduceSum"),
            std::string::npos);
  EXPECT_EQ(create_error("ReduceMean", {{"axes", Ints{2}}}, {x}, {{DType::f32, Shape{2, 1}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ReduceMean", {{"axes", Ints{1, -1}}}, {x}, {{DType::f32, Shape{2, 1}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ReduceMax", {{"axes", Ints{1}}}, {x}, {{DType::f32, Shape{2}}}), ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ReduceL2", {}, {Tensor::from<std::int64_t>({2}, {1, 2})}, {{DType::i64, Shape{1}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(create_error("ReduceSum", {}, {x.to(DType::f16)}, {{DType::f16, Shape{1, 1}}}), ErrorCode::unsupported);
  const std::string message = create_message("ReduceMax", {{"axes", Ints{5}}}, {x}, {{DType::f32, Shape{2, 1}}});
  EXPECT_NE(message.find("ReduceMax"), std::string::npos) << message;
}

// ---- Softmax / LogSoftmax ------------------------------------------------------------------

// Naive softmax along `axis` in double; `log` gives LogSoftmax.
std::vector<double> softmax_along(const Tensor& x, std::size_t axis, bool log) {
  const Shape& s = x.shape();
  const auto values = to_doubles(x);
  const auto strides = strides_of(s);
  std::vector<double> out(values.size());
  for (std::int64_t i = 0; i < s.numel(); ++i) {
    const Ints index = unravel(i, s);
    const std::int64_t base = i - index[axis] * strides[axis];
    double m = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = 0; k < s[axis]; ++k) m = std::max(m, values[base + k * strides[axis]]);
    double sum = 0;
    for (std::int64_t k = 0; k < s[axis]; ++k) sum += std::exp(values[base + k * strides[axis]] - m);
    out[i] = log ? values[i] - m - std::log(sum) : std::exp(values[i] - m) / sum;
  }
  return out;
}

TEST(CpuReduceOps, SoftmaxAndLogSoftmaxOnEveryAxis) {
  const Tensor x = random_tensor(Shape{2, 3, 4}, 21, -3.0f, 3.0f);
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    const bool log = std::string(op) == "LogSoftmax";
    for (std::int64_t axis = -3; axis < 3; ++axis) {
      const auto a = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
      EXPECT_TRUE(all_close(run_cpu_op1(op, {{"axis", axis}}, {x}, x.shape()), softmax_along(x, a, log), 1e-6, 1e-5))
          << op << " axis " << axis;
    }
    // The default axis is the last (opset 13).
    EXPECT_TRUE(all_close(run_cpu_op1(op, {}, {x}, x.shape()), softmax_along(x, 2, log), 1e-6, 1e-5)) << op;
  }
}

TEST(CpuReduceOps, LogSoftmaxLargeInputsHandValues) {
  // log softmax of [0, 1, 2] + c is [0, 1, 2] - 2.40760596 for any c.
  const Tensor x = Tensor::from<float>({2, 3}, {1000, 1001, 1002, -1000, -999, -998});
  EXPECT_TRUE(all_close(run_cpu_op1("LogSoftmax", {}, {x}, x.shape()),
                        {-2.40760596, -1.40760596, -0.40760596, -2.40760596, -1.40760596, -0.40760596}, 1e-5, 0));
  // A middle axis of [1, 2, 2]: pairs (a, b) give [-log(1 + e^(b-a)), -log(1 + e^(a-b))].
  const Tensor m = Tensor::from<float>({1, 2, 2}, {0, 5000, 1, 5000});
  const double l1 = std::log1p(std::exp(-1.0)), l0 = std::log1p(std::exp(1.0));
  EXPECT_TRUE(all_close(run_cpu_op1("LogSoftmax", {{"axis", std::int64_t{1}}}, {m}, m.shape()),
                        {-l0, -std::log(2.0), -l1, -std::log(2.0)}, 1e-6, 1e-6));
  EXPECT_EQ(create_error("LogSoftmax", {{"axis", std::int64_t{2}}}, {x}, {{DType::f32, x.shape()}}),
            ErrorCode::shape_mismatch);
}

// ---- LayerNormalization --------------------------------------------------------------------

TEST(CpuReduceOps, LayerNormStatisticsOutputsHandValues) {
  // Row [1, 2, 3, 4]: mean 2.5, variance 1.25, 1/sqrt(1.25) = 0.894427191.
  const Tensor x = Tensor::from<float>({1, 4}, {1, 2, 3, 4});
  const Tensor scale = Tensor::from<float>({4}, {1, 1, 1, 1});
  const auto out = run_cpu_op("LayerNormalization", {{"epsilon", 0.0f}}, {x, scale},
                              {{DType::f32, Shape{1, 4}}, {DType::f32, Shape{1, 1}}, {DType::f32, Shape{1, 1}}});
  const double r = 0.894427191;
  EXPECT_TRUE(all_close(out[0], {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-6, 1e-6));
  EXPECT_TRUE(all_close(out[1], {2.5}));
  EXPECT_TRUE(all_close(out[2], {r}));
}

// Naive LayerNorm over dims [axis, rank) with Scale/B of the normalised shape.
struct LayerNormReference {
  std::vector<double> y, mean, inv_std;
};
LayerNormReference layer_norm_naive(const Tensor& x, const Tensor& scale, const Tensor* bias, std::size_t axis,
                                    double epsilon) {
  const Shape& s = x.shape();
  std::int64_t rows = 1, width = 1;
  for (std::size_t d = 0; d < s.rank(); ++d) (d < axis ? rows : width) *= s[d];
  const auto xv = to_doubles(x), sv = to_doubles(scale);
  const std::vector<double> bv = bias ? to_doubles(*bias) : std::vector<double>(static_cast<std::size_t>(width), 0.0);
  LayerNormReference ref;
  for (std::int64_t r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < width; ++j) mean += xv[r * width + j];
    mean /= static_cast<double>(width);
    for (std::int64_t j = 0; j < width; ++j) var += (xv[r * width + j] - mean) * (xv[r * width + j] - mean);
    var /= static_cast<double>(width);
    const double inv = 1.0 / std::sqrt(var + epsilon);
    ref.mean.push_back(mean);
    ref.inv_std.push_back(inv);
    for (std::int64_t j = 0; j < width; ++j) ref.y.push_back((xv[r * width + j] - mean) * inv * sv[j] + bv[j]);
  }
  return ref;
}

TEST(CpuReduceOps, LayerNormAxisOneWithMeanAndInvStdDev) {
  const Tensor x = random_tensor(Shape{2, 3, 4}, 31, -2.0f, 2.0f);
  const Tensor scale = random_tensor(Shape{3, 4}, 32);
  const Tensor bias = random_tensor(Shape{3, 4}, 33);
  const LayerNormReference ref = layer_norm_naive(x, scale, &bias, 1, 1e-3);
  for (const std::int64_t axis : {std::int64_t{1}, std::int64_t{-2}}) {
    const auto out = run_cpu_op("LayerNormalization", {{"axis", axis}, {"epsilon", 1e-3f}}, {x, scale, bias},
                                {{DType::f32, x.shape()}, {DType::f32, Shape{2, 1, 1}}, {DType::f32, Shape{2, 1, 1}}});
    EXPECT_TRUE(all_close(out[0], ref.y, 1e-5, 1e-5)) << "axis " << axis;
    EXPECT_TRUE(all_close(out[1], ref.mean, 1e-6, 1e-5));
    EXPECT_TRUE(all_close(out[2], ref.inv_std, 1e-6, 1e-5));
  }
  // Only InvStdDev requested (Mean absent).
  const auto out = run_cpu_op("LayerNormalization", {{"axis", std::int64_t{1}}, {"epsilon", 1e-3f}}, {x, scale, bias},
                              {{DType::f32, x.shape()}, OpOutput::absent(), {DType::f32, Shape{2, 1, 1}}});
  EXPECT_TRUE(all_close(out[2], ref.inv_std, 1e-6, 1e-5));
  // A statistics output of the wrong shape.
  EXPECT_EQ(create_error("LayerNormalization", {{"axis", std::int64_t{1}}}, {x, scale, bias},
                         {{DType::f32, x.shape()}, {DType::f32, Shape{2, 3, 1}}}),
            ErrorCode::shape_mismatch);
}

TEST(CpuReduceOps, LayerNormScaleBroadcastAlongPartOfTheNormalisedDims) {
  const Tensor x = random_tensor(Shape{2, 3, 4}, 41);
  const Tensor scale = random_tensor(Shape{3, 1}, 42);  // one value per row of the [3, 4] block
  const Tensor bias = random_tensor(Shape{4}, 43);      // one value per column
  std::vector<float> full_scale, full_bias;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      full_scale.push_back(scale.values<float>()[i]);
      full_bias.push_back(bias.values<float>()[j]);
    }
  const Tensor fs = Tensor::from<float>({3, 4}, full_scale), fb = Tensor::from<float>({3, 4}, full_bias);
  EXPECT_TRUE(all_close(run_cpu_op1("LayerNormalization", {{"axis", std::int64_t{1}}}, {x, scale, bias}, x.shape()),
                        layer_norm_naive(x, fs, &fb, 1, 1e-5).y, 1e-5, 1e-5));
}

// ---- ArgMax / ArgMin -----------------------------------------------------------------------

TEST(CpuReduceOps, ArgMaxArgMinSelectLastIndexAndKeepdims) {
  const Tensor x = Tensor::from<float>({2, 3}, {1, 3, 3, 4, 4, 2});
  const Attributes last{{"axis", std::int64_t{1}}, {"select_last_index", std::int64_t{1}}};
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("ArgMax", {{"axis", std::int64_t{1}}}, {x}, Shape{2, 1}, DType::i64),
                                      {1, 0}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("ArgMax", last, {x}, Shape{2, 1}, DType::i64), {2, 1}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ArgMax", {{"axis", std::int64_t{-1}}, {"keepdims", std::int64_t{0}}}, {x}, Shape{2}, DType::i64),
      {1, 0}));
  // Default axis 0: column maxima are in row 1, 1, 0.
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("ArgMax", {}, {x}, Shape{1, 3}, DType::i64), {1, 1, 0}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("ArgMin", {{"axis", std::int64_t{1}}}, {x}, Shape{2, 1}, DType::i64),
                                      {0, 2}));
  // Integer input, ties on a middle axis.
  const Tensor xi = Tensor::from<std::int64_t>({2, 2, 2}, {5, 1, 5, 7, 0, 2, 0, 2});
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("ArgMax", {{"axis", std::int64_t{1}}}, {xi}, Shape{2, 1, 2}, DType::i64), {0, 1, 0, 0}));
  EXPECT_TRUE(
      all_equal<std::int64_t>(run_cpu_op1("ArgMax", {{"axis", std::int64_t{1}}, {"select_last_index", std::int64_t{1}}},
                                          {xi}, Shape{2, 1, 2}, DType::i64),
                              {1, 1, 1, 1}));
  EXPECT_EQ(create_error("ArgMax", {{"axis", std::int64_t{2}}}, {x}, {{DType::i64, Shape{2, 1}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ArgMax", {}, {x}, {{DType::i32, Shape{1, 3}}}), ErrorCode::unsupported);
}

TEST(CpuReduceOps, ArgMaxAgainstNaiveReferenceOnEveryAxis) {
  const Tensor x = random_tensor(Shape{3, 4, 5}, 51);
  const Shape& s = x.shape();
  const auto v = to_doubles(x);
  const auto strides = strides_of(s);
  for (std::size_t axis = 0; axis < 3; ++axis) {
    std::vector<std::int64_t> expected;
    Ints out_dims(s.dims());
    out_dims[axis] = 1;
    for (std::int64_t i = 0; i < s.numel(); ++i) {
      const Ints index = unravel(i, s);
      if (index[axis] != 0) continue;
      std::int64_t best = 0;
      for (std::int64_t k = 1; k < s[axis]; ++k)
        if (v[i + k * strides[axis]] > v[i + best * strides[axis]]) best = k;
      expected.push_back(best);
    }
    EXPECT_TRUE(all_equal<std::int64_t>(
        run_cpu_op1("ArgMax", {{"axis", static_cast<std::int64_t>(axis)}}, {x}, Shape(out_dims), DType::i64), expected))
        << "axis " << axis;
  }
}

// ---- TopK ----------------------------------------------------------------------------------

OpInput k_input(std::int64_t k) { return OpInput::initializer(Tensor::from<std::int64_t>({1}, {k})); }

TEST(CpuReduceOps, TopKLargestSmallestAndTies) {
  // Ties: the lower index comes first, for largest and smallest alike.
  const Tensor x = Tensor::from<float>({2, 5}, {3, 1, 3, 2, 1, 0, 9, 9, 9, -1});
  auto out = run_cpu_op("TopK", {}, {x, k_input(3)}, {{DType::f32, Shape{2, 3}}, {DType::i64, Shape{2, 3}}});
  EXPECT_TRUE(all_close(out[0], {3, 3, 2, 9, 9, 9}, 0, 0));
  EXPECT_TRUE(all_equal<std::int64_t>(out[1], {0, 2, 3, 1, 2, 3}));
  out = run_cpu_op("TopK", {{"largest", std::int64_t{0}}}, {x, k_input(2)},
                   {{DType::f32, Shape{2, 2}}, {DType::i64, Shape{2, 2}}});
  EXPECT_TRUE(all_close(out[0], {1, 1, -1, 0}, 0, 0));
  EXPECT_TRUE(all_equal<std::int64_t>(out[1], {1, 4, 4, 0}));
  // sorted=0 still gives a valid answer (this backend always sorts).
  out = run_cpu_op("TopK", {{"sorted", std::int64_t{0}}}, {x, k_input(1)},
                   {{DType::f32, Shape{2, 1}}, {DType::i64, Shape{2, 1}}});
  EXPECT_TRUE(all_close(out[0], {3, 9}, 0, 0));
  EXPECT_TRUE(all_equal<std::int64_t>(out[1], {0, 1}));
}

TEST(CpuReduceOps, TopKOnAMiddleAxisAndIntegers) {
  // [2, 3, 2], axis 1 (= -2): columns (o, i) hold the values at k = 0..2.
  const Tensor x = Tensor::from<std::int64_t>({2, 3, 2}, {4, 0, 8, 5, 6, 5, 1, 7, 1, 3, 2, 7});
  auto out = run_cpu_op("TopK", {{"axis", std::int64_t{-2}}}, {x, k_input(2)},
                        {{DType::i64, Shape{2, 2, 2}}, {DType::i64, Shape{2, 2, 2}}});
  // Column (0,0): 4 8 6 -> 8@1 6@2; (0,1): 0 5 5 -> 5@1 5@2; (1,0): 1 1 2 -> 2@2 1@0; (1,1): 7 3 7 -> 7@0 7@2.
  EXPECT_TRUE(all_equal<std::int64_t>(out[0], {8, 5, 6, 5, 2, 7, 1, 7}));
  EXPECT_TRUE(all_equal<std::int64_t>(out[1], {1, 1, 2, 2, 2, 0, 0, 2}));
}

TEST(CpuReduceOps, TopKAgainstNaiveSelection) {
  const Tensor x = random_tensor(Shape{4, 17}, 61);
  const auto v = to_doubles(x);
  for (const bool largest : {true, false}) {
    const auto out = run_cpu_op("TopK", {{"largest", std::int64_t{largest}}}, {x, k_input(5)},
                                {{DType::f32, Shape{4, 5}}, {DType::i64, Shape{4, 5}}});
    std::vector<double> expected_values;
    std::vector<std::int64_t> expected_indices;
    for (std::int64_t r = 0; r < 4; ++r) {
      std::vector<bool> taken(17, false);
      for (int j = 0; j < 5; ++j) {  // selection: take the best untaken element each time
        std::int64_t best = -1;
        for (std::int64_t c = 0; c < 17; ++c) {
          if (taken[c]) continue;
          const double a = v[r * 17 + c];
          if (best < 0 || (largest ? a > v[r * 17 + best] : a < v[r * 17 + best])) best = c;
        }
        taken[best] = true;
        expected_values.push_back(v[r * 17 + best]);
        expected_indices.push_back(best);
      }
    }
    EXPECT_TRUE(all_close(out[0], expected_values, 0, 0));
    EXPECT_TRUE(all_equal<std::int64_t>(out[1], expected_indices));
  }
}

TEST(CpuReduceOps, TopKErrors) {
  const Tensor x = random_tensor(Shape{2, 5}, 71);
  const std::vector<OpOutput> outs{{DType::f32, Shape{2, 6}}, {DType::i64, Shape{2, 6}}};
  EXPECT_EQ(create_error("TopK", {}, {x, k_input(6)}, outs), ErrorCode::shape_mismatch);
  EXPECT_NE(create_message("TopK", {}, {x, k_input(6)}, outs).find("TopK"), std::string::npos);
  // K not known at creation.
  EXPECT_EQ(create_error("TopK", {}, {x, Tensor::from<std::int64_t>({1}, {2})},
                         {{DType::f32, Shape{2, 2}}, {DType::i64, Shape{2, 2}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(create_error("TopK", {}, {x, k_input(2)}, {{DType::f32, Shape{2, 2}}, {DType::i32, Shape{2, 2}}}),
            ErrorCode::unsupported);
}

// ---- shape inference -----------------------------------------------------------------------

std::vector<ValueInfo> infer(const Node& node, const std::vector<ValueInfo>& inputs,
                             const std::vector<const Tensor*>& constants) {
  std::vector<const ValueInfo*> in;
  for (const ValueInfo& v : inputs) in.push_back(v.name.empty() ? nullptr : &v);
  return graph::infer_node(node, in, constants);
}

TEST(CpuReduceOps, ShapeInference) {
  const ValueInfo x{"x", DType::f32, Shape{2, 3, 4}, {}};
  const Tensor axes = Tensor::from<std::int64_t>({1}, {-1});
  Node sum{"ReduceSum", "sum", {"x", "axes"}, {"y"}, {{"keepdims", std::int64_t{0}}}};
  EXPECT_EQ(infer(sum, {x, {"axes", DType::i64, Shape{1}, {}}}, {nullptr, &axes})[0].shape, (Shape{2, 3}));
  // Axes input not constant.
  try {
    infer(sum, {x, {"axes", DType::i64, Shape{1}, {}}}, {nullptr, nullptr});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported);
  }
  Node mean{"ReduceMean", "mean", {"x"}, {"y"}, {{"axes", Ints{0, 2}}}};
  EXPECT_EQ(infer(mean, {x}, {nullptr})[0].shape, (Shape{1, 3, 1}));
  Node noop{"ReduceMax", "max", {"x"}, {"y"}, {{"noop_with_empty_axes", std::int64_t{1}}}};
  EXPECT_EQ(infer(noop, {x}, {nullptr})[0].shape, (Shape{2, 3, 4}));

  const ValueInfo scale{"s", DType::f32, Shape{3, 4}, {}};
  Node ln{"LayerNormalization", "ln", {"x", "s"}, {"y", "mean", "inv"}, {{"axis", std::int64_t{1}}}};
  const auto ln_out = infer(ln, {x, scale}, {nullptr, nullptr});
  ASSERT_EQ(ln_out.size(), 3u);
  EXPECT_EQ(ln_out[1].shape, (Shape{2, 1, 1}));
  EXPECT_EQ(ln_out[2].dtype, DType::f32);

  Node arg{"ArgMax", "arg", {"x"}, {"y"}, {{"axis", std::int64_t{-2}}, {"keepdims", std::int64_t{0}}}};
  const auto arg_out = infer(arg, {x}, {nullptr});
  EXPECT_EQ(arg_out[0].shape, (Shape{2, 4}));
  EXPECT_EQ(arg_out[0].dtype, DType::i64);

  const Tensor k = Tensor::from<std::int64_t>({1}, {2});
  Node topk{"TopK", "topk", {"x", "k"}, {"v", "i"}, {{"axis", std::int64_t{1}}}};
  const auto topk_out = infer(topk, {x, {"k", DType::i64, Shape{1}, {}}}, {nullptr, &k});
  EXPECT_EQ(topk_out[0].shape, (Shape{2, 2, 4}));
  EXPECT_EQ(topk_out[1].dtype, DType::i64);

  Node log_softmax{"LogSoftmax", "ls", {"x"}, {"y"}, {{"axis", std::int64_t{1}}}};
  EXPECT_EQ(infer(log_softmax, {x}, {nullptr})[0].shape, x.shape);
}

}  // namespace
