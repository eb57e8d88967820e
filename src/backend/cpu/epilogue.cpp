// apply_epilogue(): the fused pointwise ops on our own kernels' results, each with the expression of
// the op's own kernel (elementwise.cpp, activation_math.hpp), so fusion changes no bit.
#include "backend/cpu/epilogue.hpp"

#include <algorithm>
#include <cmath>

#include "backend/cpu/activation_math.hpp"
#include "backend/cpu/vector_math.hpp"

namespace loom::backend::cpu {
namespace {

template <class F>
void map_in_place(float* y, std::int64_t count, F f) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = f(y[i]);
}

// Calls chunk(values, scratch, n) over y in pieces that fit a stack buffer (and L1): a step that
// needs an intermediate array, as the unfused kernels write one.
template <class F>
void by_chunks(float* y, std::int64_t count, F chunk) {
  constexpr std::int64_t kChunk = 1024;
  alignas(64) float scratch[kChunk];
  for (std::int64_t i = 0; i < count; i += kChunk) chunk(y + i, scratch, std::min(kChunk, count - i));
}

// x op t with t the broadcast tensor operand, or t op x where the operand comes first.
template <class Op>
void tensor_op(const BroadcastPlan<2>& plan, float* y, const float* t, bool operand_first, Op op) {
  if (operand_first)
    broadcast_binary(plan, y, t, y, [&](float x, float v) { return op(v, x); });
  else
    broadcast_binary(plan, y, t, y, op);
}

template <class Op>
void binary_op(const EpilogueOp& e, const BroadcastPlan<2>& plan, float* y, std::int64_t count,
               std::span<const void* const> inputs, Op op) {
  const EpilogueOperand& operand = e.operand;
  if (!operand.is_scalar) {
    tensor_op(plan, y, static_cast<const float*>(inputs[operand.input]), operand.operand_first, op);
  } else if (operand.operand_first) {
    map_in_place(y, count, [&](float x) { return op(operand.scalar, x); });
  } else {
    map_in_place(y, count, [&](float x) { return op(x, operand.scalar); });
  }
}

}  // namespace

void plan_epilogue(const KernelSpec& spec, Epilogue& epilogue, const Shape& result) {
  epilogue.plans.assign(epilogue.ops.size(), {});
  for (std::size_t i = 0; i < epilogue.ops.size(); ++i)
    if (!epilogue.ops[i].operand.is_scalar)
      epilogue.plans[i] = plan_broadcast<2>(spec, result, {result, epilogue.ops[i].operand.shape});
}

void apply_epilogue(const Epilogue& epilogue, std::size_t first, const Shape& result, float* y,
                    std::span<const void* const> inputs) {
  const std::int64_t count = result.numel();
  for (std::size_t i = first; i < epilogue.ops.size(); ++i) {
    const EpilogueOp& e = epilogue.ops[i];
    const float alpha = e.alpha, beta = e.beta, gamma = e.gamma;
    switch (e.kind) {
      case EpilogueKind::relu:
        map_in_place(y, count, [](float v) { return relu(v); });
        break;
      case EpilogueKind::leaky_relu:
        map_in_place(y, count, [=](float v) { return leaky_relu(v, alpha); });
        break;
      case EpilogueKind::sigmoid:
        sigmoid_array(y, y, count);
        break;
      case EpilogueKind::tanh:
        map_in_place(y, count, [](float v) { return std::tanh(v); });
        break;
      case EpilogueKind::hard_sigmoid:
        map_in_place(y, count, [=](float v) { return hard_sigmoid(v, alpha, beta); });
        break;
      case EpilogueKind::hard_swish:
        map_in_place(y, count, [](float v) { return hard_swish(v); });
        break;
      case EpilogueKind::gelu_erf:
        map_in_place(y, count, [](float v) { return gelu_erf(v); });
        break;
      case EpilogueKind::gelu_tanh:
        map_in_place(y, count, [](float v) { return gelu_tanh(v); });
        break;
      case EpilogueKind::silu:
        // Mul(x, Sigmoid(x)): the product of the two values the unfused kernels write.
        by_chunks(y, count, [](float* v, float* s, std::int64_t n) {
          sigmoid_array(v, s, n);
          for (std::int64_t j = 0; j < n; ++j) v[j] = v[j] * s[j];
        });
        break;
      case EpilogueKind::gelu_erf_chain:
        // Div, Erf, Add, Mul, Mul, each rounded to float as the unfused kernels round them.
        by_chunks(y, count, [=](float* v, float* t, std::int64_t n) {
          for (std::int64_t j = 0; j < n; ++j) t[j] = v[j] / alpha;
          erf_array(t, t, n);
          for (std::int64_t j = 0; j < n; ++j) t[j] = t[j] + beta;
          for (std::int64_t j = 0; j < n; ++j) v[j] = (v[j] * t[j]) * gamma;
        });
        break;
      case EpilogueKind::add:
        binary_op(e, epilogue.plans[i], y, count, inputs, [](float a, float b) { return a + b; });
        break;
      case EpilogueKind::sub:
        binary_op(e, epilogue.plans[i], y, count, inputs, [](float a, float b) { return a - b; });
        break;
      case EpilogueKind::mul:
        binary_op(e, epilogue.plans[i], y, count, inputs, [](float a, float b) { return a * b; });
        break;
      case EpilogueKind::div:
        binary_op(e, epilogue.plans[i], y, count, inputs, [](float a, float b) { return a / b; });
        break;
    }
  }
}

}  // namespace loom::backend::cpu
