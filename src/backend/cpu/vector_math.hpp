// Sigmoid and Erf over float arrays, written so the compiler vectorises them (branch-free
// polynomials, no calls into libm) for the CPU kernels' hot loops: YOLO's SiLU and BERT's GELU
// spend most of their elementwise time here. Every kernel computing these functions in f32 (the op
// kernels and the fusion epilogue) calls these, and the file is built without floating-point
// contraction, so each element's result is one fixed sequence of IEEE operations: the same bits
// whichever kernel, vector width or CPU computes it.
#pragma once

#include <cstdint>

namespace loom::backend::cpu {

// y[i] = 1 / (1 + exp(-x[i])), within 2 ulp; exp's underflow gives exactly 0 and 1 at the ends.
// x and y may be the same array.
void sigmoid_array(const float* x, float* y, std::int64_t count);

// y[i] = erf(x[i]), within 2 ulp of float over [-4, 4] and exactly +-1 beyond (where erfc is
// below half an ulp of 1). x and y may be the same array.
void erf_array(const float* x, float* y, std::int64_t count);

}  // namespace loom::backend::cpu
