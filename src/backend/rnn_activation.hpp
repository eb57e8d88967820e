// The activation functions of ONNX's recurrent ops (LSTM, GRU), their gate clip and row lengths, as plain
// inline code usable from host C++ and from CUDA device code alike (kernels/*_cell.cu include it).
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define LOOM_RNN_HOST_DEVICE __host__ __device__
#else
#define LOOM_RNN_HOST_DEVICE
#endif

namespace loom::backend {

// The activation functions ONNX lists for recurrent ops.
enum class RnnActivationKind : std::int32_t {
  sigmoid,
  tanh,
  relu,
  affine,
  leaky_relu,
  thresholded_relu,
  scaled_tanh,
  hard_sigmoid,
  elu,
  softsign,
  softplus
};

struct RnnActivation {
  RnnActivationKind kind = RnnActivationKind::sigmoid;
  float alpha = 0.0f, beta = 0.0f;
};

LOOM_RNN_HOST_DEVICE inline float apply_rnn_activation(const RnnActivation& f, float x) {
  switch (f.kind) {
    case RnnActivationKind::sigmoid: {
      // Two branches so exp never overflows for large |x|.
      if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
      const float e = expf(x);
      return e / (1.0f + e);
    }
    case RnnActivationKind::tanh:
      return tanhf(x);
    case RnnActivationKind::relu:
      return x > 0.0f ? x : 0.0f;
    case RnnActivationKind::affine:
      return f.alpha * x + f.beta;
    case RnnActivationKind::leaky_relu:
      return x < 0.0f ? f.alpha * x : x;
    case RnnActivationKind::thresholded_relu:
      return x > f.alpha ? x : 0.0f;
    case RnnActivationKind::scaled_tanh:
      return f.alpha * tanhf(f.beta * x);
    case RnnActivationKind::hard_sigmoid:
      return fmaxf(0.0f, fminf(1.0f, f.alpha * x + f.beta));
    case RnnActivationKind::elu:
      return x < 0.0f ? f.alpha * (expf(x) - 1.0f) : x;
    case RnnActivationKind::softsign:
      return x / (1.0f + fabsf(x));
    case RnnActivationKind::softplus:
      return x > 20.0f ? x : log1pf(expf(x));
  }
  return x;
}

// ONNX's optional clip: gate pre-activations are clamped to [-clip, clip]; clip <= 0 means none.
LOOM_RNN_HOST_DEVICE inline float clip_gate(float x, float clip) {
  return clip > 0.0f ? fminf(fmaxf(x, -clip), clip) : x;
}

// Valid steps of batch row b: sequence_lens[b] (i32 or i64) clamped to [0, steps], or steps
// when there are no lengths.
LOOM_RNN_HOST_DEVICE inline std::int64_t rnn_row_length(const void* sequence_lens, bool lengths_i64, std::int64_t b,
                                                        std::int64_t steps) {
  if (!sequence_lens) return steps;
  const std::int64_t length = lengths_i64
                                  ? static_cast<const std::int64_t*>(sequence_lens)[b]
                                  : static_cast<std::int64_t>(static_cast<const std::int32_t*>(sequence_lens)[b]);
  return length < 0 ? 0 : (length > steps ? steps : length);
}

}  // namespace loom::backend
