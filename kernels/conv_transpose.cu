// ConvTranspose's crop-and-bias kernel: one output element per thread.
#include "conv_transpose.cuh"

#include "common.cuh"

namespace loom::kernels {
namespace {

template <class T>
__global__ void conv_transpose_crop_kernel(const T* full, const T* bias, T* y, ConvTransposeCrop c, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t rest = i;
    const std::int64_t ow = rest % c.out[2];
    rest /= c.out[2];
    const std::int64_t oh = rest % c.out[1];
    rest /= c.out[1];
    const std::int64_t od = rest % c.out[0];
    const std::int64_t plane = rest / c.out[0];
    const std::int64_t fd = od + c.pad_begin[0], fh = oh + c.pad_begin[1], fw = ow + c.pad_begin[2];
    float value = 0.0f;
    if (fd >= 0 && fd < c.full[0] && fh >= 0 && fh < c.full[1] && fw >= 0 && fw < c.full[2])
      value = to_float(full[((plane * c.full[0] + fd) * c.full[1] + fh) * c.full[2] + fw]);
    if (bias) value += to_float(bias[plane % c.channels]);
    y[i] = from_float<T>(value);
  }
}

}  // namespace

void launch_conv_transpose_crop(const void* full, const void* bias, void* y, DType dtype, const ConvTransposeCrop& crop,
                                cudaStream_t stream) {
  const std::int64_t n = crop.planes * crop.out[0] * crop.out[1] * crop.out[2];
  if (n == 0) return;
  if (dtype == DType::f32)
    conv_transpose_crop_kernel<float><<<grid_for(n), kBlockThreads, 0, stream>>>(
        static_cast<const float*>(full), static_cast<const float*>(bias), static_cast<float*>(y), crop, n);
  else if (dtype == DType::f16)
    conv_transpose_crop_kernel<__half><<<grid_for(n), kBlockThreads, 0, stream>>>(
        static_cast<const __half*>(full), static_cast<const __half*>(bias), static_cast<__half*>(y), crop, n);
  else
    throw_unhandled_dtype("launch_conv_transpose_crop", dtype);
}

}  // namespace loom::kernels
