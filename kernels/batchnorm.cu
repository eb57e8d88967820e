// BatchNormalization (inference) kernels: a tiny per-channel fold, then one FMA per element.
#include "batchnorm.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class P>
__global__ void fold_kernel(const P* scale, const P* bias, const P* mean, const P* var, float epsilon, float* folded,
                            std::int64_t channels) {
  for (std::int64_t c = global_thread_index(); c < channels; c += grid_stride()) {
    const float a = to_float(scale[c]) * rsqrtf(to_float(var[c]) + epsilon);
    folded[c] = a;
    folded[channels + c] = to_float(bias[c]) - to_float(mean[c]) * a;
  }
}

template <class T>
__global__ void apply_kernel(const T* x, T* y, const float* folded, std::int64_t channels, std::int64_t inner,
                             std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    const std::int64_t c = (i / inner) % channels;
    y[i] = from_float<T>(fmaf(to_float(x[i]), folded[c], folded[channels + c]));
  }
}

template <class P>
void launch_fold(const void* scale, const void* bias, const void* mean, const void* var, float epsilon, float* folded,
                 std::int64_t channels, cudaStream_t stream) {
  fold_kernel<P><<<grid_for(channels), kBlockThreads, 0, stream>>>(
      static_cast<const P*>(scale), static_cast<const P*>(bias), static_cast<const P*>(mean),
      static_cast<const P*>(var), epsilon, folded, channels);
}

template <class T>
void launch_apply(const void* x, void* y, const float* folded, std::int64_t channels, std::int64_t inner,
                  std::int64_t n, cudaStream_t stream) {
  apply_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y), folded,
                                                             channels, inner, n);
}

}  // namespace

void launch_batchnorm(const void* x, void* y, DType dtype, const void* scale, const void* bias, const void* mean,
                      const void* var, DType param_dtype, float epsilon, float* folded, std::int64_t batch,
                      std::int64_t channels, std::int64_t inner, cudaStream_t stream) {
  const std::int64_t n = batch * channels * inner;
  if (n == 0) return;
  if (param_dtype == DType::f32)
    launch_fold<float>(scale, bias, mean, var, epsilon, folded, channels, stream);
  else if (param_dtype == DType::f16)
    launch_fold<__half>(scale, bias, mean, var, epsilon, folded, channels, stream);
  else
    throw_unhandled_dtype("launch_batchnorm", param_dtype);

  if (dtype == DType::f32)
    launch_apply<float>(x, y, folded, channels, inner, n, stream);
  else if (dtype == DType::f16)
    launch_apply<__half>(x, y, folded, channels, inner, n, stream);
  else
    throw_unhandled_dtype("launch_batchnorm", dtype);
}

}  // namespace loom::kernels
