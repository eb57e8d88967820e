// Conv (1-D to 3-D, NCW / NCHW / NCDHW) as im2col + GEMM: for each image and group, the receptive
// fields are unrolled into a [C/group * prod(kernel), prod(output)] matrix and multiplied by the
// group's filters [M/group, C/group * prod(kernel)], which writes the output channels in order
// directly. A 1x1, stride-1, unpadded conv skips the unroll: the input already is that matrix.
#include "backend/cpu/conv.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cpu/dnnl/dnnl_kernels.hpp"
#include "backend/cpu/epilogue.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {

void require_conv_operands(const KernelSpec& spec, const char* weights_layout) {
  require_input_count(spec, 2, 3);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "X");
  require_present(spec, 1, "W");
  require_f32(spec);
  const Shape& x = spec.inputs[0].shape;
  const Shape& w = spec.inputs[1].shape;
  if (x.rank() < 3 || w.rank() != x.rank())
    throw_bad_shape(spec, "X " + x.to_string() + " and W " + w.to_string() + " must be [N, C, spatial...] and " +
                              weights_layout + " of the same rank");
}

ConvGeometry parse_conv(const KernelSpec& spec) {
  require_conv_operands(spec, "[M, C/group, kernel...]");
  const Shape& x = spec.inputs[0].shape;
  const Shape& w = spec.inputs[1].shape;
  ConvGeometry conv;
  conv.batch = x[0];
  conv.in_channels = x[1];
  conv.out_channels = w[0];
  conv.group = spec.node->attrs.get_int("group", 1);
  if (conv.group < 1 || conv.in_channels % conv.group != 0 || conv.out_channels % conv.group != 0)
    throw_bad_shape(spec, "group " + std::to_string(conv.group) + " does not divide channels " +
                              std::to_string(conv.in_channels) + " -> " + std::to_string(conv.out_channels));
  if (w[1] * conv.group != conv.in_channels)
    throw_bad_shape(spec, "W " + w.to_string() + " does not match X " + x.to_string() + " with group " +
                              std::to_string(conv.group));
  conv.window = parse_sliding_window(spec, {w.dims().begin() + 2, w.dims().end()}, conv.out_channels, false);
  conv.has_bias = spec.inputs.size() == 3 && spec.inputs[2].present;
  if (conv.has_bias) require_shape(spec, spec.inputs[2].shape, Shape{conv.out_channels}, "bias B");
  return conv;
}

namespace {

// Matrix (or output) floats below which unrolling (or the bias fill) stays on one thread.
constexpr std::int64_t kUnrollChunkFloats = std::int64_t{1} << 15;

class ConvKernel final : public OpKernel {
 public:
  ConvKernel(const KernelSpec& spec, const FusedRun* fused) : OpKernel(run_spec(spec, fused)) {
    const ConvGeometry conv = parse_conv(spec);
    batch_ = conv.batch;
    in_channels_ = conv.in_channels;
    out_channels_ = conv.out_channels;
    group_ = conv.group;
    // Every window is handled as 3-D: a 1-D or 2-D one gets leading unit axes.
    geometry_ = conv.window.padded_to(3);
    has_bias_ = conv.has_bias;

    group_in_ = in_channels_ / group_;
    group_out_ = out_channels_ / group_;
    in_pixels_ = product(geometry_.input, 0, 3);
    patch_ = group_in_ * product(geometry_.kernel, 0, 3);
    pixels_ = product(geometry_.output, 0, 3);
    if (fused) {
      fused_ = *fused;
      plan_epilogue(spec, fused_->epilogue, spec.outputs[0].shape);
    }
    output_shape_ = spec.outputs[0].shape;
    direct_ = true;
    for (std::size_t i = 0; i < 3; ++i)
      direct_ = direct_ && geometry_.kernel[i] == 1 && geometry_.stride[i] == 1 && geometry_.pad_begin[i] == 0 &&
                geometry_.pad_end[i] == 0;
  }

  std::size_t workspace_bytes() const override {
    const std::size_t columns = direct_ ? 0 : column_bytes();
    return columns + gemm_workspace_bytes(group_out_, pixels_, patch_);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* w = static_cast<const float*>(inputs[1]);
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[fused_ ? fused_->output_slot : 0]);
    float* columns = static_cast<float*>(workspace);
    void* gemm_workspace = static_cast<char*>(workspace) + (direct_ ? 0 : column_bytes());

    for (std::int64_t n = 0; n < batch_; ++n) {
      for (std::int64_t g = 0; g < group_; ++g) {
        const float* image = x + (n * in_channels_ + g * group_in_) * in_pixels_;
        float* out = y + (n * out_channels_ + g * group_out_) * pixels_;
        const float* filters = w + g * group_out_ * patch_;
        const float* matrix = image;
        if (!direct_) {
          unroll_patches(image, columns);
          matrix = columns;
        }
        float beta = 0.0f;
        if (bias) {
          // The bias pre-fills each output plane; the GEMM then accumulates onto it.
          parallel_for(group_out_, std::max<std::int64_t>(1, kUnrollChunkFloats / pixels_),
                       [&](std::int64_t begin, std::int64_t end) {
                         for (std::int64_t oc = begin; oc < end; ++oc)
                           std::fill(out + oc * pixels_, out + (oc + 1) * pixels_, bias[g * group_out_ + oc]);
                       });
          beta = 1.0f;
        }
        gemm(group_out_, pixels_, patch_, 1.0f, row_major(filters, patch_), row_major(matrix, pixels_), beta, out,
             pixels_, gemm_workspace);
      }
    }
    if (fused_) apply_epilogue(fused_->epilogue, 0, output_shape_, y, inputs);
  }

 private:
  // The im2col matrix, rounded to 64 bytes so the GEMM's scratch after it starts aligned.
  std::size_t column_bytes() const {
    return static_cast<std::size_t>(round_up(patch_ * pixels_ * static_cast<std::int64_t>(sizeof(float)), 64));
  }

  // im2col for one image and group: row (c, kd, kh, kw), column (od, oh, ow) holds the input
  // element that filter tap sees at that output position, or 0 in the padding. Channels are
  // unrolled by the kernel's threads, each writing its own rows.
  void unroll_patches(const float* image, float* columns) const {
    const std::int64_t channel_floats = product(geometry_.kernel, 0, 3) * pixels_;
    parallel_for(group_in_, std::max<std::int64_t>(1, kUnrollChunkFloats / channel_floats),
                 [&](std::int64_t begin, std::int64_t end) { unroll_channels(image, columns, begin, end); });
  }

  // Rows of channels [c_begin, c_end).
  void unroll_channels(const float* image, float* columns, std::int64_t c_begin, std::int64_t c_end) const {
    const auto& in = geometry_.input;
    const auto& out = geometry_.output;
    const auto& k = geometry_.kernel;
    const auto& s = geometry_.stride;
    const auto& d = geometry_.dilation;
    const auto& p = geometry_.pad_begin;
    const std::int64_t plane_out = out[1] * out[2];
    float* row = columns + c_begin * product(k, 0, 3) * pixels_;
    for (std::int64_t c = c_begin; c < c_end; ++c) {
      const float* volume = image + c * in_pixels_;
      for (std::int64_t kd = 0; kd < k[0]; ++kd) {
        for (std::int64_t kh = 0; kh < k[1]; ++kh) {
          for (std::int64_t kw = 0; kw < k[2]; ++kw, row += pixels_) {
            const std::int64_t col_offset = kw * d[2] - p[2];
            // Output columns whose input column lies inside the image: [ow_begin, ow_end).
            const std::int64_t ow_begin = std::clamp<std::int64_t>(ceil_div(-col_offset, s[2]), 0, out[2]);
            const std::int64_t ow_end = std::clamp<std::int64_t>(ceil_div(in[2] - col_offset, s[2]), ow_begin, out[2]);
            for (std::int64_t od = 0; od < out[0]; ++od) {
              float* slab = row + od * plane_out;
              const std::int64_t id = od * s[0] + kd * d[0] - p[0];
              if (id < 0 || id >= in[0]) {
                std::fill(slab, slab + plane_out, 0.0f);
                continue;
              }
              const float* plane = volume + id * in[1] * in[2];
              for (std::int64_t oh = 0; oh < out[1]; ++oh) {
                float* dst = slab + oh * out[2];
                const std::int64_t ih = oh * s[1] + kh * d[1] - p[1];
                if (ih < 0 || ih >= in[1]) {
                  std::fill(dst, dst + out[2], 0.0f);
                  continue;
                }
                const float* in_row = plane + ih * in[2];
                std::fill(dst, dst + ow_begin, 0.0f);
                if (s[2] == 1) {
                  std::memcpy(dst + ow_begin, in_row + ow_begin + col_offset,
                              static_cast<std::size_t>(ow_end - ow_begin) * sizeof(float));
                } else {
                  for (std::int64_t ow = ow_begin; ow < ow_end; ++ow) dst[ow] = in_row[ow * s[2] + col_offset];
                }
                std::fill(dst + ow_end, dst + out[2], 0.0f);
              }
            }
          }
        }
      }
    }
  }

  // Ceiling of a / b for b > 0 and any sign of a.
  static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

  WindowGeometry geometry_;  // always 3 axes
  std::int64_t batch_ = 0, in_channels_ = 0, out_channels_ = 0;
  std::int64_t group_ = 1, group_in_ = 0, group_out_ = 0;
  std::int64_t in_pixels_ = 0, patch_ = 0, pixels_ = 0;
  bool has_bias_ = false;
  bool direct_ = false;
  Shape output_shape_;
  std::optional<FusedRun> fused_;  // computing a fusion's chain (fusion.hpp)
};

}  // namespace

std::unique_ptr<OpKernel> make_im2col_conv_kernel(const KernelSpec& spec, const FusedRun* fused) {
  return std::make_unique<ConvKernel>(spec, fused);
}

std::unique_ptr<OpKernel> make_fused_conv_kernel(const KernelSpec& spec, const FusedRun* fused) {
  if (auto library = make_dnnl_conv_kernel(spec, fused)) return library;
  return make_im2col_conv_kernel(spec, fused);
}

std::unique_ptr<OpKernel> make_conv_kernel(const KernelSpec& spec) { return make_fused_conv_kernel(spec, nullptr); }

}  // namespace loom::backend::cpu
