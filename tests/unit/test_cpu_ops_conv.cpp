// CPU backend: Conv against hand values and a direct (seven nested loops) double reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

struct ConvParams {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t group = 1;
};

Attributes conv_attrs(const ConvParams& p, std::int64_t kh, std::int64_t kw) {
  return {{"kernel_shape", std::vector<std::int64_t>{kh, kw}},
          {"strides", std::vector<std::int64_t>{p.stride_h, p.stride_w}},
          {"pads", std::vector<std::int64_t>{p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}},
          {"dilations", std::vector<std::int64_t>{p.dilation_h, p.dilation_w}},
          {"group", p.group}};
}

Shape conv_output_shape(const Shape& x, const Shape& w, const ConvParams& p) {
  const std::int64_t oh = (x[2] + p.pad_top + p.pad_bottom - ((w[2] - 1) * p.dilation_h + 1)) / p.stride_h + 1;
  const std::int64_t ow = (x[3] + p.pad_left + p.pad_right - ((w[3] - 1) * p.dilation_w + 1)) / p.stride_w + 1;
  return Shape{x[0], w[0], oh, ow};
}

// The definition of a grouped, dilated, padded cross-correlation, one output element at a time.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor* bias, const ConvParams& p,
                                   const Shape& out) {
  const auto xv = x.values<float>();
  const auto wv = w.values<float>();
  const std::int64_t c_in = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const std::int64_t group_in = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const std::int64_t group_out = out[1] / p.group;
  std::vector<double> result;
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t m = 0; m < out[1]; ++m)
      for (std::int64_t oy = 0; oy < out[2]; ++oy)
        for (std::int64_t ox = 0; ox < out[3]; ++ox) {
          double sum = bias ? bias->values<float>()[m] : 0.0;
          const std::int64_t g = m / group_out;
          for (std::int64_t c = 0; c < group_in; ++c)
            for (std::int64_t ky = 0; ky < kh; ++ky)
              for (std::int64_t kx = 0; kx < kw; ++kx) {
                const std::int64_t iy = oy * p.stride_h - p.pad_top + ky * p.dilation_h;
                const std::int64_t ix = ox * p.stride_w - p.pad_left + kx * p.dilation_w;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const std::int64_t ci = g * group_in + c;
                sum += double(xv[((n * c_in + ci) * h + iy) * wd + ix]) * wv[((m * group_in + c) * kh + ky) * kw + kx];
              }
          result.push_back(sum);
        }
  return result;
}

}  // namespace

TEST(CpuOps, ConvHandValues) {
  // 1x1x3x3 input 1..9, 2x2 all-ones kernel, no pad: sums of each 2x2 window.
  const Tensor x = Tensor::from<float>(Shape{1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Tensor::from<float>(Shape{1, 1, 2, 2}, {1, 1, 1, 1});
  const Tensor b = Tensor::from<float>(Shape{1}, {0.5f});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Conv", {{"kernel_shape", std::vector<std::int64_t>{2, 2}}}, {x, w, b}, Shape{1, 1, 2, 2}),
                {12.5, 16.5, 24.5, 28.5}, 0, 0));
  // Same kernel with pads 1 and stride 2: windows at (-1,-1), (-1,1), (1,-1), (1,1).
  const Tensor y = run_cpu_op1(
      "Conv", {{"pads", std::vector<std::int64_t>{1, 1, 1, 1}}, {"strides", std::vector<std::int64_t>{2, 2}}}, {x, w},
      Shape{1, 1, 2, 2});
  EXPECT_TRUE(all_close(y, {1, 5, 11, 28}, 0, 0));
}

TEST(CpuOps, ConvStridePadDilationGroupBias) {
  struct Case {
    Shape x, w;
    ConvParams p;
    bool bias;
  };
  const std::vector<Case> cases = {
      {Shape{2, 3, 9, 8}, Shape{4, 3, 3, 3}, {}, true},                             // plain 3x3
      {Shape{1, 3, 11, 10}, Shape{5, 3, 3, 3}, {2, 2, 1, 1, 1, 1}, true},           // stride 2, pad 1
      {Shape{2, 4, 10, 9}, Shape{6, 2, 3, 2}, {1, 2, 2, 0, 1, 1, 2, 1, 2}, false},  // groups, dilation, odd pads
      {Shape{1, 6, 7, 7}, Shape{6, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 6}, true},    // depthwise
      {Shape{2, 8, 5, 6}, Shape{7, 8, 1, 1}, {}, true},                             // 1x1 direct path
      {Shape{1, 4, 6, 6}, Shape{4, 4, 1, 1}, {2, 2, 0, 0, 0, 0}, false},            // 1x1 strided
      {Shape{1, 3, 20, 20}, Shape{8, 3, 7, 7}, {2, 2, 3, 3, 3, 3}, true},           // ResNet-style stem
      {Shape{1, 2, 5, 5}, Shape{3, 2, 3, 3}, {3, 1, 2, 0, 1, 2, 1, 2}, false},      // asymmetric everything
  };
  std::uint32_t seed = 300;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, seed++);
    const Tensor w = random_tensor(c.w, seed++);
    const Shape out = conv_output_shape(c.x, c.w, c.p);
    const Attributes attrs = conv_attrs(c.p, c.w[2], c.w[3]);
    if (c.bias) {
      const Tensor b = random_tensor(Shape{c.w[0]}, seed++);
      EXPECT_TRUE(all_close(run_cpu_op1("Conv", attrs, {x, w, b}, out), conv_reference(x, w, &b, c.p, out), 1e-5, 1e-5))
          << "X " << c.x.to_string() << " W " << c.w.to_string();
    } else {
      EXPECT_TRUE(all_close(run_cpu_op1("Conv", attrs, {x, w, OpInput::absent()}, out),
                            conv_reference(x, w, nullptr, c.p, out), 1e-5, 1e-5))
          << "X " << c.x.to_string() << " W " << c.w.to_string();
      EXPECT_TRUE(
          all_close(run_cpu_op1("Conv", attrs, {x, w}, out), conv_reference(x, w, nullptr, c.p, out), 1e-5, 1e-5))
          << "X " << c.x.to_string() << " W " << c.w.to_string() << " (two inputs)";
    }
  }
}

TEST(CpuOps, ConvRejectsBadAttributesAndShapes) {
  const Tensor x = random_tensor(Shape{1, 3, 8, 8}, 1);
  const Tensor w = random_tensor(Shape{4, 3, 3, 3}, 2);
  EXPECT_EQ(create_error("Conv", {{"auto_pad", std::string("SAME_UPPER")}}, {x, w}, {{DType::f32, Shape{1, 4, 8, 8}}}),
            std::nullopt);
  EXPECT_EQ(create_error("Conv", {{"auto_pad", std::string("MIRROR")}}, {x, w}, {{DType::f32, Shape{1, 4, 8, 8}}}),
            ErrorCode::unsupported);
  // Wrong output shape from the planner.
  EXPECT_EQ(create_error("Conv", {}, {x, w}, {{DType::f32, Shape{1, 4, 8, 8}}}), ErrorCode::shape_mismatch);
  // Channels not divisible by group.
  EXPECT_EQ(create_error("Conv", {{"group", std::int64_t{2}}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}}),
            ErrorCode::shape_mismatch);
  // X and W of different ranks.
  const Tensor w1 = random_tensor(Shape{4, 3, 3}, 4);
  EXPECT_EQ(create_error("Conv", {}, {x, w1}, {{DType::f32, Shape{1, 4, 6}}}), ErrorCode::shape_mismatch);
}
