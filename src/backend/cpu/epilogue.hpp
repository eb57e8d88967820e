// What a fused CPU kernel applies to its anchor's result (a Conv, MatMul or Gemm) before writing it:
// the pointwise ops after the anchor that the fusion matcher (fusion.cpp) claimed, in order. Our
// own kernels apply it with apply_epilogue(), which computes each op with the float expression of
// the op's own kernel, so fused and unfused results are equal bit for bit; oneDNN's kernels hand
// what they can to the library as post-ops (dnnl/post_ops.hpp) and apply the rest the same way.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/elementwise_support.hpp"

namespace loom::backend::cpu {

enum class EpilogueKind {
  relu,
  leaky_relu,  // alpha: the slope below 0
  sigmoid,
  tanh,
  hard_sigmoid,  // alpha, beta
  hard_swish,
  gelu_erf,   // ONNX Gelu (approximate "none")
  gelu_tanh,  // ONNX Gelu (approximate "tanh")
  silu,       // x * sigmoid(x): Sigmoid, then Mul of its input by its output
  // ((erf(x / alpha) + beta) * x) * gamma: GELU as exporters write it (Div, Erf, Add, Mul, Mul);
  // alpha = sqrt(2), beta = 1, gamma = 0.5 in every model seen.
  gelu_erf_chain,
  add,  // x + operand (or operand + x: the same float)
  sub,  // x - operand, or operand - x with operand_first
  mul,
  div,  // x / operand, or operand / x with operand_first
};

// The second operand of add/sub/mul/div: a constant scalar, or a tensor input of the fused kernel
// broadcast (numpy rules) to the anchor's result.
struct EpilogueOperand {
  bool is_scalar = true;
  float scalar = 0.0f;
  std::size_t input = 0;  // the tensor: index into the fused kernel's run() inputs
  Shape shape;            // the tensor's shape
  bool constant = false;  // the tensor is an initializer (a bias)
  bool operand_first = false;
};

struct EpilogueOp {
  static EpilogueOp of(EpilogueKind kind) {
    EpilogueOp op;
    op.kind = kind;
    return op;
  }
  EpilogueKind kind = EpilogueKind::relu;
  float alpha = 0.0f, beta = 0.0f, gamma = 0.0f;
  EpilogueOperand operand;  // add, sub, mul, div
};

struct Epilogue {
  std::vector<EpilogueOp> ops;
  // Per op, the walk of its tensor operand over the result (plan_epilogue); empty otherwise.
  std::vector<BroadcastPlan<2>> plans;
};

// How a kernel created for a fusion runs (FusedKernel): `spec` describes its run(): every member's
// inputs, then every member's outputs, as the runtime passes them. The anchor's result goes through
// `epilogue` into outputs[output_slot].
struct FusedRun {
  KernelSpec spec;
  Epilogue epilogue;
  std::size_t output_slot = 0;
};

// The spec a kernel's OpKernel base checks run()'s arity against: the fused one when there is one.
inline const KernelSpec& run_spec(const KernelSpec& anchor, const FusedRun* fused) {
  return fused ? fused->spec : anchor;
}

// Checks every tensor operand broadcasts to `result` (Error naming spec's node otherwise) and plans
// its walk; called once, when the kernel is created.
void plan_epilogue(const KernelSpec& spec, Epilogue& epilogue, const Shape& result);

// Applies epilogue.ops[first...] (planned) in order to `y`, the anchor's result of shape `result`, in place;
// tensor operands are read from `inputs` (the fused kernel's run() inputs).
void apply_epilogue(const Epilogue& epilogue, std::size_t first, const Shape& result, float* y,
                    std::span<const void* const> inputs);

}  // namespace loom::backend::cpu
