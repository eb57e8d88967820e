// The fused LSTM cell: adds the two gate products and the biases, applies sigmoid/tanh (the ONNX
// default activations) and updates the states, so a time step is two GEMMs' worth of launches + 1.
#include "lstm_cell.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

template <class T>
__global__ void lstm_step_kernel(LstmStepParams p) {
  const std::int64_t n = p.batch * p.hidden;
  const std::int64_t gate_stride = 4 * p.hidden;
  const T* bias = static_cast<const T*>(p.bias);
  T* h = static_cast<T*>(p.h);
  T* y = static_cast<T*>(p.y);
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t b = i / p.hidden, j = i % p.hidden;
    std::int64_t length = p.seq_len;
    if (p.seq_lens)
      length = p.seq_lens_i64 ? static_cast<const std::int64_t*>(p.seq_lens)[b]
                              : static_cast<std::int64_t>(static_cast<const std::int32_t*>(p.seq_lens)[b]);
    length = length < 0 ? 0 : (length > p.seq_len ? p.seq_len : length);
    if (p.step >= length) continue;
    const std::int64_t t = p.reverse ? length - 1 - p.step : p.step;

    const float* xg = p.x_gates + (t * p.batch + b) * gate_stride;
    const float* hg = p.h_gates + b * gate_stride;
    float gate[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const std::int64_t g = k * p.hidden + j;
      gate[k] = xg[g] + hg[g];
      if (bias) gate[k] += to_float(bias[g]) + to_float(bias[gate_stride + g]);
    }
    const float input_gate = sigmoid(gate[0]);
    const float output_gate = sigmoid(gate[1]);
    const float forget_gate = sigmoid(gate[2]);
    const float candidate = tanhf(gate[3]);
    const float c_new = forget_gate * p.c[i] + input_gate * candidate;
    const T h_new = from_float<T>(output_gate * tanhf(c_new));
    p.c[i] = c_new;
    h[i] = h_new;
    if (y) y[((t * p.directions + p.direction) * p.batch + b) * p.hidden + j] = h_new;
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
