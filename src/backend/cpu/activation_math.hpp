// Scalar activation functions shared by the activation kernels and the LSTM cell. ONNX defines
// each one; the comments give the formula where the code rearranges it for stability.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace loom::backend::cpu {

// Each is a template over the float type it computes in (float for f32 and the 16-bit floats,
// double for f64); the parameters after x take x's type.

// max(x, 0); NaN gives 0 and -0 gives 0, as the comparison decides.
template <class C>
inline C relu(C x) {
  return x > C{0} ? x : C{0};
}

template <class C>
inline C leaky_relu(C x, std::type_identity_t<C> alpha) {
  return x < C{0} ? alpha * x : x;
}

// Two branches so exp never overflows for large |x|.
template <class C>
inline C sigmoid(C x) {
  if (x >= C{0}) return C{1} / (C{1} + std::exp(-x));
  const C e = std::exp(x);
  return e / (C{1} + e);
}

// log(1 + exp(x)), written so exp never overflows: x + log1p(exp(-x)) for positive x.
template <class C>
inline C softplus(C x) {
  if (x > C{0}) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

template <class C>
inline C elu(C x, std::type_identity_t<C> alpha) {
  return x < C{0} ? alpha * std::expm1(x) : x;
}

// max(0, min(1, alpha * x + beta)); NaN stays NaN.
template <class C>
inline C hard_sigmoid(C x, std::type_identity_t<C> alpha, std::type_identity_t<C> beta) {
  const C v = alpha * x + beta;
  return v < C{0} ? C{0} : (v > C{1} ? C{1} : v);
}

// x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
template <class C>
inline C hard_swish(C x) {
  return x * hard_sigmoid(x, C{1} / C{6}, C{0.5});
}

template <class C>
inline C gelu_erf(C x) {
  constexpr C kInvSqrt2 = static_cast<C>(0.70710678118654752440);
  return C{0.5} * x * (C{1} + std::erf(x * kInvSqrt2));
}

// ONNX Gelu approximate="tanh".
template <class C>
inline C gelu_tanh(C x) {
  constexpr C kSqrt2OverPi = static_cast<C>(0.79788456080286536);
  return C{0.5} * x * (C{1} + std::tanh(kSqrt2OverPi * (x + static_cast<C>(0.044715) * x * x * x)));
}

}  // namespace loom::backend::cpu
