// Scalar activation functions shared by the activation kernels and the LSTM cell. ONNX defines
// each one; the comments give the formula where the code rearranges it for stability.
#pragma once

#include <algorithm>
#include <cmath>

namespace loom::backend::cpu {

// Two branches so exp never overflows for large |x|.
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

// log(1 + exp(x)), written so exp never overflows: x + log1p(exp(-x)) for positive x.
inline float softplus(float x) {
  if (x > 0.0f) return x + std::log1p(std::exp(-x));
  return std::log1p(std::exp(x));
}

inline float elu(float x, float alpha) { return x < 0.0f ? alpha * std::expm1(x) : x; }

// max(0, min(1, alpha * x + beta)); NaN stays NaN.
inline float hard_sigmoid(float x, float alpha, float beta) {
  const float v = alpha * x + beta;
  return v < 0.0f ? 0.0f : (v > 1.0f ? 1.0f : v);
}

// x * HardSigmoid(x) with alpha = 1/6, beta = 0.5.
inline float hard_swish(float x) { return x * hard_sigmoid(x, 1.0f / 6.0f, 0.5f); }

inline float gelu_erf(float x) {
  constexpr float kInvSqrt2 = 0.70710678118654752f;
  return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
}

// ONNX Gelu approximate="tanh".
inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286536f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
}

}  // namespace loom::backend::cpu
