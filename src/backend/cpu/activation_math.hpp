// Scalar activation functions shared by the activation kernels and the LSTM cell.
#pragma once

#include <cmath>

namespace loom::backend::cpu {

// Two branches so exp never overflows for large |x|.
inline float sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
  const float e = std::exp(x);
  return e / (1.0f + e);
}

}  // namespace loom::backend::cpu
