// CPU backend: N-D pooling (auto_pad, dilations, ceil_mode, count_include_pad), GlobalMaxPool, Pad
// and Resize against hand values (Resize's and Pad's from the ONNX reference implementation and
// numpy.pad) and a naive pooling loop written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

using Ints = std::vector<std::int64_t>;

// Naive pooling over any spatial rank: every tap of every window is visited; taps outside the
// input are skipped for max and count towards an average only with count_include_pad, and then
// only inside [-pad_begin, in + pad_end).
std::vector<double> pool_reference(const Tensor& x, const Ints& kernel, const Ints& stride, const Ints& dilation,
                                   const Ints& pads, bool is_max, bool count_include_pad, const Shape& out) {
  const auto xv = x.values<float>();
  const std::size_t r = kernel.size();
  const Ints in(x.shape().dims().begin() + 2, x.shape().dims().end());
  const Ints os(out.dims().begin() + 2, out.dims().end());
  std::int64_t in_size = 1, out_size = 1, taps = 1;
  for (std::size_t a = 0; a < r; ++a) {
    in_size *= in[a];
    out_size *= os[a];
    taps *= kernel[a];
  }
  std::vector<double> y;
  for (std::int64_t plane = 0; plane < out[0] * out[1]; ++plane)
    for (std::int64_t o = 0; o < out_size; ++o) {
      Ints oi(r);
      for (std::int64_t rest = o, a = static_cast<std::int64_t>(r) - 1; a >= 0; --a) {
        oi[a] = rest % os[a];
        rest /= os[a];
      }
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      std::int64_t valid = 0, padded = 0;
      for (std::int64_t t = 0; t < taps; ++t) {
        std::int64_t rest = t, offset = 0;
        bool inside = true, in_pads = true;
        for (std::int64_t a = static_cast<std::int64_t>(r) - 1, scale = 1; a >= 0; --a) {
          const std::int64_t k = rest % kernel[a];
          rest /= kernel[a];
          const std::int64_t i = oi[a] * stride[a] + k * dilation[a] - pads[a];
          inside = inside && i >= 0 && i < in[a];
          in_pads = in_pads && i >= -pads[a] && i < in[a] + pads[r + a];
          offset += i * scale;
          scale *= in[a];
        }
        if (in_pads) ++padded;
        if (!inside) continue;
        const double v = xv[plane * in_size + offset];
        best = std::max(best, v);
        sum += v;
        ++valid;
      }
      y.push_back(is_max ? best : sum / double(count_include_pad ? padded : valid));
    }
  return y;
}

Tensor iota(const Shape& shape, float start = 1) {
  std::vector<float> v(static_cast<std::size_t>(shape.numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from<float>(shape, v);
}

}  // namespace

TEST(CpuOpsPoolNd, AutoPadModesHandValues) {
  // 1-D x = 1..5, kernel 2, stride 1: SAME puts the one pad at the end (UPPER) or start (LOWER).
  const Tensor x = iota(Shape{1, 1, 5});
  Attributes upper = {{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}};
  Attributes lower = {{"kernel_shape", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}};
  Attributes valid = {{"kernel_shape", Ints{2}}, {"auto_pad", std::string("VALID")}, {"strides", Ints{2}}};
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", upper, {x}, Shape{1, 1, 5}), {2, 3, 4, 5, 5}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", lower, {x}, Shape{1, 1, 5}), {1, 2, 3, 4, 5}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", upper, {x}, Shape{1, 1, 5}), {1.5, 2.5, 3.5, 4.5, 5}, 0, 0));
  upper.set("count_include_pad", std::int64_t{1});
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", upper, {x}, Shape{1, 1, 5}), {1.5, 2.5, 3.5, 4.5, 2.5}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", valid, {x}, Shape{1, 1, 2}), {1.5, 3.5}, 0, 0));
}

TEST(CpuOpsPoolNd, CeilModeAndDilationHandValues) {
  // x = 1..5, kernel 2, stride 2, ceil_mode: windows [1,2], [3,4], [5] (the last is clipped).
  const Tensor x = iota(Shape{1, 1, 5});
  const Attributes ceil = {{"kernel_shape", Ints{2}}, {"strides", Ints{2}}, {"ceil_mode", std::int64_t{1}}};
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", ceil, {x}, Shape{1, 1, 3}), {1.5, 3.5, 5}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", ceil, {x}, Shape{1, 1, 3}), {2, 4, 5}, 0, 0));
  // Dilation 2, kernel 2: taps i and i + 2.
  const Attributes dilated = {{"kernel_shape", Ints{2}}, {"dilations", Ints{2}}};
  const Tensor y = Tensor::from<float>(Shape{1, 1, 5}, {5, 1, 4, 2, 3});
  EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", dilated, {y}, Shape{1, 1, 3}), {5, 2, 4}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", dilated, {y}, Shape{1, 1, 3}), {4.5, 1.5, 3.5}, 0, 0));
}

TEST(CpuOpsPoolNd, Random1d2d3d) {
  struct Case {
    Shape x;
    Ints kernel, stride, dilation, pads;
    bool ceil_mode;
  };
  const std::vector<Case> cases = {
      {Shape{2, 3, 11}, {3}, {2}, {1}, {1, 2}, true},
      {Shape{1, 2, 9, 8}, {3, 2}, {2, 1}, {2, 3}, {2, 1, 1, 0}, false},
      {Shape{1, 2, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true},
      {Shape{1, 2, 5, 6, 4}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {1, 1, 0, 0, 1, 1}, true},
      {Shape{2, 1, 6, 5, 7}, {3, 2, 2}, {1, 2, 2}, {2, 1, 2}, {0, 1, 1, 2, 0, 1}, false},
  };
  std::uint32_t seed = 900;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, seed++);
    const std::size_t r = c.kernel.size();
    std::vector<std::int64_t> out{c.x[0], c.x[1]};
    for (std::size_t a = 0; a < r; ++a) {
      const std::int64_t span = (c.kernel[a] - 1) * c.dilation[a] + 1;
      const double exact = double(c.x[2 + a] + c.pads[a] + c.pads[r + a] - span) / double(c.stride[a]);
      std::int64_t o = static_cast<std::int64_t>(c.ceil_mode ? std::ceil(exact) : std::floor(exact)) + 1;
      if (c.ceil_mode && (o - 1) * c.stride[a] >= c.x[2 + a] + c.pads[a]) --o;
      out.push_back(o);
    }
    const Shape out_shape(out);
    for (int include_pad = 0; include_pad < 2; ++include_pad) {
      const Attributes attrs = {{"kernel_shape", c.kernel},
                                {"strides", c.stride},
                                {"dilations", c.dilation},
                                {"pads", c.pads},
                                {"ceil_mode", std::int64_t{c.ceil_mode}},
                                {"count_include_pad", std::int64_t{include_pad}}};
      EXPECT_TRUE(all_close(run_cpu_op1("AveragePool", attrs, {x}, out_shape),
                            pool_reference(x, c.kernel, c.stride, c.dilation, c.pads, false, include_pad, out_shape)))
          << "X " << c.x.to_string() << " count_include_pad " << include_pad;
      if (include_pad == 0)
        EXPECT_TRUE(all_close(run_cpu_op1("MaxPool", attrs, {x}, out_shape),
                              pool_reference(x, c.kernel, c.stride, c.dilation, c.pads, true, false, out_shape), 0, 0))
            << "X " << c.x.to_string();
    }
  }
}

TEST(CpuOpsPoolNd, GlobalMaxPool) {
  const Tensor hand = Tensor::from<float>(Shape{1, 2, 3}, {1, -2, 3, -4, -5, -6});
  EXPECT_TRUE(all_close(run_cpu_op1("GlobalMaxPool", {}, {hand}, Shape{1, 2, 1}), {3, -4}, 0, 0));
  const Tensor x = random_tensor(Shape{2, 3, 4, 2, 3}, 5);
  std::vector<double> expected;
  const auto v = x.values<float>();
  for (std::int64_t plane = 0; plane < 6; ++plane)
    expected.push_back(*std::max_element(v.begin() + plane * 24, v.begin() + (plane + 1) * 24));
  EXPECT_TRUE(all_close(run_cpu_op1("GlobalMaxPool", {}, {x}, Shape{2, 3, 1, 1, 1}), expected, 0, 0));
}

TEST(CpuOpsPad, ModesHandValues) {
  const Tensor d = Tensor::from<std::int64_t>(Shape{2, 3}, {1, 2, 3, 4, 5, 6});
  const auto pads = [](Ints p) { return OpInput::initializer(Tensor::from<std::int64_t>(Shape{4}, p)); };
  // numpy.pad(d, ((1, 0), (2, 1)), 'reflect') and ((0, 1), (1, 2)), 'edge'.
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("Pad", {{"mode", std::string("reflect")}}, {d, pads({1, 2, 0, 1})}, Shape{3, 6}, DType::i64),
      {6, 5, 4, 5, 6, 5, 3, 2, 1, 2, 3, 2, 6, 5, 4, 5, 6, 5}));
  EXPECT_TRUE(all_equal<std::int64_t>(
      run_cpu_op1("Pad", {{"mode", std::string("edge")}}, {d, pads({0, 1, 1, 2})}, Shape{3, 6}, DType::i64),
      {1, 1, 2, 3, 3, 3, 4, 4, 5, 6, 6, 6, 4, 4, 5, 6, 6, 6}));
  // Constant: the value input, or 0 without it; negative pads crop.
  const Tensor value = Tensor::from<std::int64_t>(Shape{}, {-7});
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Pad", {}, {d, pads({0, 1, 1, -1}), value}, Shape{3, 3}, DType::i64),
                                      {-7, 1, 2, -7, 4, 5, -7, -7, -7}));
  EXPECT_TRUE(all_equal<std::int64_t>(run_cpu_op1("Pad", {}, {d, pads({1, 0, 0, 0})}, Shape{3, 3}, DType::i64),
                                      {0, 0, 0, 1, 2, 3, 4, 5, 6}));
  // Reflect further than the axis is long repeats: numpy.pad([1, 2, 3], (5, 4), 'reflect').
  const Tensor row = Tensor::from<float>(Shape{3}, {1, 2, 3});
  EXPECT_TRUE(
      all_close(run_cpu_op1("Pad", {{"mode", std::string("reflect")}},
                            {row, OpInput::initializer(Tensor::from<std::int64_t>(Shape{2}, {5, 4}))}, Shape{12}),
                {2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3}, 0, 0));
  // f32 with a constant value, 3-D.
  const Tensor f = Tensor::from<float>(Shape{1, 1, 2}, {1.5f, -2.5f});
  EXPECT_TRUE(all_close(run_cpu_op1("Pad", {},
                                    {f, OpInput::initializer(Tensor::from<std::int64_t>(Shape{6}, {0, 1, 1, 0, 0, 0})),
                                     Tensor::from<float>(Shape{1}, {9})},
                                    Shape{1, 2, 3}),
                        {9, 9, 9, 9, 1.5, -2.5}, 0, 0));
}

TEST(CpuOpsPad, Errors) {
  const Tensor d = random_tensor(Shape{2, 3}, 1);
  const OpInput pads = OpInput::initializer(Tensor::from<std::int64_t>(Shape{4}, {1, 1, 1, 1}));
  EXPECT_EQ(create_error("Pad", {{"mode", std::string("wrap")}}, {d, pads}, {{DType::f32, Shape{4, 5}}}),
            ErrorCode::unsupported);
  // pads only known at run time.
  EXPECT_EQ(
      create_error("Pad", {}, {d, Tensor::from<std::int64_t>(Shape{4}, {1, 1, 1, 1})}, {{DType::f32, Shape{4, 5}}}),
      ErrorCode::unsupported);
  EXPECT_EQ(create_error("Pad", {}, {d, OpInput::initializer(Tensor::from<std::int64_t>(Shape{2}, {1, 1}))},
                         {{DType::f32, Shape{4, 5}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Pad", {}, {d, pads}, {{DType::f32, Shape{4, 4}}}), ErrorCode::shape_mismatch);
}

namespace {

// Resize of the 3x4 ramp 1..12 by `scales` on its last two axes.
Tensor resize_ramp(const Attributes& attrs, std::vector<float> scales, const Shape& out) {
  return run_cpu_op1("Resize", attrs,
                     {iota(Shape{1, 1, 3, 4}), OpInput::absent(),
                      OpInput::initializer(Tensor::from<float>(Shape{4}, {1, 1, scales[0], scales[1]}))},
                     out);
}

Attributes resize_attrs(const std::string& mode, const std::string& transform, const std::string& nearest = "") {
  Attributes attrs = {{"mode", mode}, {"coordinate_transformation_mode", transform}};
  if (!nearest.empty()) attrs.set("nearest_mode", nearest);
  return attrs;
}

}  // namespace

// Expected values from onnx.reference's Resize on the same input.
TEST(CpuOpsResize, NearestModes) {
  EXPECT_TRUE(all_close(resize_ramp(resize_attrs("nearest", "asymmetric", "floor"), {2, 1.5f}, Shape{1, 1, 6, 6}),
                        {1, 1, 2, 3, 3, 4, 1, 1, 2,  3,  3,  4,  5, 5, 6,  7,  7,  8,
                         5, 5, 6, 7, 7, 8, 9, 9, 10, 11, 11, 12, 9, 9, 10, 11, 11, 12},
                        0, 0));
  EXPECT_TRUE(all_close(
      resize_ramp(resize_attrs("nearest", "half_pixel", "round_prefer_floor"), {0.6f, 0.75f}, Shape{1, 1, 1, 3}),
      {1, 2, 4}, 0, 0));
  EXPECT_TRUE(all_close(
      resize_ramp(resize_attrs("nearest", "align_corners", "round_prefer_ceil"), {1.7f, 1.5f}, Shape{1, 1, 5, 6}),
      {1, 2, 2, 3, 3, 4, 1, 2, 2, 3, 3, 4, 5, 6, 6, 7, 7, 8, 5, 6, 6, 7, 7, 8, 9, 10, 10, 11, 11, 12}, 0, 0));
  EXPECT_TRUE(
      all_close(resize_ramp(resize_attrs("nearest", "pytorch_half_pixel", "ceil"), {2, 0.5f}, Shape{1, 1, 6, 2}),
                {2, 4, 6, 8, 6, 8, 10, 12, 10, 12, 10, 12}, 0, 0));
}

TEST(CpuOpsResize, LinearCoordinateModes) {
  EXPECT_TRUE(all_close(
      resize_ramp(resize_attrs("linear", "half_pixel"), {2, 1.5f}, Shape{1, 1, 6, 6}),
      {1, 1.5, 2.166667, 2.833333, 3.5, 4, 2, 2.5, 3.166667, 3.833333, 4.5,  5,  4, 4.5, 5.166667, 5.833333, 6.5,  7,
       6, 6.5, 7.166667, 7.833333, 8.5, 9, 8, 8.5, 9.166667, 9.833333, 10.5, 11, 9, 9.5, 10.16667, 10.83333, 11.5, 12},
      1e-5, 1e-5));
  EXPECT_TRUE(all_close(resize_ramp(resize_attrs("linear", "asymmetric"), {2, 1.5f}, Shape{1, 1, 6, 6}),
                        {1, 1.666667, 2.333333, 3,  3.666667, 4,  3, 3.666667, 4.333333, 5,  5.666667, 6,
                         5, 5.666667, 6.333333, 7,  7.666667, 8,  7, 7.666667, 8.333333, 9,  9.666667, 10,
                         9, 9.666667, 10.33333, 11, 11.66667, 12, 9, 9.666667, 10.33333, 11, 11.66667, 12},
                        1e-5, 1e-5));
  EXPECT_TRUE(all_close(resize_ramp(resize_attrs("linear", "align_corners"), {2, 1.5f}, Shape{1, 1, 6, 6}),
                        {1,   1.6, 2.2, 2.8, 3.4, 4,   2.6, 3.2, 3.8, 4.4, 5,   5.6,  4.2, 4.8, 5.4,  6,    6.6,  7.2,
                         5.8, 6.4, 7,   7.6, 8.2, 8.8, 7.4, 8,   8.6, 9.2, 9.8, 10.4, 9,   9.6, 10.2, 10.8, 11.4, 12},
                        1e-5, 1e-5));
  EXPECT_TRUE(all_close(resize_ramp(resize_attrs("linear", "pytorch_half_pixel"), {0.5f, 0.5f}, Shape{1, 1, 1, 2}),
                        {3.5, 5.5}, 1e-5, 1e-5));
  EXPECT_TRUE(all_close(resize_ramp(resize_attrs("linear", "half_pixel"), {0.6f, 0.75f}, Shape{1, 1, 1, 3}),
                        {2.5, 3.833333, 5.166667}, 1e-5, 1e-5));
}

TEST(CpuOpsResize, SizesAndEmptyScales) {
  // Opset 11 passes an empty scales tensor next to sizes; sizes 6x6 equal scales 2 x 1.5 here.
  const Tensor x = iota(Shape{1, 1, 3, 4});
  const Tensor y = run_cpu_op1("Resize", resize_attrs("nearest", "asymmetric", "floor"),
                               {x, OpInput::initializer(Tensor::from<float>(Shape{0}, {})),
                                OpInput::initializer(Tensor::from<float>(Shape{0}, {})),
                                OpInput::initializer(Tensor::from<std::int64_t>(Shape{4}, {1, 1, 6, 6}))},
                               Shape{1, 1, 6, 6});
  EXPECT_TRUE(all_close(y, {1, 1, 2, 3, 3, 4, 1, 1, 2,  3,  3,  4,  5, 5, 6,  7,  7,  8,
                            5, 5, 6, 7, 7, 8, 9, 9, 10, 11, 11, 12, 9, 9, 10, 11, 11, 12},
                        0, 0));
}

TEST(CpuOpsResize, Errors) {
  const Tensor x = iota(Shape{1, 1, 3, 4});
  const OpInput scales = OpInput::initializer(Tensor::from<float>(Shape{4}, {1, 1, 2, 2}));
  EXPECT_EQ(create_error("Resize", resize_attrs("linear", "tf_crop_and_resize"), {x, OpInput::absent(), scales},
                         {{DType::f32, Shape{1, 1, 6, 8}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(create_error("Resize", {{"mode", std::string("area")}}, {x, OpInput::absent(), scales},
                         {{DType::f32, Shape{1, 1, 6, 8}}}),
            ErrorCode::shape_mismatch);
  // scales only known at run time.
  EXPECT_EQ(create_error("Resize", {}, {x, OpInput::absent(), Tensor::from<float>(Shape{4}, {1, 1, 2, 2})},
                         {{DType::f32, Shape{1, 1, 6, 8}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(create_error("Resize", {}, {x, OpInput::absent(), scales}, {{DType::f32, Shape{1, 1, 6, 7}}}),
            ErrorCode::shape_mismatch);
}
