// LayerNormalization kernel: one block per row, two passes over the row for the statistics (the
// variance of x - mean, which keeps precision when the mean is large), a third to write; the
// optional Mean and InvStdDev outputs get the row's statistics.
#include "layernorm.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T>
__global__ void layernorm_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean_out, T* inv_std_out,
                                 std::int64_t rows, std::int64_t cols, float epsilon) {
  __shared__ float scratch[32];
  const float inv_cols = 1.0f / static_cast<float>(cols);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    T* out = y + row * cols;

    float local = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local += to_float(in[j]);
    const float mean = block_sum(local, scratch) * inv_cols;

    local = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float d = to_float(in[j]) - mean;
      local += d * d;
    }
    const float inv_std = rsqrtf(block_sum(local, scratch) * inv_cols + epsilon);
    if (threadIdx.x == 0) {
      if (mean_out) mean_out[row] = from_float<T>(mean);
      if (inv_std_out) inv_std_out[row] = from_float<T>(inv_std);
    }

    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      float v = (to_float(in[j]) - mean) * inv_std * to_float(scale[j]);
      if (bias) v += to_float(bias[j]);
      out[j] = from_float<T>(v);
    }
  }
}

template <class T>
void launch_typed(const void* x, const void* scale, const void* bias, void* y, void* mean, void* inv_std,
                  std::int64_t rows, std::int64_t cols, float epsilon, cudaStream_t stream) {
  const int threads = cols <= 256 ? 64 : kBlockThreads;
  layernorm_kernel<T><<<row_grid(rows), threads, 0, stream>>>(
      static_cast<const T*>(x), static_cast<const T*>(scale), static_cast<const T*>(bias), static_cast<T*>(y),
      static_cast<T*>(mean), static_cast<T*>(inv_std), rows, cols, epsilon);
}

}  // namespace

void launch_layernorm(const void* x, const void* scale, const void* bias, void* y, void* mean, void* inv_std,
                      DType dtype, std::int64_t rows, std::int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  if (dtype == DType::f32)
    launch_typed<float>(x, scale, bias, y, mean, inv_std, rows, cols, epsilon, stream);
  else if (dtype == DType::f16)
    launch_typed<__half>(x, scale, bias, y, mean, inv_std, rows, cols, epsilon, stream);
  else
    throw_unhandled_dtype("launch_layernorm", dtype);
}

}  // namespace loom::kernels
