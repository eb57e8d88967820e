// MatMul and Gemm on oneDNN's matmul (brgemm). A weight that is an initializer is packed once, at
// creation, into the library's layout: 2x our packed GEMM on MiniLM's shapes (docs/cpu-backend.md).
// A linear layer (MatMul with a 2-D constant B) runs as one product over every row of A; other
// MatMuls keep their batch dims, broadcast by the library. A bias (an Add of a per-column constant
// right after the product, or Gemm's C) goes in as the library's bias, and the rest of the fusion
// epilogue as post-ops as far as they are expressible; apply_epilogue() does what remains.
#include <map>
#include <optional>

#include "backend/cpu/dnnl/dnnl_kernels.hpp"
#include "backend/cpu/dnnl/dnnl_support.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"
#include "backend/cpu/matmul.hpp"

namespace loom::backend::cpu {
namespace {

using dnnl::memory;

// A product as the library sees it, and how Loom's tensors map onto it.
struct MatMulProblem {
  memory::desc src, weights, dst;  // the operands as they lie in memory (weights: before packing)
  memory::dims result;             // the library's view of the result (dst's dims)
  Shape output_shape;              // the ONNX output
  // What the epilogue applies to, in order: for Gemm, C (beta 1) first, then the fusion's ops.
  Epilogue epilogue;
  bool bias_from_first_op = false;  // epilogue.ops[0] is a per-column constant added as the bias
  std::size_t output_slot = 0;
  const Tensor* constant_weights = nullptr;  // the initializer B, to pack once
  double flops = 0;                          // multiply-adds counted twice, for dnnl_threads()
};

// Whether `operand` varies along the last axis only (a bias).
bool per_column(const Shape& operand, std::int64_t columns) {
  return operand.rank() >= 1 && operand[operand.rank() - 1] == columns && operand.numel() == columns;
}

std::optional<dnnl::matmul::primitive_desc> matmul_desc(const MatMulProblem& p, bool constant_weights,
                                                        const dnnl::post_ops& post_ops) {
  try {
    const memory::desc weights =
        constant_weights ? memory::desc(p.weights.dims(), memory::data_type::f32, memory::format_tag::any) : p.weights;
    const memory::dims bias_dims = [&] {
      memory::dims dims(p.result.size(), 1);
      dims.back() = p.result.back();
      return dims;
    }();
    const dnnl::matmul::desc desc(p.src, weights, p.bias_from_first_op ? plain_desc(bias_dims) : memory::desc(), p.dst);
    dnnl::matmul::primitive_desc pd(desc, dnnl_attributes(post_ops), dnnl_cpu_engine());
    if (is_reference_implementation(pd.impl_info_str())) return std::nullopt;
    return pd;
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
}

class DnnlMatMulKernel final : public OpKernel {
 public:
  DnnlMatMulKernel(const KernelSpec& run, MatMulProblem problem, DnnlPostOps post_ops,
                   const dnnl::matmul::primitive_desc& pd)
      : OpKernel(run), problem_(std::move(problem)), post_ops_(std::move(post_ops)), stream_(dnnl_cpu_engine()) {
    plan_epilogue(run, problem_.epilogue, problem_.output_shape);
    weights_desc_ = pd.weights_desc();
    if (problem_.constant_weights) {
      memory source(problem_.weights, dnnl_cpu_engine(), const_cast<void*>(problem_.constant_weights->data()));
      packed_weights_ = memory(weights_desc_, dnnl_cpu_engine());
      relay_at_creation(*this, "weight packing", source, *packed_weights_, stream_);
      problem_.constant_weights = nullptr;  // the host tensor is valid at creation only
    }
    std::size_t end = 0;
    scratch_region_ = WorkspaceRegion(pd.scratchpad_desc().get_size(), &end);
    workspace_ = end;
    primitives_.emplace(kernel_threads(), build(pd));
  }

  std::size_t workspace_bytes() const override { return workspace_; }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    float* y = static_cast<float*>(outputs[problem_.output_slot]);
    const KernelThreadsScope threads(dnnl_threads(problem_.flops));
    with_dnnl_errors(*this, "matmul", [&] {
      Primitives& p = primitives_for_this_thread();
      p.src.set_data_handle(const_cast<void*>(inputs[0]));
      if (!packed_weights_) p.weights.set_data_handle(const_cast<void*>(inputs[1]));
      if (problem_.bias_from_first_op)
        p.bias.set_data_handle(const_cast<void*>(inputs[problem_.epilogue.ops[0].operand.input]));
      p.dst.set_data_handle(y);
      p.scratchpad.set_data_handle(p.scratch_region.at(workspace));
      set_post_op_operands(post_ops_, inputs, p.operands);
      p.matmul.execute(stream_, p.args);
      stream_.wait();
    });
    const std::size_t done = (problem_.bias_from_first_op ? 1 : 0) + post_ops_.count;
    apply_epilogue(problem_.epilogue, done, problem_.output_shape, y, inputs);
  }

 private:
  struct Primitives {
    dnnl::matmul matmul;
    memory src, weights, bias, dst, scratchpad;
    std::vector<memory> operands;
    std::unordered_map<int, memory> args;
    WorkspaceRegion scratch_region;
  };

  Primitives build(const dnnl::matmul::primitive_desc& pd) {
    const dnnl::engine& engine = dnnl_cpu_engine();
    Primitives p;
    p.matmul = dnnl::matmul(pd);
    p.src = memory(problem_.src, engine, nullptr);
    p.dst = memory(problem_.dst, engine, nullptr);
    p.weights = packed_weights_ ? weights_relaid_.in(*packed_weights_, pd.weights_desc(), stream_)
                                : memory(problem_.weights, engine, nullptr);
    p.scratchpad = memory(pd.scratchpad_desc(), engine, nullptr);
    p.scratch_region = WorkspaceRegion::reuse(scratch_region_, pd.scratchpad_desc().get_size());
    p.args = {{DNNL_ARG_SRC, p.src},
              {DNNL_ARG_WEIGHTS, p.weights},
              {DNNL_ARG_DST, p.dst},
              {DNNL_ARG_SCRATCHPAD, p.scratchpad}};
    if (problem_.bias_from_first_op) {
      p.bias = memory(pd.query_md(dnnl::query::weights_md, 1), engine, nullptr);
      p.args.emplace(DNNL_ARG_BIAS, p.bias);
    }
    bind_post_op_operands(post_ops_, engine, p.operands, p.args);
    return p;
  }

  Primitives& primitives_for_this_thread() {
    return cpu::primitives_for_this_thread(primitives_, [&](int threads) {
      const auto pd = matmul_desc(problem_, packed_weights_.has_value(), post_ops_.ops);
      if (!pd) throw dnnl::error(dnnl_unimplemented, ("no matmul for " + std::to_string(threads) + " threads").c_str());
      return build(*pd);
    });
  }

  MatMulProblem problem_;
  DnnlPostOps post_ops_;
  dnnl::stream stream_;
  memory::desc weights_desc_;
  std::optional<memory> packed_weights_;
  RelaidWeights weights_relaid_;    // packed_weights_ in other thread counts' layouts
  WorkspaceRegion scratch_region_;  // as laid out at creation
  std::size_t workspace_ = 0;
  std::map<int, Primitives> primitives_;  // by thread count
};

// Creates the kernel with the longest prefix of the epilogue the library takes; nullptr where it
// takes none of it.
std::unique_ptr<OpKernel> create(const KernelSpec& run, MatMulProblem problem,
                                 const std::function<std::optional<memory::dims>(const Shape&)>& operand_dims) {
  const Epilogue& epilogue = problem.epilogue;
  if (!epilogue.ops.empty()) {
    const EpilogueOp& first = epilogue.ops[0];
    problem.bias_from_first_op = first.kind == EpilogueKind::add && !first.operand.is_scalar &&
                                 first.operand.constant && per_column(first.operand.shape, problem.result.back());
  }
  const std::size_t first_post_op = problem.bias_from_first_op ? 1 : 0;
  const std::size_t remaining = epilogue.ops.size() - first_post_op;
  const KernelThreadsScope threads(dnnl_threads(problem.flops));  // the primitive its runs will use
  for (std::size_t most = remaining + 1; most-- > 0;) {
    DnnlPostOps post_ops = dnnl_post_ops(epilogue, first_post_op, most, operand_dims);
    if (post_ops.count < most) continue;
    const auto pd = matmul_desc(problem, problem.constant_weights != nullptr, post_ops.ops);
    if (!pd) continue;
    return std::make_unique<DnnlMatMulKernel>(run, std::move(problem), std::move(post_ops), *pd);
  }
  return nullptr;
}

// The initializer B when the kernel may pack it once (f32: one in another dtype is converted at
// upload and read per run).
const Tensor* packable(const KernelSpec& spec) {
  const Tensor* b = spec.constants.size() > 1 ? spec.constants[1] : nullptr;
  return b && b->dtype() == DType::f32 ? b : nullptr;
}

}  // namespace

std::unique_ptr<OpKernel> make_dnnl_matmul_kernel(const KernelSpec& spec, const FusedRun* fused) {
  const MatMulGeometry g = parse_matmul(spec);
  if (g.a_vector || g.b_vector || g.m == 0 || g.n == 0 || g.k == 0) return nullptr;
  MatMulProblem p;
  p.output_shape = spec.outputs[0].shape;
  if (fused) {
    p.epilogue = fused->epilogue;
    p.output_slot = fused->output_slot;
  }
  const std::int64_t batch = g.batch_shape.numel();
  if (batch == 0) return nullptr;
  p.constant_weights = packable(spec);
  std::function<std::optional<memory::dims>(const Shape&)> operand_dims;
  if (g.b_batch.numel() == 1 && g.a_batch.numel() == batch) {
    // A linear layer: every row of A against one B. Operands must fit the [rows, n] view.
    const std::int64_t rows = batch * g.m;
    p.src = plain_desc({rows, g.k});
    p.weights = plain_desc({g.k, g.n});
    p.dst = plain_desc({rows, g.n});
    p.result = {rows, g.n};
    const Shape output = p.output_shape;
    operand_dims = [rows, n = g.n, output](const Shape& operand) -> std::optional<memory::dims> {
      if (operand.numel() == 1) return memory::dims{1, 1};
      if (per_column(operand, n)) return memory::dims{1, n};
      if (operand == output) return memory::dims{rows, n};
      return std::nullopt;
    };
  } else {
    // Batched: the library broadcasts batch dims of size 1.
    const std::size_t rank = g.batch_shape.rank() + 2;
    const auto padded = [rank](const Shape& batch_dims, std::int64_t rows, std::int64_t cols) {
      memory::dims dims(rank - 2 - batch_dims.rank(), 1);
      dims.insert(dims.end(), batch_dims.dims().begin(), batch_dims.dims().end());
      dims.push_back(rows);
      dims.push_back(cols);
      return dims;
    };
    p.src = plain_desc(padded(g.a_batch, g.m, g.k));
    p.weights = plain_desc(padded(g.b_batch, g.k, g.n));
    p.dst = plain_desc(padded(g.batch_shape, g.m, g.n));
    p.result = p.dst.dims();
    if (g.b_batch.numel() != 1) p.constant_weights = nullptr;  // packing a batched B: not measured, not done
    operand_dims = [result = p.result](const Shape& operand) { return broadcast_dims(operand, result); };
  }
  p.flops = 2.0 * static_cast<double>(p.output_shape.numel()) * static_cast<double>(g.k);
  return create(run_spec(spec, fused), std::move(p), operand_dims);
}

std::unique_ptr<OpKernel> make_dnnl_gemm_kernel(const KernelSpec& spec, const FusedRun* fused) {
  const GemmGeometry g = parse_gemm(spec);
  // alpha scales the product only, beta C only: the library's output scale would scale the bias too.
  if (g.alpha != 1.0f || (g.has_c && g.beta != 1.0f) || g.m == 0 || g.n == 0 || g.k == 0) return nullptr;
  MatMulProblem p;
  p.output_shape = spec.outputs[0].shape;
  p.src = g.trans_a ? strided_desc({g.m, g.k}, {1, g.m}) : plain_desc({g.m, g.k});
  p.weights = g.trans_b ? strided_desc({g.k, g.n}, {1, g.k}) : plain_desc({g.k, g.n});
  p.dst = plain_desc({g.m, g.n});
  p.result = {g.m, g.n};
  p.constant_weights = packable(spec);
  if (g.has_c) {
    EpilogueOp add_c = EpilogueOp::of(EpilogueKind::add);
    add_c.operand.is_scalar = false;
    add_c.operand.input = 2;
    add_c.operand.shape = spec.inputs[2].shape;
    add_c.operand.constant = spec.constants[2] != nullptr;
    p.epilogue.ops.push_back(add_c);
  }
  if (fused) {
    p.epilogue.ops.insert(p.epilogue.ops.end(), fused->epilogue.ops.begin(), fused->epilogue.ops.end());
    p.output_slot = fused->output_slot;
  }
  p.flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const memory::dims result = p.result;
  return create(run_spec(spec, fused), std::move(p),
                [result](const Shape& operand) { return broadcast_dims(operand, result); });
}

}  // namespace loom::backend::cpu
