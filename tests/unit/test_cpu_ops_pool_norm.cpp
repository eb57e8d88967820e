// CPU backend: pooling, Softmax, BatchNormalization and LayerNormalization against hand values
// and naive double-precision references.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

struct PoolParams {
  std::int64_t kernel_h, kernel_w, stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool ceil_mode = false;
  bool count_include_pad = false;
};

Attributes pool_attrs(const PoolParams& p) {
  return {{"kernel_shape", std::vector<std::int64_t>{p.kernel_h, p.kernel_w}},
          {"strides", std::vector<std::int64_t>{p.stride_h, p.stride_w}},
          {"pads", std::vector<std::int64_t>{p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}},
          {"ceil_mode", std::int64_t{p.ceil_mode}},
          {"count_include_pad", std::int64_t{p.count_include_pad}}};
}

// Pooled length per ONNX, with the ceil_mode rule that drops a window starting past the input.
std::int64_t pooled(std::int64_t in, std::int64_t k, std::int64_t s, std::int64_t pb, std::int64_t pe, bool ceil_mode) {
  const double exact = double(in + pb + pe - k) / double(s);
  std::int64_t out = static_cast<std::int64_t>(ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
  if (ceil_mode && (out - 1) * s >= in + pb) --out;
  return out;
}

// Walks every kernel tap; taps in the padding are skipped for max and counted for an average
// only with count_include_pad (and only inside the explicit pads, not the ceil_mode overhang).
std::vector<double> pool_reference(const Tensor& x, const PoolParams& p, bool is_max, const Shape& out) {
  const auto xv = x.values<float>();
  const std::int64_t h = x.shape()[2], w = x.shape()[3];
  std::vector<double> result;
  for (std::int64_t plane = 0; plane < out[0] * out[1]; ++plane)
    for (std::int64_t oy = 0; oy < out[2]; ++oy)
      for (std::int64_t ox = 0; ox < out[3]; ++ox) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        std::int64_t valid = 0, padded = 0;
        for (std::int64_t ky = 0; ky < p.kernel_h; ++ky)
          for (std::int64_t kx = 0; kx < p.kernel_w; ++kx) {
            const std::int64_t iy = oy * p.stride_h - p.pad_top + ky;
            const std::int64_t ix = ox * p.stride_w - p.pad_left + kx;
            const bool in_pads = iy >= -p.pad_top && iy < h + p.pad_bottom && ix >= -p.pad_left && ix < w + p.pad_right;
            if (in_pads) ++padded;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            const double v = xv[(plane * h + iy) * w + ix];
            best = std::max(best, v);
            sum += v;
            ++valid;
          }
        result.push_back(is_max ? best : sum / double(p.count_include_pad ? padded : valid));
      }
  return result;
}

}  // namespace

TEST(CpuOps, MaxPoolHandValues) {
  std::vector<float> values(16);
  for (int i = 0; i < 16; ++i) values[i] = float(i + 1);
  const Tensor x = Tensor::from<float>(Shape{1, 1, 4, 4}, values);
  const Tensor y = run_cpu_op1("MaxPool", pool_attrs({2, 2, 2, 2}), {x}, Shape{1, 1, 2, 2});
  EXPECT_TRUE(all_close(y, {6, 8, 14, 16}, 0, 0));
  // 3x3 windows, stride 2, pad 1: windows centred on (0,0), (0,2), (2,0), (2,2).
  const Tensor z = run_cpu_op1("MaxPool", pool_attrs({3, 3, 2, 2, 1, 1, 1, 1}), {x}, Shape{1, 1, 2, 2});
  EXPECT_TRUE(all_close(z, {6, 8, 14, 16}, 0, 0));
  // Negative values: padding must not act as a zero.
  std::vector<float> negative(16);
  for (int i = 0; i < 16; ++i) negative[i] = -float(i + 1);
  const Tensor n = Tensor::from<float>(Shape{1, 1, 4, 4}, negative);
  const Tensor m = run_cpu_op1("MaxPool", pool_attrs({2, 2, 2, 2, 1, 1, 1, 1}), {n}, Shape{1, 1, 3, 3});
  EXPECT_TRUE(all_close(m, {-1, -2, -4, -5, -6, -8, -13, -14, -16}, 0, 0));
}

TEST(CpuOps, MaxPoolCeilModeHandValues) {
  // 5x5, kernel 2, stride 2: floor gives 2x2, ceil gives 3x3 with clipped last windows.
  std::vector<float> values(25);
  for (int i = 0; i < 25; ++i) values[i] = float(i);
  const Tensor x = Tensor::from<float>(Shape{1, 1, 5, 5}, values);
  PoolParams p{2, 2, 2, 2};
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", pool_attrs(p), {x}, Shape{1, 1, 2, 2}), {6, 8, 16, 18}, 0, 0));
  p.ceil_mode = true;
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", pool_attrs(p), {x}, Shape{1, 1, 3, 3}),
                        {6, 8, 9, 16, 18, 19, 21, 23, 24}, 0, 0));
  // ceil would give 2, but the second window would start past the input: ONNX keeps 1.
  const Tensor small = Tensor::from<float>(Shape{1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", pool_attrs({1, 1, 2, 2, 0, 0, 0, 0, true}), {small}, Shape{1, 1, 1, 1}),
                        {1}, 0, 0));
  EXPECT_EQ(
      create_error("MaxPool", pool_attrs({1, 1, 2, 2, 0, 0, 0, 0, true}), {small}, {{DType::f32, Shape{1, 1, 2, 2}}}),
      ErrorCode::shape_mismatch);
}

TEST(CpuOps, AveragePoolHandValues) {
  std::vector<float> values(9);
  for (int i = 0; i < 9; ++i) values[i] = float(i + 1);
  const Tensor x = Tensor::from<float>(Shape{1, 1, 3, 3}, values);
  // 2x2 windows with pad 1 on every side, stride 2: windows (-1,-1), (-1,1), (1,-1), (1,1).
  PoolParams p{2, 2, 2, 2, 1, 1, 1, 1};
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", pool_attrs(p), {x}, Shape{1, 1, 2, 2}), {1, 2.5, 5.5, 7}, 1e-6, 0));
  p.count_include_pad = true;
  EXPECT_TRUE(
      all_close(run_cpu_op1("AveragePool", pool_attrs(p), {x}, Shape{1, 1, 2, 2}), {0.25, 1.25, 2.75, 7}, 1e-6, 0));
}

TEST(CpuOps, PoolRandomPadsCeilModeAndCountIncludePad) {
  const std::vector<PoolParams> cases = {
      {3, 3, 2, 2, 1, 1, 1, 1},              // ResNet stem max pool
      {3, 3, 2, 2, 1, 1, 1, 1, true},        // with ceil_mode
      {2, 3, 2, 1, 0, 1, 1, 2, true},        // asymmetric pads, ceil
      {3, 2, 3, 2, 2, 0, 0, 1, true, true},  // ceil overhang beyond the pads
      {3, 3, 1, 1, 1, 1, 1, 1, false, true},
      {2, 2, 2, 2},
  };
  std::uint32_t seed = 500;
  for (const PoolParams& p : cases) {
    const Tensor x = random_tensor(Shape{2, 3, 8, 9}, seed++);
    const Shape out{2, 3, pooled(8, p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom, p.ceil_mode),
                    pooled(9, p.kernel_w, p.stride_w, p.pad_left, p.pad_right, p.ceil_mode)};
    EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", pool_attrs(p), {x}, out), pool_reference(x, p, true, out), 0, 0))
        << "MaxPool k " << p.kernel_h << "x" << p.kernel_w << " ceil " << p.ceil_mode;
    EXPECT_TRUE(
        all_close(run_cpu_op1("AveragePool", pool_attrs(p), {x}, out), pool_reference(x, p, false, out), 1e-6, 1e-5))
        << "AveragePool k " << p.kernel_h << "x" << p.kernel_w << " ceil " << p.ceil_mode << " include pad "
        << p.count_include_pad;
  }
}

TEST(CpuOps, PoolRejectsUnsupportedAttributes) {
  const Tensor x = random_tensor(Shape{1, 1, 4, 4}, 1);
  Attributes attrs = pool_attrs({2, 2, 2, 2});
  attrs.set("auto_pad", std::string("MIRROR"));
  EXPECT_EQ(create_error("MaxPool", attrs, {x}, {{DType::f32, Shape{1, 1, 2, 2}}}), ErrorCode::unsupported);
  // A pad as large as the kernel.
  EXPECT_EQ(create_error("MaxPool", pool_attrs({2, 2, 1, 1, 2, 0, 0, 0}), {x}, {{DType::f32, Shape{1, 1, 5, 3}}}),
            ErrorCode::unsupported);
  // The Indices output is not produced.
  EXPECT_EQ(create_error("MaxPool", pool_attrs({2, 2, 2, 2}), {x},
                         {{DType::f32, Shape{1, 1, 2, 2}}, {DType::i64, Shape{1, 1, 2, 2}}}),
            ErrorCode::unsupported);
}

TEST(CpuOps, GlobalAveragePool) {
  const Tensor hand = Tensor::from<float>(Shape{1, 2, 2, 2}, {1, 2, 3, 4, -1, -1, 5, 5});
  EXPECT_TRUE(all_close(run_cpu_op1("GlobalAveragePool", {}, {hand}, Shape{1, 2, 1, 1}), {2.5, 2.0}, 0, 0));

  const Tensor x = random_tensor(Shape{2, 3, 7, 5}, 7);
  std::vector<double> expected;
  for (int plane = 0; plane < 6; ++plane) {
    double sum = 0;
    for (int i = 0; i < 35; ++i) sum += x.values<float>()[plane * 35 + i];
    expected.push_back(sum / 35);
  }
  EXPECT_TRUE(all_close(run_cpu_op1("GlobalAveragePool", {}, {x}, Shape{2, 3, 1, 1}), expected, 1e-6, 1e-5));
  // Rank 3 (one spatial dim) follows the same rule.
  const Tensor x3 = x.reshaped(Shape{2, 3, 35});
  EXPECT_TRUE(all_close(run_cpu_op1("GlobalAveragePool", {}, {x3}, Shape{2, 3, 1}), expected, 1e-6, 1e-5));
}

namespace {

std::vector<double> softmax_reference(const Tensor& x, std::int64_t axis) {
  const Shape& s = x.shape();
  const auto xv = x.values<float>();
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (std::size_t d = axis + 1; d < s.rank(); ++d) inner *= s[d];
  const std::int64_t len = s[axis];
  std::vector<double> result(xv.size());
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (std::int64_t k = 0; k < len; ++k) sum += std::exp(double(xv[(o * len + k) * inner + i]));
      for (std::int64_t k = 0; k < len; ++k)
        result[(o * len + k) * inner + i] = std::exp(double(xv[(o * len + k) * inner + i])) / sum;
    }
  return result;
}

}  // namespace

TEST(CpuOps, SoftmaxHandValuesAndStability) {
  const Tensor x = Tensor::from<float>(Shape{2, 3}, {1, 2, 3, 1000, 1001, 1002});
  // e^{0,1,2} / (1 + e + e^2); the shift by 1000 must not change (or overflow) the result.
  const std::vector<double> row{0.09003057317038046, 0.24472847105479764, 0.6652409557748219};
  std::vector<double> expected = row;
  expected.insert(expected.end(), row.begin(), row.end());
  EXPECT_TRUE(all_close(run_cpu_op1("Softmax", {}, {x}, Shape{2, 3}), expected, 1e-6, 1e-5));
}

TEST(CpuOps, SoftmaxAxes) {
  const Tensor x = random_tensor(Shape{2, 5, 3, 4}, 9, -4.0f, 4.0f);
  const Shape s = x.shape();
  EXPECT_TRUE(
      all_close(run_cpu_op1("Softmax", {{"axis", std::int64_t{1}}}, {x}, s), softmax_reference(x, 1), 1e-6, 1e-5));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Softmax", {{"axis", std::int64_t{-2}}}, {x}, s), softmax_reference(x, 2), 1e-6, 1e-5));
  EXPECT_TRUE(all_close(run_cpu_op1("Softmax", {}, {x}, s), softmax_reference(x, 3), 1e-6, 1e-5));
  EXPECT_TRUE(
      all_close(run_cpu_op1("Softmax", {{"axis", std::int64_t{0}}}, {x}, s), softmax_reference(x, 0), 1e-6, 1e-5));
  EXPECT_EQ(create_error("Softmax", {{"axis", std::int64_t{4}}}, {x}, {{DType::f32, s}}), ErrorCode::shape_mismatch);
}

TEST(CpuOps, BatchNormalizationHandAndRandom) {
  // X [1, 2, 1, 2]; channel 0: scale 2, B 1, mean 1, var 4; channel 1: scale 1, B 0, mean -1, var 0.25.
  const Tensor x = Tensor::from<float>(Shape{1, 2, 1, 2}, {3, 5, 0, 1});
  const Tensor scale = Tensor::from<float>(Shape{2}, {2, 1});
  const Tensor b = Tensor::from<float>(Shape{2}, {1, 0});
  const Tensor mean = Tensor::from<float>(Shape{2}, {1, -1});
  const Tensor var = Tensor::from<float>(Shape{2}, {4, 0.25f});
  const Tensor y = run_cpu_op1("BatchNormalization", {{"epsilon", 0.0f}}, {x, scale, b, mean, var}, Shape{1, 2, 1, 2});
  EXPECT_TRUE(all_close(y, {3, 5, 2, 4}, 1e-6, 0));

  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{6, 3}}) {
    const Tensor xr = random_tensor(shape, 10, -3.0f, 3.0f);
    const Tensor sr = random_tensor(Shape{3}, 11);
    const Tensor br = random_tensor(Shape{3}, 12);
    const Tensor mr = random_tensor(Shape{3}, 13);
    const Tensor vr = random_tensor(Shape{3}, 14, 0.1f, 2.0f);
    const std::int64_t spatial = shape.numel() / (shape[0] * 3);
    std::vector<double> expected;
    for (std::int64_t i = 0; i < shape.numel(); ++i) {
      const std::int64_t c = (i / spatial) % 3;
      expected.push_back((xr.values<float>()[i] - double(mr.values<float>()[c])) /
                             std::sqrt(double(vr.values<float>()[c]) + 1e-3) * sr.values<float>()[c] +
                         br.values<float>()[c]);
    }
    EXPECT_TRUE(all_close(run_cpu_op1("BatchNormalization", {{"epsilon", 1e-3f}}, {xr, sr, br, mr, vr}, shape),
                          expected, 1e-5, 1e-5))
        << shape.to_string();
  }
}

TEST(CpuOps, BatchNormalizationRejectsTrainingMode) {
  const Tensor x = random_tensor(Shape{1, 2, 2, 2}, 1);
  const Tensor c = random_tensor(Shape{2}, 2, 0.5f, 1.0f);
  EXPECT_EQ(create_error("BatchNormalization", {{"training_mode", std::int64_t{1}}}, {x, c, c, c, c},
                         {{DType::f32, Shape{1, 2, 2, 2}}}),
            ErrorCode::unsupported);
}

namespace {

std::vector<double> layer_norm_reference(const Tensor& x, const Tensor& scale, const Tensor* bias, std::int64_t axis,
                                         double epsilon) {
  const Shape& s = x.shape();
  std::int64_t width = 1;
  for (std::size_t d = axis; d < s.rank(); ++d) width *= s[d];
  const auto xv = x.values<float>();
  std::vector<double> result;
  for (std::int64_t row = 0; row < s.numel() / width; ++row) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < width; ++i) mean += xv[row * width + i];
    mean /= width;
    for (std::int64_t i = 0; i < width; ++i) var += std::pow(xv[row * width + i] - mean, 2);
    var /= width;
    for (std::int64_t i = 0; i < width; ++i)
      result.push_back((xv[row * width + i] - mean) / std::sqrt(var + epsilon) * scale.values<float>()[i] +
                       (bias ? bias->values<float>()[i] : 0.0));
  }
  return result;
}

}  // namespace

TEST(CpuOps, LayerNormalizationHandValues) {
  // Row [1, 2, 3, 4]: mean 2.5, variance 1.25, so (x - 2.5) / sqrt(1.25) = ±0.4472, ±1.3416.
  const Tensor x = Tensor::from<float>(Shape{1, 4}, {1, 2, 3, 4});
  const Tensor scale = Tensor::from<float>(Shape{4}, {1, 1, 2, 2});
  const Tensor b = Tensor::from<float>(Shape{4}, {0, 1, 0, 1});
  const Tensor y = run_cpu_op1("LayerNormalization", {{"epsilon", 0.0f}}, {x, scale, b}, Shape{1, 4});
  EXPECT_TRUE(
      all_close(y, {-1.3416407864998738, 0.5527864045000421, 0.8944271909999159, 3.6832815729997477}, 1e-6, 1e-5));
}

TEST(CpuOps, LayerNormalizationAxesWithAndWithoutBias) {
  const Tensor x = random_tensor(Shape{2, 3, 4, 5}, 20, -2.0f, 3.0f);
  struct Case {
    std::int64_t axis;
    Shape params;
  };
  for (const Case& c : {Case{-1, Shape{5}}, Case{1, Shape{3, 4, 5}}, Case{-2, Shape{4, 5}}, Case{3, Shape{5}}}) {
    const Tensor scale = random_tensor(c.params, 21);
    const Tensor bias = random_tensor(c.params, 22);
    const std::int64_t axis = c.axis < 0 ? c.axis + 4 : c.axis;
    const Attributes attrs{{"axis", c.axis}, {"epsilon", 1e-5f}};
    EXPECT_TRUE(all_close(run_cpu_op1("LayerNormalization", attrs, {x, scale, bias}, x.shape()),
                          layer_norm_reference(x, scale, &bias, axis, 1e-5), 1e-5, 1e-5))
        << "axis " << c.axis;
    EXPECT_TRUE(all_close(run_cpu_op1("LayerNormalization", attrs, {x, scale, OpInput::absent()}, x.shape()),
                          layer_norm_reference(x, scale, nullptr, axis, 1e-5), 1e-5, 1e-5))
        << "axis " << c.axis << " without B";
    EXPECT_TRUE(all_close(run_cpu_op1("LayerNormalization", attrs, {x, scale}, x.shape()),
                          layer_norm_reference(x, scale, nullptr, axis, 1e-5), 1e-5, 1e-5))
        << "axis " << c.axis << " two inputs";
  }
}

TEST(CpuOps, LayerNormalizationRejectsBadStatisticsShapeAndBadScale) {
  const Tensor x = random_tensor(Shape{2, 4}, 1);
  const Tensor scale = random_tensor(Shape{4}, 2);
  // Mean is X's shape with the normalised dims set to 1: [2, 1].
  EXPECT_EQ(create_error("LayerNormalization", {}, {x, scale}, {{DType::f32, Shape{2, 4}}, {DType::f32, Shape{2, 1}}}),
            std::nullopt);
  EXPECT_EQ(create_error("LayerNormalization", {}, {x, scale}, {{DType::f32, Shape{2, 4}}, {DType::f32, Shape{2, 4}}}),
            ErrorCode::shape_mismatch);
  // Absent Mean/InvStdDev outputs are fine.
  EXPECT_EQ(create_error("LayerNormalization", {}, {x, scale},
                         {{DType::f32, Shape{2, 4}}, OpOutput::absent(), OpOutput::absent()}),
            std::nullopt);
  const Tensor wrong = random_tensor(Shape{3}, 3);
  EXPECT_EQ(create_error("LayerNormalization", {}, {x, wrong}, {{DType::f32, Shape{2, 4}}}), ErrorCode::shape_mismatch);
}
