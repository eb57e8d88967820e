// loom_cpu_kernels_bench (Google Benchmark): which compute library the CPU backend's convolutions
// and matrix products should run on, measured on the real shapes of the published models the tests
// use (issue 18, item 1): YOLOv8n at 320x320 and MiniLM-L3 (its tests' 2 x 16 tokens and one
// sequence of 128). Loom's own im2col + packed GEMM against OpenBLAS, BLIS and oneDNN (plain NCHW,
// blocked layouts with and without a reorder around each conv, Winograd, fused post-ops), at one
// thread and at every core. docs/cpu-backend.md reads its numbers.
//
//   loom_cpu_kernels_bench --benchmark_filter='yolov8n_all_convs' --benchmark_repetitions=5
//
// Each benchmark's "min" aggregate is the figure to quote: the machine is shared, so the fastest of
// several repetitions is the least disturbed one.
#include <benchmark/benchmark.h>
// OpenBLAS's cblas.h before blis.h: BLIS declares a CBLAS of its own under the same include guard.
#include <cblas.h>
// clang-format off
#include <blis.h>
// clang-format on
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/conv.hpp"
#include "backend/cpu/gemm.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using loom::DType;
using loom::Shape;
using loom::Tensor;
using Tag = dnnl::memory::format_tag;

// ---------------------------------------------------------------------------------------------
// The shapes.

// One Conv of YOLOv8n (nudenet 320n.onnx at 1x3x320x320, read from the model with onnx's shape
// inference): input [1, c, h, w], filters [m, c, k, k], square stride and symmetric padding, and how
// many of the model's 64 convs have that shape. Every one but the box decoder's has a bias, and all
// but the 9 head outputs and the decoder are followed by SiLU (Sigmoid, then Mul with the conv).
struct ConvShape {
  std::int64_t c, h, w, m, k, stride, pad;
  int count;
  bool silu;
  bool bias = true;
  std::int64_t out_h() const { return (h + 2 * pad - k) / stride + 1; }
  std::int64_t out_w() const { return (w + 2 * pad - k) / stride + 1; }
  double flops() const { return 2.0 * m * out_h() * out_w() * c * k * k; }
  std::string name() const {
    return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w) + "_" + std::to_string(m) + "k" +
           std::to_string(k) + "s" + std::to_string(stride);
  }
};

const std::vector<ConvShape>& yolov8n_convs() {
  static const std::vector<ConvShape> shapes = {
      {3, 320, 320, 16, 3, 2, 1, 1, true},  {16, 160, 160, 32, 3, 2, 1, 1, true},
      {32, 80, 80, 32, 1, 1, 0, 1, true},   {16, 80, 80, 16, 3, 1, 1, 2, true},
      {48, 80, 80, 32, 1, 1, 0, 1, true},   {32, 80, 80, 64, 3, 2, 1, 1, true},
      {64, 40, 40, 64, 1, 1, 0, 1, true},   {32, 40, 40, 32, 3, 1, 1, 6, true},
      {128, 40, 40, 64, 1, 1, 0, 1, true},  {64, 40, 40, 128, 3, 2, 1, 1, true},
      {128, 20, 20, 128, 1, 1, 0, 1, true}, {64, 20, 20, 64, 3, 1, 1, 10, true},
      {256, 20, 20, 128, 1, 1, 0, 1, true}, {128, 20, 20, 256, 3, 2, 1, 1, true},
      {256, 10, 10, 256, 1, 1, 0, 1, true}, {128, 10, 10, 128, 3, 1, 1, 4, true},
      {384, 10, 10, 256, 1, 1, 0, 3, true}, {256, 10, 10, 128, 1, 1, 0, 1, true},
      {512, 10, 10, 256, 1, 1, 0, 1, true}, {384, 20, 20, 128, 1, 1, 0, 1, true},
      {192, 20, 20, 128, 1, 1, 0, 3, true}, {192, 40, 40, 64, 1, 1, 0, 1, true},
      {96, 40, 40, 64, 1, 1, 0, 1, true},   {64, 40, 40, 64, 3, 2, 1, 1, true},
      {64, 40, 40, 64, 3, 1, 1, 4, true},   {64, 40, 40, 64, 1, 1, 0, 1, false},
      {64, 40, 40, 18, 1, 1, 0, 1, false},  {128, 20, 20, 128, 3, 2, 1, 1, true},
      {128, 20, 20, 64, 3, 1, 1, 2, true},  {64, 20, 20, 64, 1, 1, 0, 1, false},
      {64, 20, 20, 18, 1, 1, 0, 1, false},  {256, 10, 10, 64, 3, 1, 1, 2, true},
      {64, 10, 10, 64, 3, 1, 1, 2, true},   {64, 10, 10, 64, 1, 1, 0, 1, false},
      {64, 10, 10, 18, 1, 1, 0, 1, false},  {16, 4, 2100, 1, 1, 1, 0, 1, false, false},
  };
  return shapes;
}

// The table's counts add up to the model's 64 convs.
int total_conv_count() {
  int count = 0;
  for (const ConvShape& shape : yolov8n_convs()) count += shape.count;
  return count;
}

// One matrix product of MiniLM-L3 (paraphrase-MiniLM-L3-v2.onnx): [rows, depth] x [depth, cols],
// `batch` independent products (attention) or one with the rows of every token (linear layers,
// whose weight is shared), and what the model does right after it in the same Step.
enum class Epilogue { none, bias, bias_gelu, bias_residual, scale_mask };
struct GemmShape {
  std::string name;
  std::int64_t batch, rows, depth, cols;
  int count;
  Epilogue epilogue;
  bool constant_b;  // a weight (re-laid once at load) or an activation (attention)
  double flops() const { return 2.0 * batch * rows * depth * cols; }
};

std::vector<GemmShape> minilm_gemms(std::int64_t tokens, std::int64_t batch, std::int64_t sequence) {
  const std::int64_t heads = 12 * batch;
  return {
      {"qkv_384x384", 1, tokens, 384, 384, 9, Epilogue::bias, true},
      {"out_384x384", 1, tokens, 384, 384, 3, Epilogue::bias_residual, true},
      {"ffn1_384x1536", 1, tokens, 384, 1536, 3, Epilogue::bias_gelu, true},
      {"ffn2_1536x384", 1, tokens, 1536, 384, 3, Epilogue::bias_residual, true},
      {"scores_qk", heads, sequence, 32, sequence, 3, Epilogue::scale_mask, false},
      {"context_pv", heads, sequence, sequence, 32, 3, Epilogue::none, false},
  };
}

// ---------------------------------------------------------------------------------------------
// Shared helpers.

std::vector<float> random_floats(std::size_t count, std::uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float& v : values) v = dist(engine);
  return values;
}

// Threads of every library for this benchmark. oneDNN (OpenMP) reads the count when a primitive is
// created, so it is set before anything is created.
void use_threads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  bli_thread_set_num_threads(threads);
}

int all_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

void report_flops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// A float buffer aligned for every library (64 bytes).
struct AlignedFloats {
  explicit AlignedFloats(std::size_t count)
      : data(static_cast<float*>(std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64)), std::free) {}
  float* get() const { return data.get(); }
  std::unique_ptr<float, decltype(&std::free)> data;
};

// ---------------------------------------------------------------------------------------------
// Convolution implementations. Each is created once (weights re-laid where the implementation
// wants it) and then run; `run` is what the timed loop calls.

struct ConvRunner {
  std::function<void()> run;
  std::string implementation;  // what the library chose, for the label
};

struct ConvBuffers {
  explicit ConvBuffers(const ConvShape& s)
      : input(random_floats(static_cast<std::size_t>(s.c * s.h * s.w), 1)),
        weights(random_floats(static_cast<std::size_t>(s.m * s.c * s.k * s.k), 2)),
        bias(random_floats(static_cast<std::size_t>(s.m), 3)),
        output(static_cast<std::size_t>(s.m * s.out_h() * s.out_w())) {}
  std::vector<float> input, weights, bias, output;
};

// Loom's own kernel, as the CPU backend creates it, weights given as an initializer.
class LoomIm2colConv {
 public:
  LoomIm2colConv(const ConvShape& s, ConvBuffers& buffers) : buffers_(buffers) {
    node_.op_type = "Conv";
    node_.name = "bench_conv";
    node_.inputs = {"x", "w", "b"};
    node_.outputs = {"y"};
    node_.attrs.set("kernel_shape", std::vector<std::int64_t>{s.k, s.k});
    node_.attrs.set("strides", std::vector<std::int64_t>{s.stride, s.stride});
    node_.attrs.set("pads", std::vector<std::int64_t>{s.pad, s.pad, s.pad, s.pad});
    weights_ = Tensor::from<float>(Shape{s.m, s.c, s.k, s.k}, buffers.weights);
    bias_ = Tensor::from<float>(Shape{s.m}, buffers.bias);
    loom::backend::KernelSpec spec;
    spec.node = &node_;
    spec.inputs = {{DType::f32, Shape{1, s.c, s.h, s.w}}, {DType::f32, weights_.shape()}, {DType::f32, bias_.shape()}};
    spec.outputs = {{DType::f32, Shape{1, s.m, s.out_h(), s.out_w()}}};
    spec.constants = {nullptr, &weights_, &bias_};
    backend_ = loom::backend::make_cpu_backend();
    spec.backend = backend_.get();
    kernel_ = loom::backend::cpu::make_im2col_conv_kernel(spec);
    stream_ = backend_->create_stream();
    workspace_.resize(kernel_->workspace_bytes() / sizeof(float) + 1);
  }
  void run() {
    const void* inputs[] = {buffers_.input.data(), buffers_.weights.data(), buffers_.bias.data()};
    void* outputs[] = {buffers_.output.data()};
    kernel_->run(inputs, outputs, workspace_.data(), *stream_);
  }

 private:
  ConvBuffers& buffers_;
  loom::Node node_;
  Tensor weights_, bias_;
  std::unique_ptr<loom::backend::Backend> backend_;
  std::unique_ptr<loom::backend::OpKernel> kernel_;
  std::unique_ptr<loom::backend::Stream> stream_;
  std::vector<float> workspace_;
};

// im2col of one 2-D image into [c * k * k, out_h * out_w] rows, zero in the padding.
void unroll_2d(const ConvShape& s, const float* image, float* columns) {
  const std::int64_t oh = s.out_h(), ow = s.out_w();
  for (std::int64_t c = 0; c < s.c; ++c)
    for (std::int64_t ky = 0; ky < s.k; ++ky)
      for (std::int64_t kx = 0; kx < s.k; ++kx, columns += oh * ow)
        for (std::int64_t y = 0; y < oh; ++y)
          for (std::int64_t x = 0; x < ow; ++x) {
            const std::int64_t iy = y * s.stride - s.pad + ky, ix = x * s.stride - s.pad + kx;
            columns[y * ow + x] = iy < 0 || iy >= s.h || ix < 0 || ix >= s.w ? 0.0f : image[(c * s.h + iy) * s.w + ix];
          }
}

// im2col (skipped for a 1x1 stride-1 conv) + a BLAS sgemm: Loom's algorithm on another GEMM.
enum class Blas { openblas, blis };
ConvRunner blas_conv(const ConvShape& s, ConvBuffers& buffers, Blas blas) {
  const bool direct = s.k == 1 && s.stride == 1 && s.pad == 0;
  const std::int64_t patch = s.c * s.k * s.k, pixels = s.out_h() * s.out_w();
  auto columns = std::make_shared<std::vector<float>>(direct ? 0 : static_cast<std::size_t>(patch * pixels));
  ConvRunner runner;
  runner.implementation = blas == Blas::openblas ? "openblas sgemm" : "blis sgemm";
  runner.run = [s, &buffers, columns, direct, patch, pixels, blas] {
    const float* matrix = buffers.input.data();
    if (!direct) {
      unroll_2d(s, buffers.input.data(), columns->data());
      matrix = columns->data();
    }
    float* y = buffers.output.data();
    for (std::int64_t m = 0; m < s.m; ++m) std::fill(y + m * pixels, y + (m + 1) * pixels, buffers.bias[m]);
    if (blas == Blas::openblas) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(pixels),
                  static_cast<int>(patch), 1.0f, buffers.weights.data(), static_cast<int>(patch), matrix,
                  static_cast<int>(pixels), 1.0f, y, static_cast<int>(pixels));
    } else {
      float one = 1.0f;
      bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.m, pixels, patch, &one, buffers.weights.data(), patch, 1,
                const_cast<float*>(matrix), pixels, 1, &one, y, pixels, 1);
    }
  };
  return runner;
}

// oneDNN's convolution. `layout`: plain NCHW in and out; blocked (format any: the library's
// nChw16c, the activations stay blocked between convs, so no reorder is timed); or blocked with a
// reorder from NCHW before and back to NCHW after each conv (what a conv in a plain-layout graph
// pays). Weights are re-laid once into the format the primitive asks for.
enum class ConvLayout { nchw, blocked, blocked_with_reorders };
struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
DnnlContext& dnnl_context() {
  static DnnlContext context;
  return context;
}

ConvRunner dnnl_conv(const ConvShape& s, ConvBuffers& buffers, ConvLayout layout, bool silu,
                     dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct) {
  DnnlContext& ctx = dnnl_context();
  const memory::dims src_dims{1, s.c, s.h, s.w}, weight_dims{s.m, s.c, s.k, s.k}, bias_dims{s.m},
      dst_dims{1, s.m, s.out_h(), s.out_w()};
  const Tag activation_tag = layout == ConvLayout::nchw ? Tag::nchw : Tag::any;
  const memory::desc src_md(src_dims, memory::data_type::f32, activation_tag);
  const memory::desc weight_md(weight_dims, memory::data_type::f32, Tag::any);
  const memory::desc bias_md(bias_dims, memory::data_type::f32, Tag::x);
  const memory::desc dst_md(dst_dims, memory::data_type::f32, activation_tag);
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference, algorithm, src_md, weight_md,
                                       s.bias ? bias_md : memory::desc(), dst_md, {s.stride, s.stride}, {s.pad, s.pad},
                                       {s.pad, s.pad});
  dnnl::primitive_attr attr;
  if (silu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_swish, 1.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  dnnl::convolution_forward::primitive_desc pd(desc, attr, ctx.engine);

  // Weights re-laid once.
  auto weights = std::make_shared<memory>(pd.weights_desc(), ctx.engine);
  memory user_weights({weight_dims, memory::data_type::f32, Tag::oihw}, ctx.engine, buffers.weights.data());
  dnnl::reorder(user_weights, *weights).execute(ctx.stream, user_weights, *weights);
  auto bias = std::make_shared<memory>(bias_md, ctx.engine, buffers.bias.data());
  auto user_src = std::make_shared<memory>(memory::desc(src_dims, memory::data_type::f32, Tag::nchw), ctx.engine,
                                           buffers.input.data());
  auto user_dst = std::make_shared<memory>(memory::desc(dst_dims, memory::data_type::f32, Tag::nchw), ctx.engine,
                                           buffers.output.data());
  auto src = user_src, dst = user_dst;
  if (layout != ConvLayout::nchw) {
    src = std::make_shared<memory>(pd.src_desc(), ctx.engine);
    dst = std::make_shared<memory>(pd.dst_desc(), ctx.engine);
    dnnl::reorder(*user_src, *src).execute(ctx.stream, *user_src, *src);
  }
  auto conv = std::make_shared<dnnl::convolution_forward>(pd);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, *src}, {DNNL_ARG_WEIGHTS, *weights}, {DNNL_ARG_DST, *dst}};
  if (s.bias) args.emplace(DNNL_ARG_BIAS, *bias);
  ConvRunner runner;
  runner.implementation = pd.impl_info_str();
  if (layout == ConvLayout::blocked_with_reorders) {
    auto to_blocked = std::make_shared<dnnl::reorder>(*user_src, *src);
    auto to_plain = std::make_shared<dnnl::reorder>(*dst, *user_dst);
    runner.run = [&ctx, conv, args, to_blocked, to_plain, user_src, src, dst, user_dst, weights, bias] {
      to_blocked->execute(ctx.stream, *user_src, *src);
      conv->execute(ctx.stream, args);
      to_plain->execute(ctx.stream, *dst, *user_dst);
    };
  } else {
    runner.run = [&ctx, conv, args, src, dst, weights, bias, user_src, user_dst] { conv->execute(ctx.stream, args); };
  }
  return runner;
}

// Loom's elementwise kernels as the unfused Step runs them after a conv: Sigmoid, then Mul.
class LoomSiluPasses {
 public:
  LoomSiluPasses(const ConvShape& s, ConvBuffers& buffers)
      : buffers_(buffers), sigmoid_out_(buffers.output.size()), product_(buffers.output.size()) {
    backend_ = loom::backend::make_cpu_backend();
    stream_ = backend_->create_stream();
    const Shape shape{1, s.m, s.out_h(), s.out_w()};
    sigmoid_ = make("Sigmoid", {shape}, shape);
    mul_ = make("Mul", {shape, shape}, shape);
  }
  void run() {
    const void* x[] = {buffers_.output.data()};
    void* s[] = {sigmoid_out_.data()};
    sigmoid_->run(x, s, nullptr, *stream_);
    const void* xs[] = {buffers_.output.data(), sigmoid_out_.data()};
    void* p[] = {product_.data()};
    mul_->run(xs, p, nullptr, *stream_);
  }

 private:
  std::unique_ptr<loom::backend::OpKernel> make(const std::string& op, const std::vector<Shape>& inputs,
                                                const Shape& output) {
    auto& node = nodes_.emplace_back(std::make_unique<loom::Node>());
    node->op_type = op;
    node->name = "bench_" + op;
    loom::backend::KernelSpec spec;
    spec.node = node.get();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      node->inputs.push_back("in" + std::to_string(i));
      spec.inputs.push_back({DType::f32, inputs[i]});
      spec.constants.push_back(nullptr);
    }
    node->outputs = {"out"};
    spec.outputs = {{DType::f32, output}};
    return backend_->create_kernel(spec);
  }
  ConvBuffers& buffers_;
  std::vector<float> sigmoid_out_, product_;
  std::vector<std::unique_ptr<loom::Node>> nodes_;
  std::unique_ptr<loom::backend::Backend> backend_;
  std::unique_ptr<loom::backend::Stream> stream_;
  std::unique_ptr<loom::backend::OpKernel> sigmoid_, mul_;
};

enum class ConvImpl {
  loom_im2col,
  loom_im2col_silu_passes,
  openblas_im2col,
  blis_im2col,
  dnnl_nchw,
  dnnl_nchw_silu,
  dnnl_nchw_then_loom_silu,
  dnnl_blocked_silu,
  dnnl_blocked_silu_reorders,
  dnnl_winograd_blocked_silu,
};
const char* conv_impl_name(ConvImpl impl) {
  switch (impl) {
    case ConvImpl::loom_im2col:
      return "loom_im2col";
    case ConvImpl::loom_im2col_silu_passes:
      return "loom_im2col+loom_silu_passes";
    case ConvImpl::openblas_im2col:
      return "openblas_im2col";
    case ConvImpl::blis_im2col:
      return "blis_im2col";
    case ConvImpl::dnnl_nchw:
      return "dnnl_nchw";
    case ConvImpl::dnnl_nchw_silu:
      return "dnnl_nchw_fused_silu";
    case ConvImpl::dnnl_nchw_then_loom_silu:
      return "dnnl_nchw+loom_silu_passes";
    case ConvImpl::dnnl_blocked_silu:
      return "dnnl_blocked_fused_silu";
    case ConvImpl::dnnl_blocked_silu_reorders:
      return "dnnl_blocked_fused_silu+reorders";
    case ConvImpl::dnnl_winograd_blocked_silu:
      return "dnnl_winograd_blocked_fused_silu";
  }
  return "?";
}
bool single_threaded(ConvImpl impl) {
  return impl == ConvImpl::loom_im2col || impl == ConvImpl::loom_im2col_silu_passes;
}

// One conv ready to run: the buffers and whatever the implementation keeps.
struct PreparedConv {
  std::unique_ptr<ConvBuffers> buffers;
  std::unique_ptr<LoomIm2colConv> loom;
  std::unique_ptr<LoomSiluPasses> silu_passes;
  ConvRunner runner;
};

// nullptr where the implementation does not apply (Winograd outside 3x3 stride 1) or the library
// refuses the shape.
std::unique_ptr<PreparedConv> prepare_conv(const ConvShape& s, ConvImpl impl) {
  auto prepared = std::make_unique<PreparedConv>();
  prepared->buffers = std::make_unique<ConvBuffers>(s);
  ConvBuffers& buffers = *prepared->buffers;
  const bool silu = s.silu;
  switch (impl) {
    case ConvImpl::loom_im2col:
    case ConvImpl::loom_im2col_silu_passes: {
      prepared->loom = std::make_unique<LoomIm2colConv>(s, buffers);
      if (impl == ConvImpl::loom_im2col_silu_passes && silu)
        prepared->silu_passes = std::make_unique<LoomSiluPasses>(s, buffers);
      PreparedConv* p = prepared.get();
      prepared->runner = {[p] {
                            p->loom->run();
                            if (p->silu_passes) p->silu_passes->run();
                          },
                          "loom"};
      break;
    }
    case ConvImpl::openblas_im2col:
      prepared->runner = blas_conv(s, buffers, Blas::openblas);
      break;
    case ConvImpl::blis_im2col:
      prepared->runner = blas_conv(s, buffers, Blas::blis);
      break;
    case ConvImpl::dnnl_nchw:
      prepared->runner = dnnl_conv(s, buffers, ConvLayout::nchw, false);
      break;
    case ConvImpl::dnnl_nchw_silu:
      prepared->runner = dnnl_conv(s, buffers, ConvLayout::nchw, silu);
      break;
    case ConvImpl::dnnl_nchw_then_loom_silu: {
      ConvRunner conv = dnnl_conv(s, buffers, ConvLayout::nchw, false);
      if (silu) prepared->silu_passes = std::make_unique<LoomSiluPasses>(s, buffers);
      PreparedConv* p = prepared.get();
      prepared->runner = {[p, run = conv.run] {
                            run();
                            if (p->silu_passes) p->silu_passes->run();
                          },
                          conv.implementation};
      break;
    }
    case ConvImpl::dnnl_blocked_silu:
      prepared->runner = dnnl_conv(s, buffers, ConvLayout::blocked, silu);
      break;
    case ConvImpl::dnnl_blocked_silu_reorders:
      prepared->runner = dnnl_conv(s, buffers, ConvLayout::blocked_with_reorders, silu);
      break;
    case ConvImpl::dnnl_winograd_blocked_silu:
      if (s.k != 3 || s.stride != 1) return nullptr;
      try {
        prepared->runner = dnnl_conv(s, buffers, ConvLayout::blocked, silu, dnnl::algorithm::convolution_winograd);
      } catch (const dnnl::error&) {
        return nullptr;
      }
      break;
  }
  return prepared;
}

void bm_conv(benchmark::State& state, ConvShape s, ConvImpl impl) {
  use_threads(static_cast<int>(state.range(0)));
  auto prepared = prepare_conv(s, impl);
  if (!prepared) {
    state.SkipWithError("not applicable to this shape");
    return;
  }
  prepared->runner.run();  // warm-up (oneDNN's first run touches its scratch)
  for (auto _ : state) prepared->runner.run();
  report_flops(state, s.flops());
  state.SetLabel(prepared->runner.implementation);
}

// Every conv of YOLOv8n once per occurrence, back to back: the model's conv time per
// implementation (Winograd where it applies, direct blocked elsewhere).
void bm_yolov8n_all_convs(benchmark::State& state, ConvImpl impl) {
  use_threads(static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<PreparedConv>> convs;
  double flops = 0;
  for (const ConvShape& s : yolov8n_convs()) {
    auto prepared = prepare_conv(s, impl);
    if (!prepared && impl == ConvImpl::dnnl_winograd_blocked_silu)
      prepared = prepare_conv(s, ConvImpl::dnnl_blocked_silu);
    if (!prepared) {
      state.SkipWithError("an implementation refused a shape");
      return;
    }
    for (int i = 0; i < s.count; ++i) flops += s.flops();
    convs.push_back(std::move(prepared));
  }
  const auto run_all = [&] {
    for (std::size_t i = 0; i < convs.size(); ++i)
      for (int r = 0; r < yolov8n_convs()[i].count; ++r) convs[i]->runner.run();
  };
  run_all();
  for (auto _ : state) run_all();
  report_flops(state, flops);
  state.SetLabel(std::to_string(total_conv_count()) + " convs");
}

// ---------------------------------------------------------------------------------------------
// Matrix products.

struct GemmBuffers {
  explicit GemmBuffers(const GemmShape& g)
      : a(random_floats(static_cast<std::size_t>(g.batch * g.rows * g.depth), 4)),
        b(random_floats(static_cast<std::size_t>((g.constant_b ? 1 : g.batch) * g.depth * g.cols), 5)),
        bias(random_floats(static_cast<std::size_t>(g.cols), 6)),
        residual(random_floats(static_cast<std::size_t>(g.batch * g.rows * g.cols), 7)),
        c(static_cast<std::size_t>(g.batch * g.rows * g.cols)) {}
  std::vector<float> a, b, bias, residual, c;
};

enum class GemmImpl { loom_gemm, openblas, blis, dnnl_matmul, dnnl_matmul_fused_epilogue };
const char* gemm_impl_name(GemmImpl impl) {
  switch (impl) {
    case GemmImpl::loom_gemm:
      return "loom_gemm";
    case GemmImpl::openblas:
      return "openblas_sgemm";
    case GemmImpl::blis:
      return "blis_sgemm";
    case GemmImpl::dnnl_matmul:
      return "dnnl_matmul";
    case GemmImpl::dnnl_matmul_fused_epilogue:
      return "dnnl_matmul_fused_epilogue";
  }
  return "?";
}

struct PreparedGemm {
  std::unique_ptr<GemmBuffers> buffers;
  std::vector<float> workspace;
  std::function<void()> run;
  std::string implementation;
  // oneDNN objects kept alive for run.
  std::shared_ptr<dnnl::matmul> matmul;
  std::shared_ptr<memory> weights;
  std::unordered_map<int, memory> args;
};

std::unique_ptr<PreparedGemm> prepare_gemm(const GemmShape& g, GemmImpl impl) {
  auto p = std::make_unique<PreparedGemm>();
  p->buffers = std::make_unique<GemmBuffers>(g);
  GemmBuffers& buf = *p->buffers;
  PreparedGemm* raw = p.get();
  const std::int64_t b_stride = g.constant_b ? 0 : g.depth * g.cols;
  switch (impl) {
    case GemmImpl::loom_gemm:
      p->workspace.resize(loom::backend::cpu::gemm_workspace_bytes(g.rows, g.cols, g.depth) / sizeof(float) + 1);
      p->run = [g, &buf, raw, b_stride] {
        for (std::int64_t i = 0; i < g.batch; ++i)
          loom::backend::cpu::gemm(g.rows, g.cols, g.depth, 1.0f,
                                   loom::backend::cpu::row_major(buf.a.data() + i * g.rows * g.depth, g.depth),
                                   loom::backend::cpu::row_major(buf.b.data() + i * b_stride, g.cols), 0.0f,
                                   buf.c.data() + i * g.rows * g.cols, g.cols, raw->workspace.data());
      };
      p->implementation = "loom";
      break;
    case GemmImpl::openblas:
      p->run = [g, &buf, b_stride] {
        for (std::int64_t i = 0; i < g.batch; ++i)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(g.rows), static_cast<int>(g.cols),
                      static_cast<int>(g.depth), 1.0f, buf.a.data() + i * g.rows * g.depth, static_cast<int>(g.depth),
                      buf.b.data() + i * b_stride, static_cast<int>(g.cols), 0.0f, buf.c.data() + i * g.rows * g.cols,
                      static_cast<int>(g.cols));
      };
      p->implementation = "openblas";
      break;
    case GemmImpl::blis:
      p->run = [g, &buf, b_stride] {
        float one = 1.0f, zero = 0.0f;
        for (std::int64_t i = 0; i < g.batch; ++i)
          bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, g.rows, g.cols, g.depth, &one,
                    buf.a.data() + i * g.rows * g.depth, g.depth, 1, buf.b.data() + i * b_stride, g.cols, 1, &zero,
                    buf.c.data() + i * g.rows * g.cols, g.cols, 1);
      };
      p->implementation = "blis";
      break;
    case GemmImpl::dnnl_matmul:
    case GemmImpl::dnnl_matmul_fused_epilogue: {
      DnnlContext& ctx = dnnl_context();
      const bool fused = impl == GemmImpl::dnnl_matmul_fused_epilogue;
      const memory::dims a_dims{g.batch, g.rows, g.depth}, b_dims{g.constant_b ? 1 : g.batch, g.depth, g.cols},
          c_dims{g.batch, g.rows, g.cols};
      const memory::desc a_md(a_dims, memory::data_type::f32, Tag::abc);
      const memory::desc b_plain(b_dims, memory::data_type::f32, Tag::abc);
      // A weight is re-laid once into the library's packed format; an activation is read as it is.
      const memory::desc b_md(b_dims, memory::data_type::f32, g.constant_b ? Tag::any : Tag::abc);
      const memory::desc c_md(c_dims, memory::data_type::f32, Tag::abc);
      const memory::desc bias_md({1, 1, g.cols}, memory::data_type::f32, Tag::abc);
      const bool with_bias = fused && g.epilogue != Epilogue::none && g.epilogue != Epilogue::scale_mask;
      dnnl::primitive_attr attr;
      dnnl::post_ops ops;
      const memory::desc residual_md(c_dims, memory::data_type::f32, Tag::abc);
      if (fused) {
        if (g.epilogue == Epilogue::bias_gelu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0, 0);
        if (g.epilogue == Epilogue::bias_residual) ops.append_binary(dnnl::algorithm::binary_add, residual_md);
        if (g.epilogue == Epilogue::scale_mask) {
          attr.set_output_scales(0, {0.17677669f});
          ops.append_binary(dnnl::algorithm::binary_add,
                            memory::desc({g.batch, 1, g.cols}, memory::data_type::f32, Tag::abc));
        }
        attr.set_post_ops(ops);
      }
      dnnl::matmul::desc desc(a_md, b_md, with_bias ? bias_md : memory::desc(), c_md);
      dnnl::matmul::primitive_desc pd(desc, attr, ctx.engine);
      p->implementation = pd.impl_info_str();
      memory user_b(b_plain, ctx.engine, buf.b.data());
      if (g.constant_b) {
        p->weights = std::make_shared<memory>(pd.weights_desc(), ctx.engine);
        dnnl::reorder(user_b, *p->weights).execute(ctx.stream, user_b, *p->weights);
      } else {
        p->weights = std::make_shared<memory>(user_b);
      }
      p->matmul = std::make_shared<dnnl::matmul>(pd);
      p->args = {{DNNL_ARG_SRC, memory(a_md, ctx.engine, buf.a.data())},
                 {DNNL_ARG_WEIGHTS, *p->weights},
                 {DNNL_ARG_DST, memory(c_md, ctx.engine, buf.c.data())}};
      if (with_bias) p->args.emplace(DNNL_ARG_BIAS, memory(bias_md, ctx.engine, buf.bias.data()));
      if (fused && g.epilogue == Epilogue::bias_residual)
        p->args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                        memory(residual_md, ctx.engine, buf.residual.data()));
      if (fused && g.epilogue == Epilogue::scale_mask)
        p->args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                        memory(memory::desc({g.batch, 1, g.cols}, memory::data_type::f32, Tag::abc), ctx.engine));
      p->run = [raw, &ctx] { raw->matmul->execute(ctx.stream, raw->args); };
      break;
    }
  }
  return p;
}

void bm_gemm(benchmark::State& state, GemmShape g, GemmImpl impl) {
  use_threads(static_cast<int>(state.range(0)));
  auto prepared = prepare_gemm(g, impl);
  prepared->run();
  for (auto _ : state) prepared->run();
  report_flops(state, g.flops());
  state.SetLabel(prepared->implementation);
}

// Every linear layer and attention product of MiniLM-L3's 3 layers, back to back.
void bm_minilm_all_gemms(benchmark::State& state, std::vector<GemmShape> shapes, GemmImpl impl) {
  use_threads(static_cast<int>(state.range(0)));
  std::vector<std::unique_ptr<PreparedGemm>> prepared;
  double flops = 0;
  for (const GemmShape& g : shapes) {
    prepared.push_back(prepare_gemm(g, impl));
    flops += g.flops() * g.count;
  }
  const auto run_all = [&] {
    for (std::size_t i = 0; i < prepared.size(); ++i)
      for (int r = 0; r < shapes[i].count; ++r) prepared[i]->run();
  };
  run_all();
  for (auto _ : state) run_all();
  report_flops(state, flops);
}

double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Thread counts every library-backed benchmark runs at: one, and every core.
void with_threads(benchmark::internal::Benchmark* b, bool single_only) {
  b->ArgName("threads")->Arg(1);
  if (!single_only && all_cores() > 1) b->Arg(all_cores());
  b->Unit(benchmark::kMicrosecond)->ComputeStatistics("min", min_of)->UseRealTime();
}

void register_all() {
  const ConvImpl conv_impls[] = {ConvImpl::loom_im2col,
                                 ConvImpl::loom_im2col_silu_passes,
                                 ConvImpl::openblas_im2col,
                                 ConvImpl::blis_im2col,
                                 ConvImpl::dnnl_nchw,
                                 ConvImpl::dnnl_nchw_silu,
                                 ConvImpl::dnnl_nchw_then_loom_silu,
                                 ConvImpl::dnnl_blocked_silu,
                                 ConvImpl::dnnl_blocked_silu_reorders,
                                 ConvImpl::dnnl_winograd_blocked_silu};
  for (ConvImpl impl : conv_impls) {
    with_threads(benchmark::RegisterBenchmark(("yolov8n_all_convs/" + std::string(conv_impl_name(impl))).c_str(),
                                              bm_yolov8n_all_convs, impl),
                 single_threaded(impl));
    for (const ConvShape& s : yolov8n_convs())
      with_threads(benchmark::RegisterBenchmark(("conv/" + s.name() + "/" + std::string(conv_impl_name(impl))).c_str(),
                                                bm_conv, s, impl),
                   single_threaded(impl));
  }
  const GemmImpl gemm_impls[] = {GemmImpl::loom_gemm, GemmImpl::openblas, GemmImpl::blis, GemmImpl::dnnl_matmul,
                                 GemmImpl::dnnl_matmul_fused_epilogue};
  struct Workload {
    std::string name;
    std::vector<GemmShape> shapes;
  };
  const Workload workloads[] = {{"minilm_b2s16", minilm_gemms(32, 2, 16)},
                                {"minilm_b1s128", minilm_gemms(128, 1, 128)}};
  for (const Workload& w : workloads) {
    for (GemmImpl impl : gemm_impls) {
      const bool single = impl == GemmImpl::loom_gemm;
      with_threads(benchmark::RegisterBenchmark((w.name + "_all_gemms/" + gemm_impl_name(impl)).c_str(),
                                                bm_minilm_all_gemms, w.shapes, impl),
                   single);
      for (const GemmShape& g : w.shapes)
        with_threads(benchmark::RegisterBenchmark((w.name + "/" + g.name + "/" + gemm_impl_name(impl)).c_str(), bm_gemm,
                                                  g, impl),
                     single);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const dnnl_version_t* version = dnnl_version();
  benchmark::AddCustomContext("oneDNN", std::to_string(version->major) + "." + std::to_string(version->minor) + "." +
                                            std::to_string(version->patch) + " (OpenMP runtime)");
  benchmark::AddCustomContext("OpenBLAS", openblas_get_config());
  benchmark::AddCustomContext("BLIS", bli_info_get_version_str());
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
