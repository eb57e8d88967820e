// The fused LSTM cell: adds the two gate products, the biases and the peephole terms, clips,
// applies ONNX's activations and updates the states, so a time step is one GEMM launch + 1.
#include "lstm_cell.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

using backend::apply_rnn_activation;
using backend::clip_gate;

__device__ __forceinline__ std::int64_t row_length(const LstmStepParams& p, std::int64_t b) {
  return backend::rnn_row_length(p.seq_lens, p.seq_lens_i64, b, p.seq_len);
}

template <class T>
__global__ void lstm_step_kernel(LstmStepParams p) {
  const std::int64_t n = p.batch * p.hidden;
  const std::int64_t gate_stride = 4 * p.hidden;
  const T* bias = static_cast<const T*>(p.bias);
  const T* peep = static_cast<const T*>(p.peepholes);
  T* h = static_cast<T*>(p.h);
  T* y = static_cast<T*>(p.y);
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t b = i / p.hidden, j = i % p.hidden;
    const std::int64_t state_at =
        (p.batch_major ? b * p.directions + p.direction : p.direction * p.batch + b) * p.hidden + j;
    const std::int64_t length = row_length(p, b);
    float c_prev = p.c[i];
    if (p.step == 0) c_prev = p.initial_c ? to_float(static_cast<const T*>(p.initial_c)[state_at]) : 0.0f;
    if (p.step < length) {
      const std::int64_t t = p.reverse ? length - 1 - p.step : p.step;
      const std::int64_t x_row = p.batch_major ? b * p.seq_len + t : t * p.batch + b;
      const float* xg = p.x_gates + x_row * gate_stride;
      const float* hg = p.h_gates + b * gate_stride;
      float gate[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const std::int64_t g = k * p.hidden + j;
        gate[k] = xg[g] + hg[g];
        if (bias) gate[k] += to_float(bias[g]) + to_float(bias[gate_stride + g]);
      }
      if (peep) {
        gate[0] += to_float(peep[j]) * c_prev;
        gate[2] += to_float(peep[2 * p.hidden + j]) * c_prev;
      }
      const float input_gate = apply_rnn_activation(p.f, clip_gate(gate[0], p.clip));
      const float forget_gate =
          p.input_forget ? 1.0f - input_gate : apply_rnn_activation(p.f, clip_gate(gate[2], p.clip));
      const float candidate = apply_rnn_activation(p.g, clip_gate(gate[3], p.clip));
      const float c_new = forget_gate * c_prev + input_gate * candidate;
      if (peep) gate[1] += to_float(peep[p.hidden + j]) * c_new;
      const float output_gate = apply_rnn_activation(p.f, clip_gate(gate[1], p.clip));
      const T h_new = from_float<T>(output_gate * apply_rnn_activation(p.h_act, c_new));
      p.c[i] = c_new;
      h[i] = h_new;
      if (y) {
        const std::int64_t y_at = (p.batch_major ? (b * p.seq_len + t) * p.directions + p.direction
                                                 : (t * p.directions + p.direction) * p.batch + b) *
                                      p.hidden +
                                  j;
        y[y_at] = h_new;
      }
    } else if (p.step == 0) {
      p.c[i] = c_prev;  // a row of length 0 keeps its initial state
    }
    if (p.step == p.seq_len - 1) {
      if (p.y_h) static_cast<T*>(p.y_h)[state_at] = h[i];
      if (p.y_c) static_cast<T*>(p.y_c)[state_at] = from_float<T>(p.c[i]);
    }
  }
}

}  // namespace

void launch_lstm_step(const LstmStepParams& params, DType dtype, cudaStream_t stream) {
  const std::int64_t n = params.batch * params.hidden;
  if (n == 0) return;
  if (dtype == DType::f32)
    lstm_step_kernel<float><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else if (dtype == DType::f16)
    lstm_step_kernel<__half><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else
    throw_unhandled_dtype("launch_lstm_step", dtype);
}

}  // namespace loom::kernels
