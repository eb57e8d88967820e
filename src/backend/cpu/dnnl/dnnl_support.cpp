// The oneDNN kernels' shared pieces (dnnl_support.hpp).
#include "backend/cpu/dnnl/dnnl_support.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace loom::backend::cpu {
namespace {

using Algorithm = dnnl::algorithm;

// An eltwise post-op: alpha and beta as the library's algorithm reads them.
struct Eltwise {
  Algorithm algorithm;
  float alpha = 0.0f, beta = 0.0f;
};

// The eltwise post-op an epilogue op is, when the library computes it exactly as our kernels do:
// fusion changes no bit (docs/cpu-backend.md), so only exact operations go to the library. The
// transcendental activations (Sigmoid, Tanh, SiLU, Gelu, Erf) stay with apply_epilogue(), which
// computes them with the function the unfused op's kernel uses.
std::optional<Eltwise> eltwise_of(const EpilogueOp& op) {
  switch (op.kind) {
    case EpilogueKind::relu:
      return Eltwise{Algorithm::eltwise_relu};
    case EpilogueKind::leaky_relu:
      return Eltwise{Algorithm::eltwise_relu, op.alpha};  // x < 0 ? alpha * x : x, one rounding
    case EpilogueKind::add:
    case EpilogueKind::sub:
    case EpilogueKind::mul: {
      // alpha * x + beta with a scalar operand: 1 * x + c and c * x + 0 round once, as x + c and
      // x * c do. Division by c would need its reciprocal: not exact, not taken.
      const EpilogueOperand& operand = op.operand;
      if (!operand.is_scalar) return std::nullopt;
      const float c = operand.scalar;
      if (op.kind == EpilogueKind::add) return Eltwise{Algorithm::eltwise_linear, 1.0f, c};
      if (op.kind == EpilogueKind::mul) return Eltwise{Algorithm::eltwise_linear, c, 0.0f};
      return operand.operand_first ? Eltwise{Algorithm::eltwise_linear, -1.0f, c}
                                   : Eltwise{Algorithm::eltwise_linear, 1.0f, -c};
    }
    default:
      return std::nullopt;
  }
}

// The binary post-op of a tensor operand (the chain's value first for sub and div).
std::optional<Algorithm> binary_of(const EpilogueOp& op) {
  if (op.operand.is_scalar) return std::nullopt;
  switch (op.kind) {
    case EpilogueKind::add:
      return Algorithm::binary_add;
    case EpilogueKind::mul:
      return Algorithm::binary_mul;
    case EpilogueKind::sub:
      if (op.operand.operand_first) return std::nullopt;
      return Algorithm::binary_sub;
    case EpilogueKind::div:
      if (op.operand.operand_first) return std::nullopt;
      return Algorithm::binary_div;
    default:
      return std::nullopt;
  }
}

}  // namespace

const dnnl::engine& dnnl_cpu_engine() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::memory::dims to_dims(const Shape& shape) { return dnnl::memory::dims(shape.dims().begin(), shape.dims().end()); }

dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strided_desc(dims, strides);
}

dnnl::memory RelaidWeights::in(dnnl::memory packed, const dnnl::memory::desc& layout, dnnl::stream& stream) {
  if (packed.get_desc() == layout) return packed;
  for (const dnnl::memory& copy : copies_)
    if (copy.get_desc() == layout) return copy;
  dnnl::memory copy(layout, dnnl_cpu_engine());
  dnnl::reorder(packed, copy).execute(stream, packed, copy);
  stream.wait();
  copies_.push_back(copy);
  return copy;
}

int dnnl_threads(double flops) noexcept {
  const int threads = kernel_threads();
  const double by_work = flops / kDnnlFlopsPerThread;
  if (threads <= 1 || by_work < 2.0) return 1;
  return by_work >= threads ? threads : static_cast<int>(by_work);
}

void relay_at_creation(const OpKernel& kernel, const char* what, dnnl::memory& source, dnnl::memory& packed,
                       dnnl::stream& stream) {
  const KernelThreadsScope one_thread(1);
  with_dnnl_errors(kernel, what, [&] {
    dnnl::reorder(source, packed).execute(stream, source, packed);
    stream.wait();
  });
}

dnnl::memory::desc strided_desc(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

std::optional<dnnl::memory::dims> broadcast_dims(const Shape& operand, const dnnl::memory::dims& result) {
  if (operand.rank() > result.size()) return std::nullopt;
  dnnl::memory::dims dims(result.size(), 1);
  const std::size_t lead = result.size() - operand.rank();
  for (std::size_t i = 0; i < operand.rank(); ++i) {
    if (operand[i] != 1 && operand[i] != result[lead + i]) return std::nullopt;
    dims[lead + i] = operand[i];
  }
  return dims;
}

DnnlPostOps dnnl_post_ops(const Epilogue& epilogue, std::size_t first, std::size_t most,
                          const OperandDims& operand_dims) {
  DnnlPostOps result;
  for (std::size_t i = first; i < epilogue.ops.size() && result.count < most; ++i) {
    const EpilogueOp& op = epilogue.ops[i];
    if (const auto eltwise = eltwise_of(op)) {
      result.ops.append_eltwise(1.0f, eltwise->algorithm, eltwise->alpha, eltwise->beta);
    } else if (const auto binary = binary_of(op)) {
      const auto dims = operand_dims(op.operand.shape);
      if (!dims) break;
      const dnnl::memory::desc desc = plain_desc(*dims);
      result.operands.push_back({result.ops.len(), op.operand.input, desc});
      result.ops.append_binary(*binary, desc);
    } else {
      break;
    }
    ++result.count;
  }
  return result;
}

WorkspaceRegion::WorkspaceRegion(std::size_t bytes, std::size_t* end) : offset_(*end), bytes_((bytes + 63) / 64 * 64) {
  *end += bytes_;
}

WorkspaceRegion WorkspaceRegion::reuse(const WorkspaceRegion& reserved, std::size_t bytes) {
  if (bytes <= reserved.bytes_) return reserved;
  WorkspaceRegion own;
  own.bytes_ = bytes;
  own.own_ = std::shared_ptr<void>(std::aligned_alloc(64, (bytes + 63) / 64 * 64), std::free);
  if (!own.own_) throw Error(ErrorCode::out_of_memory, "oneDNN kernel: " + std::to_string(bytes) + " bytes of scratch");
  return own;
}

void* WorkspaceRegion::at(void* workspace) const {
  return own_ ? own_.get() : static_cast<std::byte*>(workspace) + offset_;
}

dnnl::primitive_attr dnnl_attributes(const dnnl::post_ops& post_ops) {
  dnnl::primitive_attr attr;
  attr.set_post_ops(post_ops);
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool is_reference_implementation(const char* impl_info) {
  return impl_info == nullptr || std::strncmp(impl_info, "ref", 3) == 0;
}

void throw_dnnl_error(const OpKernel& kernel, const char* what, const dnnl::error& error) {
  throw Error(ErrorCode::backend,
              kernel.op_type() + " node '" + kernel.node_name() + "': oneDNN " + what + ": " + error.what());
}

void bind_post_op_operands(const DnnlPostOps& post_ops, const dnnl::engine& engine, std::vector<dnnl::memory>& memories,
                           std::unordered_map<int, dnnl::memory>& args) {
  for (const DnnlPostOps::Operand& operand : post_ops.operands) {
    memories.emplace_back(operand.desc, engine, nullptr);
    args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(operand.index) | DNNL_ARG_SRC_1, memories.back());
  }
}

void set_post_op_operands(const DnnlPostOps& post_ops, std::span<const void* const> inputs,
                          std::vector<dnnl::memory>& memories) {
  for (std::size_t i = 0; i < post_ops.operands.size(); ++i)
    memories[i].set_data_handle(const_cast<void*>(inputs[post_ops.operands[i].input]));
}

}  // namespace loom::backend::cpu
