// Max and average pooling (1-D to 3-D: pads or auto_pad, ceil_mode, dilations), and global
// average / max pooling. Windows are clipped to the input, so padding never enters a max and only
// counts towards an average's divisor when count_include_pad is set; even then the positions
// ceil_mode adds past the end padding are not counted (ONNX reference, ONNX Runtime).
#include "backend/cpu/pool.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cpu/elementwise_support.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {
namespace {

// Along one axis, for each output index: the taps that land inside the input, [first, last), and
// how many land inside the padded input (the count_include_pad divisor's factor).
struct AxisTaps {
  std::vector<std::int64_t> first, last, padded;
};

AxisTaps axis_taps(const WindowGeometry& g, std::size_t axis) {
  AxisTaps taps;
  const std::int64_t in = g.input[axis], k = g.kernel[axis], d = g.dilation[axis];
  for (std::int64_t o = 0; o < g.output[axis]; ++o) {
    const std::int64_t start = o * g.stride[axis] - g.pad_begin[axis];
    std::int64_t first = k, last = 0, padded = 0;
    for (std::int64_t t = 0; t < k; ++t) {
      const std::int64_t pos = start + t * d;
      if (pos >= 0 && pos < in) {
        first = std::min(first, t);
        last = t + 1;
      }
      if (pos >= -g.pad_begin[axis] && pos < in + g.pad_end[axis]) ++padded;
    }
    if (last == 0) first = 0;  // no tap inside: an empty range
    taps.first.push_back(first);
    taps.last.push_back(last);
    taps.padded.push_back(padded);
  }
  return taps;
}

enum class PoolKind { max, average };

// MaxPool: f32, f64 and the 8-bit integers (ONNX's list); AveragePool: f32 and f64.
using MaxPoolDTypes = DTypeList<DType::f32, DType::f64, DType::i8, DType::u8>;
using AveragePoolDTypes = RealDTypes;

class PoolKernel final : public OpKernel {
 public:
  PoolKernel(const KernelSpec& spec, PoolKind kind) : OpKernel(spec), kind_(kind) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 2);
    if (spec.outputs.size() > 1 && spec.outputs[1].present)
      throw_unsupported(spec, "the Indices output (only Y is produced)");
    require_present(spec, 0, "X");
    dtype_ = spec.inputs[0].dtype;
    if (kind_ == PoolKind::max)
      require_dtype_in(spec, dtype_, MaxPoolDTypes::dtypes, "input X");
    else
      require_dtype_in(spec, dtype_, AveragePoolDTypes::dtypes, "input X");
    require_dtype(spec, spec.outputs[0], dtype_, "output Y");
    const Attributes& attrs = spec.node->attrs;
    const Shape& x = spec.inputs[0].shape;
    if (!attrs.has("kernel_shape")) throw_bad_shape(spec, "kernel_shape is required");
    if (x.rank() < 3) throw_bad_shape(spec, "X must be [N, C, spatial...], got " + x.to_string());
    const WindowGeometry window =
        parse_sliding_window(spec, attrs.get_ints("kernel_shape"), x[1], attrs.get_int("ceil_mode", 0) != 0);
    for (std::size_t i = 0; i < window.rank(); ++i) {
      const std::int64_t span = (window.kernel[i] - 1) * window.dilation[i] + 1;
      // A pad as large as the window would allow windows holding only padding.
      if (window.pad_begin[i] >= span || window.pad_end[i] >= span)
        throw_unsupported(spec, "pads must be smaller than the (dilated) kernel_shape");
    }
    count_include_pad_ = attrs.get_int("count_include_pad", 0) != 0;
    geometry_ = window.padded_to(3);
    for (std::size_t i = 0; i < 3; ++i) taps_[i] = axis_taps(geometry_, i);
    planes_ = x[0] * x[1];
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    MaxPoolDTypes::dispatch(dtype_, [&]<class T>(std::type_identity<T>) {
      run_typed(static_cast<const T*>(inputs[0]), static_cast<T*>(outputs[0]));
    });
  }

 private:
  // Window taps worth a thread of their own.
  static constexpr std::int64_t kChunkTaps = std::int64_t{1} << 16;

  // A max pool over rows and columns only, undilated: the max of a window is the max over its rows
  // of each row's max, so each plane is reduced along W into scratch memory, then along H.
  bool separable() const {
    return kind_ == PoolKind::max && geometry_.input[0] == 1 && geometry_.kernel[0] == 1 &&
           geometry_.dilation[1] == 1 && geometry_.dilation[2] == 1;
  }

  template <class T>
  static T lowest() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }

  // Planes are independent: the kernel's threads take runs of them.
  template <class T>
  void run_typed(const T* x, T* y) const {
    const std::int64_t out_size = geometry_.output[0] * geometry_.output[1] * geometry_.output[2];
    const std::int64_t window = geometry_.kernel[0] * geometry_.kernel[1] * geometry_.kernel[2];
    parallel_for(planes_, std::max<std::int64_t>(1, kChunkTaps / std::max<std::int64_t>(out_size * window, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   if (separable())
                     max_rows_then_columns(x, y + begin * out_size, begin, end);
                   else
                     pool_planes(x, y + begin * out_size, begin, end);
                 });
  }

  // The separable max pool of planes [plane_begin, plane_end) into `y` (their first output). The
  // row maxima go to the running thread's scratch: a chunk cannot share the kernel's workspace.
  template <class T>
  void max_rows_then_columns(const T* x, T* y, std::int64_t plane_begin, std::int64_t plane_end) const {
    const auto& in = geometry_.input;
    const auto& out = geometry_.output;
    const std::int64_t plane_in = in[1] * in[2], plane_out = out[1] * out[2];
    T* row_max = static_cast<T*>(thread_scratch(static_cast<std::size_t>(in[1] * out[2]) * sizeof(T)));
    for (std::int64_t plane = plane_begin; plane < plane_end; ++plane) {
      const T* src = x + plane * plane_in;
      for (std::int64_t ih = 0; ih < in[1]; ++ih)
        for (std::int64_t ow = 0; ow < out[2]; ++ow) {
          const T* row = src + ih * in[2] + ow * geometry_.stride[2] - geometry_.pad_begin[2];
          T max = lowest<T>();
          for (std::int64_t tw = taps_[2].first[ow]; tw < taps_[2].last[ow]; ++tw) max = std::max(max, row[tw]);
          row_max[ih * out[2] + ow] = max;
        }
      T* dst = y + (plane - plane_begin) * plane_out;
      for (std::int64_t oh = 0; oh < out[1]; ++oh) {
        T* out_row = dst + oh * out[2];
        std::fill(out_row, out_row + out[2], lowest<T>());
        const std::int64_t start = oh * geometry_.stride[1] - geometry_.pad_begin[1];
        for (std::int64_t th = taps_[1].first[oh]; th < taps_[1].last[oh]; ++th) {
          const T* in_row = row_max + (start + th) * out[2];
          for (std::int64_t ow = 0; ow < out[2]; ++ow) out_row[ow] = std::max(out_row[ow], in_row[ow]);
        }
      }
    }
  }

  // Planes [plane_begin, plane_end) into `y` (their first output). The maximum in T; the average
  // sums in float (f32) or double (f64).
  template <class T>
  void pool_planes(const T* x, T* y, std::int64_t plane_begin, std::int64_t plane_end) const {
    using Sum = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const auto& in = geometry_.input;
    const auto& out = geometry_.output;
    const auto& s = geometry_.stride;
    const auto& d = geometry_.dilation;
    const auto& p = geometry_.pad_begin;
    const std::int64_t in_size = in[0] * in[1] * in[2];
    for (std::int64_t plane = plane_begin; plane < plane_end; ++plane) {
      const T* src = x + plane * in_size;
      for (std::int64_t od = 0; od < out[0]; ++od)
        for (std::int64_t oh = 0; oh < out[1]; ++oh)
          for (std::int64_t ow = 0; ow < out[2]; ++ow) {
            const std::int64_t o[3] = {od, oh, ow};
            std::int64_t first[3], last[3], start[3];
            std::int64_t inside = 1, padded = 1;
            for (int a = 0; a < 3; ++a) {
              first[a] = taps_[a].first[o[a]];
              last[a] = taps_[a].last[o[a]];
              start[a] = o[a] * s[a] - p[a];
              inside *= last[a] - first[a];
              padded *= taps_[a].padded[o[a]];
            }
            T max = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                         : std::numeric_limits<T>::lowest();
            Sum sum = 0;
            for (std::int64_t td = first[0]; td < last[0]; ++td)
              for (std::int64_t th = first[1]; th < last[1]; ++th) {
                const std::int64_t row = ((start[0] + td * d[0]) * in[1] + start[1] + th * d[1]) * in[2];
                for (std::int64_t tw = first[2]; tw < last[2]; ++tw) {
                  const T v = src[row + start[2] + tw * d[2]];
                  max = std::max(max, v);
                  sum += static_cast<Sum>(v);
                }
              }
            T result = max;
            if (kind_ == PoolKind::average) {
              const std::int64_t count = count_include_pad_ ? padded : inside;
              result = static_cast<T>(count > 0 ? sum / static_cast<Sum>(count) : Sum{0});
            }
            *y++ = result;
          }
    }
  }

  PoolKind kind_;
  DType dtype_ = DType::f32;
  bool count_include_pad_ = false;
  std::int64_t planes_ = 0;
  WindowGeometry geometry_;  // always 3 axes
  AxisTaps taps_[3];
};

class GlobalPoolKernel final : public OpKernel {
 public:
  GlobalPoolKernel(const KernelSpec& spec, PoolKind kind) : OpKernel(spec), kind_(kind) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    if (x.rank() < 3) throw_bad_shape(spec, "X must have rank >= 3, got " + x.to_string());
    std::vector<std::int64_t> expected(x.rank(), 1);
    expected[0] = x[0];
    expected[1] = x[1];
    require_shape(spec, spec.outputs[0].shape, Shape(expected), "output Y");
    planes_ = x[0] * x[1];
    plane_size_ = product(x.dims(), 2, x.rank());
    if (plane_size_ == 0) throw_bad_shape(spec, "empty spatial dims in X " + x.to_string());
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    for (std::int64_t plane = 0; plane < planes_; ++plane) {
      const float* in = x + plane * plane_size_;
      if (kind_ == PoolKind::max) {
        y[plane] = *std::max_element(in, in + plane_size_);
        continue;
      }
      float sum = 0.0f;
      for (std::int64_t i = 0; i < plane_size_; ++i) sum += in[i];
      y[plane] = sum / static_cast<float>(plane_size_);
    }
  }

 private:
  PoolKind kind_;
  std::int64_t planes_ = 0;
  std::int64_t plane_size_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_max_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<PoolKernel>(spec, PoolKind::max);
}
std::unique_ptr<OpKernel> make_average_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<PoolKernel>(spec, PoolKind::average);
}
std::unique_ptr<OpKernel> make_global_average_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<GlobalPoolKernel>(spec, PoolKind::average);
}
std::unique_ptr<OpKernel> make_global_max_pool_kernel(const KernelSpec& spec) {
  return std::make_unique<GlobalPoolKernel>(spec, PoolKind::max);
}

}  // namespace loom::backend::cpu
