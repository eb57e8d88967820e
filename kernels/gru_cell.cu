// The fused GRU cell: adds the gate products and biases, clips, applies ONNX's activations and
// updates the state. linear_before_reset = 0 needs r before the candidate's GEMM, hence two kernels.
#include "gru_cell.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

using backend::apply_rnn_activation;
using backend::clip_gate;

__device__ __forceinline__ std::int64_t row_length(const GruStepParams& p, std::int64_t b) {
  return backend::rnn_row_length(p.seq_lens, p.seq_lens_i64, b, p.seq_len);
}

// Pre-activation of gate k (0 = z, 1 = r) for row b, unit j at time t: x part + h part + Wb + Rb.
template <class T>
__device__ __forceinline__ float gate_input(const GruStepParams& p, std::int64_t b, std::int64_t t, std::int64_t j,
                                            int k) {
  const std::int64_t gates = 3 * p.hidden;
  const std::int64_t x_row = p.batch_major ? b * p.seq_len + t : t * p.batch + b;
  const std::int64_t g = k * p.hidden + j;
  float v = p.x_gates[x_row * gates + g] + p.h_gates[b * gates + g];
  if (p.bias) {
    const T* bias = static_cast<const T*>(p.bias);
    v += to_float(bias[g]) + to_float(bias[gates + g]);
  }
  return clip_gate(v, p.clip);
}

template <class T>
__global__ void gru_reset_kernel(GruStepParams p) {
  const std::int64_t n = p.batch * p.hidden;
  const T* h = static_cast<const T*>(p.h);
  T* reset_h = static_cast<T*>(p.reset_h);
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t b = i / p.hidden, j = i % p.hidden;
    const std::int64_t length = row_length(p, b);
    if (p.step >= length) {
      reset_h[i] = from_float<T>(0.0f);
      continue;
    }
    const std::int64_t t = p.reverse ? length - 1 - p.step : p.step;
    const float r = apply_rnn_activation(p.f, gate_input<T>(p, b, t, j, 1));
    reset_h[i] = from_float<T>(r * to_float(h[i]));
  }
}

template <class T>
__global__ void gru_update_kernel(GruStepParams p) {
  const std::int64_t n = p.batch * p.hidden;
  const std::int64_t gates = 3 * p.hidden;
  T* h = static_cast<T*>(p.h);
  T* y = static_cast<T*>(p.y);
  const T* bias = static_cast<const T*>(p.bias);
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t b = i / p.hidden, j = i % p.hidden;
    const std::int64_t length = row_length(p, b);
    if (p.step < length) {
      const std::int64_t t = p.reverse ? length - 1 - p.step : p.step;
      const std::int64_t x_row = p.batch_major ? b * p.seq_len + t : t * p.batch + b;
      const float z = apply_rnn_activation(p.f, gate_input<T>(p, b, t, j, 0));
      const std::int64_t g = 2 * p.hidden + j;
      float pre = p.x_gates[x_row * gates + g];
      const float h_product = p.h_gates[b * gates + g];
      if (p.linear_before_reset) {
        const float r = apply_rnn_activation(p.f, gate_input<T>(p, b, t, j, 1));
        pre += r * (h_product + (bias ? to_float(bias[gates + g]) : 0.0f));
        if (bias) pre += to_float(bias[g]);
      } else {
        pre += h_product;
        if (bias) pre += to_float(bias[g]) + to_float(bias[gates + g]);
      }
      const float candidate = apply_rnn_activation(p.g, clip_gate(pre, p.clip));
      const T h_new = from_float<T>((1.0f - z) * candidate + z * to_float(h[i]));
      h[i] = h_new;
      if (y) {
        const std::int64_t y_at = (p.batch_major ? (b * p.seq_len + t) * p.directions + p.direction
                                                 : (t * p.directions + p.direction) * p.batch + b) *
                                      p.hidden +
                                  j;
        y[y_at] = h_new;
      }
    }
    if (p.step == p.seq_len - 1 && p.y_h) {
      const std::int64_t state_at =
          (p.batch_major ? b * p.directions + p.direction : p.direction * p.batch + b) * p.hidden + j;
      static_cast<T*>(p.y_h)[state_at] = h[i];
    }
  }
}

}  // namespace

void launch_gru_reset(const GruStepParams& params, DType dtype, cudaStream_t stream) {
  const std::int64_t n = params.batch * params.hidden;
  if (n == 0) return;
  if (dtype == DType::f32)
    gru_reset_kernel<float><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else if (dtype == DType::f16)
    gru_reset_kernel<__half><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else
    throw_unhandled_dtype("launch_gru_reset", dtype);
}

void launch_gru_update(const GruStepParams& params, DType dtype, cudaStream_t stream) {
  const std::int64_t n = params.batch * params.hidden;
  if (n == 0) return;
  if (dtype == DType::f32)
    gru_update_kernel<float><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else if (dtype == DType::f16)
    gru_update_kernel<__half><<<grid_for(n), kBlockThreads, 0, stream>>>(params);
  else
    throw_unhandled_dtype("launch_gru_update", dtype);
}

}  // namespace loom::kernels
