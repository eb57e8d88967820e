// Softmax and LogSoftmax kernels: one block per row when the axis is innermost (the common case), otherwise one
// thread per (outer, inner) column so neighbouring threads still read neighbouring addresses.
#include "softmax.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T>
__global__ void softmax_rows_kernel(const T* x, T* y, std::int64_t rows, std::int64_t cols, bool log_softmax) {
  __shared__ float scratch[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* row_in = x + row * cols;
    T* row_out = y + row * cols;

    float local_max = -INFINITY;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local_max = fmaxf(local_max, to_float(row_in[j]));
    const float row_max = block_max(local_max, scratch);

    float local_sum = 0.0f;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) local_sum += expf(to_float(row_in[j]) - row_max);
    const float sum = block_sum(local_sum, scratch);

    if (log_softmax) {
      const float shift = row_max + logf(sum);
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
        row_out[j] = from_float<T>(to_float(row_in[j]) - shift);
      continue;
    }
    const float inv_sum = 1.0f / sum;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      row_out[j] = from_float<T>(expf(to_float(row_in[j]) - row_max) * inv_sum);
  }
}

template <class T>
__global__ void softmax_columns_kernel(const T* x, T* y, std::int64_t outer, std::int64_t axis, std::int64_t inner,
                                       bool log_softmax) {
  const std::int64_t columns = outer * inner;
  for (std::int64_t col = global_thread_index(); col < columns; col += grid_stride()) {
    const std::int64_t o = col / inner, in = col % inner;
    const T* src = x + o * axis * inner + in;
    T* dst = y + o * axis * inner + in;
    float m = -INFINITY;
    for (std::int64_t k = 0; k < axis; ++k) m = fmaxf(m, to_float(src[k * inner]));
    float sum = 0.0f;
    for (std::int64_t k = 0; k < axis; ++k) sum += expf(to_float(src[k * inner]) - m);
    if (log_softmax) {
      const float shift = m + logf(sum);
      for (std::int64_t k = 0; k < axis; ++k) dst[k * inner] = from_float<T>(to_float(src[k * inner]) - shift);
      continue;
    }
    const float inv_sum = 1.0f / sum;
    for (std::int64_t k = 0; k < axis; ++k)
      dst[k * inner] = from_float<T>(expf(to_float(src[k * inner]) - m) * inv_sum);
  }
}

template <class T>
void launch_typed(const void* x, void* y, std::int64_t outer, std::int64_t axis, std::int64_t inner, bool log_softmax,
                  cudaStream_t stream) {
  const T* tx = static_cast<const T*>(x);
  T* ty = static_cast<T*>(y);
  if (inner == 1) {
    // Short rows waste most of a 256-thread block; 64 threads still cover a warp pair.
    const int threads = axis <= 256 ? 64 : kBlockThreads;
    softmax_rows_kernel<T><<<row_grid(outer), threads, 0, stream>>>(tx, ty, outer, axis, log_softmax);
  } else {
    softmax_columns_kernel<T>
        <<<grid_for(outer * inner), kBlockThreads, 0, stream>>>(tx, ty, outer, axis, inner, log_softmax);
  }
}

}  // namespace

void launch_softmax(const void* x, void* y, DType dtype, std::int64_t outer, std::int64_t axis, std::int64_t inner,
                    bool log_softmax, cudaStream_t stream) {
  if (outer == 0 || axis == 0 || inner == 0) return;
  if (dtype == DType::f32)
    launch_typed<float>(x, y, outer, axis, inner, log_softmax, stream);
  else if (dtype == DType::f16)
    launch_typed<__half>(x, y, outer, axis, inner, log_softmax, stream);
  else
    throw_unhandled_dtype("launch_softmax", dtype);
}

}  // namespace loom::kernels
