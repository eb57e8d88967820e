// CPU backend: Conv and ConvTranspose in 1-D, 2-D and 3-D with auto_pad, output_padding and
// output_shape, against hand values and naive scatter/gather loops written here.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "unit/cpu_op_harness.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

using Ints = std::vector<std::int64_t>;

// Spatial geometry of one case: everything per spatial axis, pads as [begins..., ends...].
struct Window {
  Ints stride, dilation, pads;
};

// Calls fn(index) for every index of `dims` in row-major order.
template <class Fn>
void for_each_index(const Ints& dims, Fn fn) {
  std::int64_t total = 1;
  for (std::int64_t d : dims) total *= d;
  Ints index(dims.size(), 0);
  for (std::int64_t i = 0; i < total; ++i) {
    fn(index);
    for (std::size_t a = dims.size(); a-- > 0;) {
      if (++index[a] < dims[a]) break;
      index[a] = 0;
    }
  }
}

std::int64_t flat(const Ints& dims, const Ints& index) {
  std::int64_t offset = 0;
  for (std::size_t a = 0; a < dims.size(); ++a) offset = offset * dims[a] + index[a];
  return offset;
}

Ints spatial(const Shape& s) { return {s.dims().begin() + 2, s.dims().end()}; }

std::int64_t volume(const Ints& dims) {
  std::int64_t p = 1;
  for (std::int64_t d : dims) p *= d;
  return p;
}

// Cross-correlation by definition, any spatial rank: every output element gathers its taps.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor* b, const Window& win,
                                   std::int64_t group, const Shape& out) {
  const auto xv = x.values<float>();
  const auto wv = w.values<float>();
  const Ints xs = spatial(x.shape()), ks = spatial(w.shape()), os = spatial(out);
  const std::size_t r = xs.size();
  const std::int64_t channels = x.shape()[1], group_in = w.shape()[1], group_out = out[1] / group;
  std::vector<double> y;
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t m = 0; m < out[1]; ++m)
      for_each_index(os, [&](const Ints& o) {
        double sum = b ? b->values<float>()[m] : 0.0;
        for (std::int64_t c = 0; c < group_in; ++c)
          for_each_index(ks, [&](const Ints& k) {
            Ints i(r);
            for (std::size_t a = 0; a < r; ++a) {
              i[a] = o[a] * win.stride[a] + k[a] * win.dilation[a] - win.pads[a];
              if (i[a] < 0 || i[a] >= xs[a]) return;
            }
            const std::int64_t ci = m / group_out * group_in + c;
            sum += double(xv[(n * channels + ci) * volume(xs) + flat(xs, i)]) *
                   wv[(m * group_in + c) * volume(ks) + flat(ks, k)];
          });
        y.push_back(sum);
      });
  return y;
}

// Transposed convolution by definition: every input element scatters x * w into y at
// i * stride + k * dilation - pad_begin, dropping positions outside y.
std::vector<double> conv_transpose_reference(const Tensor& x, const Tensor& w, const Tensor* b, const Window& win,
                                             std::int64_t group, const Shape& out) {
  const auto xv = x.values<float>();
  const auto wv = w.values<float>();
  const Ints xs = spatial(x.shape()), ks = spatial(w.shape()), os = spatial(out);
  const std::size_t r = xs.size();
  const std::int64_t x_size = volume(xs), k_size = volume(ks), o_size = volume(os);
  const std::int64_t channels = x.shape()[1], group_in = channels / group, group_out = w.shape()[1];
  std::vector<double> y(static_cast<std::size_t>(out.numel()), 0.0);
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t m = 0; m < out[1]; ++m)
      for (std::int64_t p = 0; p < o_size; ++p)
        y[static_cast<std::size_t>((n * out[1] + m) * o_size + p)] = b ? b->values<float>()[m] : 0.0;
  for (std::int64_t n = 0; n < out[0]; ++n)
    for (std::int64_t c = 0; c < channels; ++c)
      for_each_index(xs, [&](const Ints& i) {
        const double xval = xv[(n * channels + c) * x_size + flat(xs, i)];
        for (std::int64_t mo = 0; mo < group_out; ++mo) {
          const std::int64_t m = c / group_in * group_out + mo;
          for_each_index(ks, [&](const Ints& k) {
            Ints o(r);
            for (std::size_t a = 0; a < r; ++a) {
              o[a] = i[a] * win.stride[a] + k[a] * win.dilation[a] - win.pads[a];
              if (o[a] < 0 || o[a] >= os[a]) return;
            }
            y[static_cast<std::size_t>((n * out[1] + m) * o_size + flat(os, o))] +=
                xval * wv[(c * group_out + mo) * k_size + flat(ks, k)];
          });
        }
      });
  return y;
}

Attributes window_attrs(const Window& win, std::int64_t group) {
  return {{"strides", win.stride}, {"dilations", win.dilation}, {"pads", win.pads}, {"group", group}};
}

// The message kernel creation throws, or "" when it succeeds.
std::string create_message(const std::string& op, Attributes attrs, const std::vector<OpInput>& inputs,
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

TEST(CpuOpsConvNd, Conv1dHandValues) {
  // x = 1..5, w = [1, 1, 1]: sums of three neighbours.
  const Tensor x = Tensor::from<float>(Shape{1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor w = Tensor::from<float>(Shape{1, 1, 3}, {1, 1, 1});
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", {}, {x, w}, Shape{1, 1, 3}), {6, 9, 12}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", {{"pads", Ints{1, 1}}}, {x, w}, Shape{1, 1, 5}), {3, 6, 9, 12, 9}, 0, 0));
  // Dilation 2: taps i, i + 2, i + 4.
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", {{"dilations", Ints{2}}}, {x, w}, Shape{1, 1, 1}), {9}, 0, 0));
}

TEST(CpuOpsConvNd, ConvAutoPadModes) {
  // Stride 2 over 5 with a 3-tap kernel: SAME gives ceil(5 / 2) = 3 outputs and 2 pads, one each side.
  const Tensor x = Tensor::from<float>(Shape{1, 1, 5}, {1, 2, 3, 4, 5});
  const Tensor w3 = Tensor::from<float>(Shape{1, 1, 3}, {1, 1, 1});
  const Attributes stride2 = {{"strides", Ints{2}}};
  Attributes upper = stride2, lower = stride2, valid = stride2;
  upper.set("auto_pad", std::string("SAME_UPPER"));
  lower.set("auto_pad", std::string("SAME_LOWER"));
  valid.set("auto_pad", std::string("VALID"));
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", upper, {x, w3}, Shape{1, 1, 3}), {3, 9, 9}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", lower, {x, w3}, Shape{1, 1, 3}), {3, 9, 9}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", valid, {x, w3}, Shape{1, 1, 2}), {6, 12}, 0, 0));
  // A 2-tap kernel over 4 needs one pad: SAME_UPPER puts it at the end, SAME_LOWER at the start.
  const Tensor x4 = Tensor::from<float>(Shape{1, 1, 4}, {1, 2, 3, 4});
  const Tensor w2 = Tensor::from<float>(Shape{1, 1, 2}, {1, 1});
  upper.set("strides", Ints{1});
  lower.set("strides", Ints{1});
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", upper, {x4, w2}, Shape{1, 1, 4}), {3, 5, 7, 4}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", lower, {x4, w2}, Shape{1, 1, 4}), {1, 3, 5, 7}, 0, 0));
  // 2-D SAME_LOWER with stride 2 (as the ONNX node test): 5x5 -> 3x3, pads 1 each side.
  const Tensor x2 = random_tensor(Shape{1, 2, 5, 5}, 11);
  const Tensor w2d = random_tensor(Shape{3, 2, 3, 3}, 12);
  Attributes same2d = {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}};
  EXPECT_TRUE(all_close(run_cpu_op1("Conv", same2d, {x2, w2d}, Shape{1, 3, 3, 3}),
                        conv_reference(x2, w2d, nullptr, {{2, 2}, {1, 1}, {1, 1, 1, 1}}, 1, Shape{1, 3, 3, 3})));
}

TEST(CpuOpsConvNd, ConvRandom1d3dGroupsDilations) {
  struct Case {
    Shape x, w;
    Window win;
    std::int64_t group;
    bool bias;
  };
  const std::vector<Case> cases = {
      {Shape{2, 4, 17}, Shape{6, 2, 3}, {{2}, {2}, {1, 3}}, 2, true},  // 1-D grouped, dilated
      {Shape{1, 6, 9}, Shape{6, 1, 5}, {{1}, {1}, {2, 2}}, 6, false},  // 1-D depthwise
      {Shape{1, 3, 12}, Shape{4, 3, 1}, {{3}, {1}, {0, 0}}, 1, true},  // 1-D pointwise strided
      {Shape{1, 2, 5, 6, 4}, Shape{4, 2, 3, 2, 3}, {{1, 2, 1}, {1, 1, 1}, {1, 0, 1, 1, 1, 0}}, 1, true},  // 3-D
      {Shape{2, 4, 6, 5, 5},
       Shape{4, 2, 2, 3, 2},
       {{2, 1, 1}, {2, 1, 2}, {0, 1, 0, 1, 1, 1}},
       2,
       false},  // 3-D grouped
  };
  std::uint32_t seed = 500;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, seed++);
    const Tensor w = random_tensor(c.w, seed++);
    const Tensor b = random_tensor(Shape{c.w[0]}, seed++);
    const std::size_t r = c.x.rank() - 2;
    std::vector<std::int64_t> out{c.x[0], c.w[0]};
    for (std::size_t a = 0; a < r; ++a)
      out.push_back((c.x[2 + a] + c.win.pads[a] + c.win.pads[r + a] - ((c.w[2 + a] - 1) * c.win.dilation[a] + 1)) /
                        c.win.stride[a] +
                    1);
    const Shape out_shape(out);
    std::vector<OpInput> inputs{x, w};
    if (c.bias) inputs.push_back(b);
    EXPECT_TRUE(all_close(run_cpu_op1("Conv", window_attrs(c.win, c.group), inputs, out_shape),
                          conv_reference(x, w, c.bias ? &b : nullptr, c.win, c.group, out_shape), 1e-5, 1e-5))
        << "X " << c.x.to_string() << " W " << c.w.to_string();
  }
}

TEST(CpuOpsConvNd, ConvErrorsNameTheOp) {
  const Tensor x = random_tensor(Shape{1, 3, 8, 8}, 1);
  const Tensor w = random_tensor(Shape{4, 3, 3, 3}, 2);
  const std::string unknown =
      create_message("Conv", {{"auto_pad", std::string("SAME")}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}});
  EXPECT_NE(unknown.find("Conv"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("auto_pad"), std::string::npos) << unknown;
  EXPECT_EQ(create_error("Conv", {{"auto_pad", std::string("SAME")}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(create_error("Conv", {{"strides", Ints{1, 1, 1}}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Conv", {{"strides", Ints{0, 1}}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("Conv", {{"kernel_shape", Ints{2, 2}}}, {x, w}, {{DType::f32, Shape{1, 4, 6, 6}}}),
            ErrorCode::shape_mismatch);
  // 4 spatial dims are out of scope.
  const Tensor x4 = random_tensor(Shape{1, 1, 2, 2, 2, 2}, 3);
  const Tensor w4 = random_tensor(Shape{1, 1, 1, 1, 1, 1}, 4);
  EXPECT_EQ(create_error("Conv", {}, {x4, w4}, {{DType::f32, Shape{1, 1, 2, 2, 2, 2}}}), ErrorCode::unsupported);
}

TEST(CpuOpsConvNd, ConvTransposeHandValues) {
  // The ONNX node test convtranspose_1d: x = [0, 1, 2], w = ones(1, 2, 3).
  const Tensor x = Tensor::from<float>(Shape{1, 1, 3}, {0, 1, 2});
  const Tensor w = Tensor::from<float>(Shape{1, 2, 3}, {1, 1, 1, 1, 1, 1});
  EXPECT_TRUE(
      all_close(run_cpu_op1("ConvTranspose", {}, {x, w}, Shape{1, 2, 5}), {0, 1, 3, 3, 2, 0, 1, 3, 3, 2}, 0, 0));
  // Stride 2 scatters [1, 1, 1] at 0, 2, 4: overlaps add; output_padding appends a zero (+ bias).
  const Tensor w1 = Tensor::from<float>(Shape{1, 1, 3}, {1, 1, 1});
  const Tensor b = Tensor::from<float>(Shape{1}, {0.5f});
  EXPECT_TRUE(all_close(
      run_cpu_op1("ConvTranspose", {{"strides", Ints{2}}, {"output_padding", Ints{1}}}, {x, w1, b}, Shape{1, 1, 8}),
      {0.5, 0.5, 1.5, 1.5, 3.5, 2.5, 2.5, 0.5}, 0, 0));
  // pads cut the full [0, 0, 1, 1, 3, 2, 2] to [0, 1, 1, 3, 2].
  EXPECT_TRUE(
      all_close(run_cpu_op1("ConvTranspose", {{"strides", Ints{2}}, {"pads", Ints{1, 1}}}, {x, w1}, Shape{1, 1, 5}),
                {0, 1, 1, 3, 2}, 0, 0));
  // output_shape 9 > full 7: the result is zero-extended at the end.
  EXPECT_TRUE(all_close(
      run_cpu_op1("ConvTranspose", {{"strides", Ints{2}}, {"output_shape", Ints{9}}}, {x, w1}, Shape{1, 1, 9}),
      {0, 0, 1, 1, 3, 2, 2, 0, 0}, 0, 0));
  // SAME_UPPER: output 3 * 2 = 6, total pad 7 - 6 = 1 goes to the end; SAME_LOWER to the start.
  EXPECT_TRUE(all_close(run_cpu_op1("ConvTranspose", {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_UPPER")}},
                                    {x, w1}, Shape{1, 1, 6}),
                        {0, 0, 1, 1, 3, 2}, 0, 0));
  EXPECT_TRUE(all_close(run_cpu_op1("ConvTranspose", {{"strides", Ints{2}}, {"auto_pad", std::string("SAME_LOWER")}},
                                    {x, w1}, Shape{1, 1, 6}),
                        {0, 1, 1, 3, 2, 2}, 0, 0));
}

TEST(CpuOpsConvNd, ConvTransposeRandom) {
  struct Case {
    Shape x, w;
    Window win;  // pads as begins..., ends... (the reference only needs the begins)
    std::int64_t group;
    Ints output_padding;
    Shape out;
  };
  const std::vector<Case> cases = {
      {Shape{2, 4, 5, 4}, Shape{4, 3, 3, 3}, {{2, 3}, {1, 1}, {1, 0, 0, 2}}, 1, {1, 2}, Shape{2, 3, 11, 12}},
      {Shape{1, 4, 4, 5}, Shape{4, 2, 2, 3}, {{1, 2}, {2, 1}, {0, 1, 1, 0}}, 2, {0, 0}, Shape{1, 4, 5, 10}},
      {Shape{1, 3, 6}, Shape{3, 1, 4}, {{3}, {1}, {2, 1}}, 3, {2}, Shape{1, 3, 18}},
      {Shape{1, 2, 3, 2, 4},
       Shape{2, 2, 2, 3, 2},
       {{2, 1, 2}, {1, 2, 1}, {0, 1, 1, 1, 0, 0}},
       1,
       {1, 0, 0},
       Shape{1, 2, 6, 5, 7}},
  };
  std::uint32_t seed = 700;
  for (const Case& c : cases) {
    const Tensor x = random_tensor(c.x, seed++);
    const Tensor w = random_tensor(c.w, seed++);
    const Tensor b = random_tensor(Shape{c.out[1]}, seed++);
    Attributes attrs = window_attrs(c.win, c.group);
    attrs.set("output_padding", c.output_padding);
    EXPECT_TRUE(all_close(run_cpu_op1("ConvTranspose", attrs, {x, w, b}, c.out),
                          conv_transpose_reference(x, w, &b, c.win, c.group, c.out), 1e-5, 1e-5))
        << "X " << c.x.to_string() << " W " << c.w.to_string();
    // The same op given output_shape instead of pads: pads begin at 0, the end is cut to fit.
    Attributes shaped = {
        {"strides", c.win.stride}, {"dilations", c.win.dilation}, {"group", c.group}, {"output_shape", spatial(c.out)}};
    Window no_pads = c.win;
    no_pads.pads.assign(c.win.pads.size(), 0);
    EXPECT_TRUE(all_close(run_cpu_op1("ConvTranspose", shaped, {x, w}, c.out),
                          conv_transpose_reference(x, w, nullptr, no_pads, c.group, c.out), 1e-5, 1e-5))
        << "output_shape, X " << c.x.to_string();
  }
}

TEST(CpuOpsConvNd, ConvTransposeErrorsNameTheOp) {
  const Tensor x = random_tensor(Shape{1, 2, 4, 4}, 1);
  const Tensor w = random_tensor(Shape{2, 3, 3, 3}, 2);
  // W's first dim must be X's channels.
  const Tensor bad_w = random_tensor(Shape{3, 3, 3, 3}, 3);
  const std::string message = create_message("ConvTranspose", {}, {x, bad_w}, {{DType::f32, Shape{1, 3, 6, 6}}});
  EXPECT_NE(message.find("ConvTranspose"), std::string::npos) << message;
  EXPECT_EQ(create_error("ConvTranspose", {}, {x, w}, {{DType::f32, Shape{1, 3, 7, 7}}}), ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ConvTranspose", {{"output_padding", Ints{1}}}, {x, w}, {{DType::f32, Shape{1, 3, 6, 6}}}),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(create_error("ConvTranspose", {}, {x, w}, {{DType::f32, Shape{1, 3, 6, 6}}}), std::nullopt);
}
