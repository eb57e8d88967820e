// Conv on oneDNN's direct (brgemm) convolution. The library computes in its blocked layout
// (nChw16c): measured 2.5x faster than its plain-layout path on YOLOv8n's convs, reorders included
// (docs/cpu-backend.md). Loom's values stay plain (NCHW), so the input is re-laid into the workspace
// before each run and the result back after it; the weights are re-laid once, at creation, when
// they are an initializer (at every run otherwise). The fusion epilogue runs as post-ops inside the
// convolution as far as the library expresses it, the rest (apply_epilogue) on the plain result.
#include <map>
#include <optional>
#include <string_view>

#include "backend/cpu/conv.hpp"
#include "backend/cpu/dnnl/dnnl_kernels.hpp"
#include "backend/cpu/dnnl/dnnl_support.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

using dnnl::memory;

// What the library needs to create the convolution, fixed at kernel creation.
struct ConvProblem {
  memory::dims src, weights, bias, dst, strides, dilates, pad_begin, pad_end;
  bool has_bias = false;
  double flops = 0;  // multiply-adds counted twice, for dnnl_threads()
};

ConvProblem conv_problem(const KernelSpec& spec, const ConvGeometry& conv) {
  ConvProblem p;
  const WindowGeometry& w = conv.window;
  p.src = to_dims(spec.inputs[0].shape);
  p.dst = to_dims(spec.outputs[0].shape);
  p.weights = to_dims(spec.inputs[1].shape);
  if (conv.group > 1) {  // [G, M/G, C/G, kernel...]: the same bytes as ONNX's [M, C/G, kernel...]
    p.weights[0] = conv.out_channels / conv.group;
    p.weights.insert(p.weights.begin(), conv.group);
  }
  p.has_bias = conv.has_bias;
  double per_output = 2.0 * static_cast<double>(conv.in_channels / conv.group);
  for (std::size_t i = 0; i < w.rank(); ++i) per_output *= static_cast<double>(w.kernel[i]);
  p.flops = per_output * static_cast<double>(spec.outputs[0].shape.numel());
  p.bias = {conv.out_channels};
  for (std::size_t i = 0; i < w.rank(); ++i) {
    p.strides.push_back(w.stride[i]);
    p.dilates.push_back(w.dilation[i] - 1);  // oneDNN counts the gaps between taps
    p.pad_begin.push_back(w.pad_begin[i]);
    p.pad_end.push_back(w.pad_end[i]);
  }
  return p;
}

// The primitive descriptor for `post_ops` with the layouts the library prefers; nullopt where the
// library refuses it or offers only a reference loop, or, unless `allow_gemm`, only its im2col +
// GEMM path on plain layouts (which it picks for some post-ops, e.g. a binary one on a plain tensor:
// that op is then better left to apply_epilogue).
std::optional<dnnl::convolution_forward::primitive_desc> conv_desc(const ConvProblem& p, const dnnl::post_ops& post_ops,
                                                                   bool allow_gemm = true) {
  const auto any = [](const memory::dims& dims) {
    return memory::desc(dims, memory::data_type::f32, memory::format_tag::any);
  };
  try {
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, any(p.src), any(p.weights),
        p.has_bias ? plain_desc(p.bias) : memory::desc(), any(p.dst), p.strides, p.dilates, p.pad_begin, p.pad_end);
    dnnl::convolution_forward::primitive_desc pd(desc, dnnl_attributes(post_ops), dnnl_cpu_engine());
    if (is_reference_implementation(pd.impl_info_str())) return std::nullopt;
    if (!allow_gemm && std::string_view(pd.impl_info_str()).find("gemm") != std::string_view::npos) return std::nullopt;
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

class DnnlConvKernel final : public OpKernel {
 public:
  // `pd` was created for the calling thread's thread count with `post_ops` (epilogue ops
  // [0, post_op_count)); `weights`, when the weights are an initializer, are their host values.
  DnnlConvKernel(const KernelSpec& spec, const FusedRun* fused, ConvProblem problem, DnnlPostOps post_ops,
                 dnnl::convolution_forward::primitive_desc pd, const Tensor* weights)
      : OpKernel(run_spec(spec, fused)),
        problem_(std::move(problem)),
        post_ops_(std::move(post_ops)),
        output_shape_(spec.outputs[0].shape),
        stream_(dnnl_cpu_engine()) {
    if (fused) {
      fused_ = *fused;
      plan_epilogue(spec, fused_->epilogue, output_shape_);
    }
    const memory::desc plain_weights = plain_desc(problem_.weights);
    weights_desc_ = pd.weights_desc();
    if (weights) {
      // Re-laid once: the kernel keeps its own copy in the library's layout.
      memory source(plain_weights, dnnl_cpu_engine(), const_cast<void*>(weights->data()));
      packed_weights_ = memory(weights_desc_, dnnl_cpu_engine());
      relay_at_creation(*this, "weight re-layout", source, *packed_weights_, stream_);
    }
    // The workspace holds the blocked input and output, the weights when they come per run, and
    // the library's scratchpad, laid out for the primitive created now.
    std::size_t end = 0;
    const memory::desc plain_src = plain_desc(problem_.src), plain_dst = plain_desc(problem_.dst);
    src_region_ = WorkspaceRegion(pd.src_desc() == plain_src ? 0 : pd.src_desc().get_size(), &end);
    dst_region_ = WorkspaceRegion(pd.dst_desc() == plain_dst ? 0 : pd.dst_desc().get_size(), &end);
    weights_region_ = WorkspaceRegion(packed_weights_ ? 0 : weights_desc_.get_size(), &end);
    scratch_region_ = WorkspaceRegion(pd.scratchpad_desc().get_size(), &end);
    workspace_ = end;
    primitives_.emplace(kernel_threads(), build(pd));
  }

  std::size_t workspace_bytes() const override { return workspace_; }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    float* y = static_cast<float*>(outputs[fused_ ? fused_->output_slot : 0]);
    const KernelThreadsScope threads(dnnl_threads(problem_.flops));
    with_dnnl_errors(*this, "convolution", [&] {
      Primitives& p = primitives_for_this_thread();
      p.user_src.set_data_handle(const_cast<void*>(inputs[0]));
      p.user_dst.set_data_handle(y);
      if (p.to_blocked) {
        p.src.set_data_handle(p.src_region.at(workspace));
        p.to_blocked->execute(stream_, p.user_src, p.src);
      }
      if (!packed_weights_) {
        p.user_weights.set_data_handle(const_cast<void*>(inputs[1]));
        p.weights.set_data_handle(p.weights_region.at(workspace));
        p.weights_reorder->execute(stream_, p.user_weights, p.weights);
      }
      if (problem_.has_bias) p.bias.set_data_handle(const_cast<void*>(inputs[2]));
      if (p.from_blocked) p.dst.set_data_handle(p.dst_region.at(workspace));
      set_post_op_operands(post_ops_, inputs, p.operands);
      p.scratchpad.set_data_handle(p.scratch_region.at(workspace));
      p.conv.execute(stream_, p.args);
      if (p.from_blocked) p.from_blocked->execute(stream_, p.dst, p.user_dst);
      stream_.wait();
    });
    if (fused_) apply_epilogue(fused_->epilogue, post_ops_.count, output_shape_, y, inputs);
  }

 private:
  // The primitives of one thread count, the memory objects they run on (pointers set per run) and
  // where in the workspace their buffers are.
  struct Primitives {
    dnnl::convolution_forward conv;
    std::optional<dnnl::reorder> to_blocked, from_blocked, weights_reorder;
    memory user_src, src, user_dst, dst, user_weights, weights, bias, scratchpad;
    std::vector<memory> operands;
    std::unordered_map<int, memory> args;
    WorkspaceRegion src_region, dst_region, weights_region, scratch_region;
  };

  Primitives build(const dnnl::convolution_forward::primitive_desc& pd) {
    const dnnl::engine& engine = dnnl_cpu_engine();
    Primitives p;
    p.conv = dnnl::convolution_forward(pd);
    p.user_src = memory(plain_desc(problem_.src), engine, nullptr);
    p.user_dst = memory(plain_desc(problem_.dst), engine, nullptr);
    p.src = p.user_src;
    p.dst = p.user_dst;
    if (pd.src_desc() != p.user_src.get_desc()) {
      p.src = memory(pd.src_desc(), engine, nullptr);
      p.to_blocked = dnnl::reorder(p.user_src, p.src);
      p.src_region = WorkspaceRegion::reuse(src_region_, pd.src_desc().get_size());
    }
    if (pd.dst_desc() != p.user_dst.get_desc()) {
      p.dst = memory(pd.dst_desc(), engine, nullptr);
      p.from_blocked = dnnl::reorder(p.dst, p.user_dst);
      p.dst_region = WorkspaceRegion::reuse(dst_region_, pd.dst_desc().get_size());
    }
    if (packed_weights_) {
      p.weights = weights_relaid_.in(*packed_weights_, pd.weights_desc(), stream_);
    } else {
      p.user_weights = memory(plain_desc(problem_.weights), engine, nullptr);
      p.weights = memory(pd.weights_desc(), engine, nullptr);
      p.weights_reorder = dnnl::reorder(p.user_weights, p.weights);
      p.weights_region = WorkspaceRegion::reuse(weights_region_, pd.weights_desc().get_size());
    }
    p.scratchpad = memory(pd.scratchpad_desc(), engine, nullptr);
    p.scratch_region = WorkspaceRegion::reuse(scratch_region_, pd.scratchpad_desc().get_size());
    p.args = {{DNNL_ARG_SRC, p.src},
              {DNNL_ARG_WEIGHTS, p.weights},
              {DNNL_ARG_DST, p.dst},
              {DNNL_ARG_SCRATCHPAD, p.scratchpad}};
    if (problem_.has_bias) {
      p.bias = memory(plain_desc(problem_.bias), engine, nullptr);
      p.args.emplace(DNNL_ARG_BIAS, p.bias);
    }
    bind_post_op_operands(post_ops_, engine, p.operands, p.args);
    return p;
  }

  Primitives& primitives_for_this_thread() {
    return cpu::primitives_for_this_thread(primitives_, [&](int threads) {
      const auto pd = conv_desc(problem_, post_ops_.ops);
      if (!pd)
        throw dnnl::error(dnnl_unimplemented, ("no convolution for " + std::to_string(threads) + " threads").c_str());
      return build(*pd);
    });
  }

  ConvProblem problem_;
  DnnlPostOps post_ops_;
  Shape output_shape_;
  std::optional<FusedRun> fused_;
  dnnl::stream stream_;
  memory::desc weights_desc_;
  std::optional<memory> packed_weights_;  // the initializer's weights, re-laid once
  RelaidWeights weights_relaid_;          // and in other thread counts' layouts
  WorkspaceRegion src_region_, dst_region_, weights_region_, scratch_region_;  // as laid out at creation
  std::size_t workspace_ = 0;
  std::map<int, Primitives> primitives_;  // by thread count
};

}  // namespace

std::unique_ptr<OpKernel> make_dnnl_conv_kernel(const KernelSpec& spec, const FusedRun* fused) {
  const ConvGeometry conv = parse_conv(spec);  // invalid nodes throw here, as with our own kernel
  if (conv.window.rank() > 3) return nullptr;
  const ConvProblem problem = conv_problem(spec, conv);
  const KernelThreadsScope threads(dnnl_threads(problem.flops));  // the primitive its runs will use
  const std::size_t epilogue_ops = fused ? fused->epilogue.ops.size() : 0;
  const dnnl::memory::dims result = problem.dst;
  const auto operand_dims = [&](const Shape& operand) { return broadcast_dims(operand, result); };
  // The longest prefix of the epilogue the library takes as post-ops with its direct convolution;
  // failing that, its GEMM path.
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t most = epilogue_ops + 1; most-- > 0;) {
      DnnlPostOps post_ops = fused ? dnnl_post_ops(fused->epilogue, 0, most, operand_dims) : DnnlPostOps{};
      if (post_ops.count < most) continue;  // not expressible: try a shorter prefix
      const auto pd = conv_desc(problem, post_ops.ops, pass == 1);
      if (!pd) continue;
      // An initializer in another dtype than the device's (converted at upload) is read per run.
      const Tensor* weights = spec.constants[1];
      if (weights && weights->dtype() != DType::f32) weights = nullptr;
      return std::make_unique<DnnlConvKernel>(spec, fused, problem, std::move(post_ops), *pd, weights);
    }
  return nullptr;
}

}  // namespace loom::backend::cpu
