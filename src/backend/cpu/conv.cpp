// Conv as im2col + GEMM: for each image and group, the receptive fields are unrolled into a
// [C/group * kH * kW, oH * oW] matrix and multiplied by the group's filters [M/group, C/group *
// kH * kW], which writes the output channels in NCHW order directly. A 1x1, stride-1, unpadded
// conv skips the unroll: the input already is that matrix.
#include "backend/cpu/conv.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"

namespace loom::backend::cpu {
namespace {

std::vector<std::int64_t> ints_or(const KernelSpec& spec, const char* name, std::size_t count,
                                  std::int64_t fallback) {
  std::vector<std::int64_t> values = spec.node->attrs.get_ints(name, std::vector<std::int64_t>(count, fallback));
  if (values.size() != count)
    throw_unsupported(spec, std::string(name) + " has " + std::to_string(values.size()) + " values, expects " +
                                std::to_string(count) + " (2-D conv only)");
  return values;
}

class ConvKernel final : public OpKernel {
 public:
  explicit ConvKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 3);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_present(spec, 1, "W");
    require_f32(spec);
    const Attributes& attrs = spec.node->attrs;
    const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET") throw_unsupported(spec, "auto_pad='" + auto_pad + "' (only NOTSET; give explicit pads)");

    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    if (x.rank() != 4 || w.rank() != 4)
      throw_unsupported(spec, "only 2-D conv (X and W rank 4), got X " + x.to_string() + ", W " + w.to_string());
    batch_ = x[0];
    in_channels_ = x[1];
    in_h_ = x[2];
    in_w_ = x[3];
    out_channels_ = w[0];
    kernel_h_ = w[2];
    kernel_w_ = w[3];
    group_ = attrs.get_int("group", 1);
    if (group_ < 1 || in_channels_ % group_ != 0 || out_channels_ % group_ != 0)
      throw_bad_shape(spec, "group " + std::to_string(group_) + " does not divide channels " +
                                std::to_string(in_channels_) + " -> " + std::to_string(out_channels_));
    if (w[1] * group_ != in_channels_)
      throw_bad_shape(spec, "W " + w.to_string() + " does not match X " + x.to_string() + " with group " +
                                std::to_string(group_));
    if (attrs.has("kernel_shape")) {
      const auto kernel_shape = ints_or(spec, "kernel_shape", 2, 1);
      if (kernel_shape[0] != kernel_h_ || kernel_shape[1] != kernel_w_)
        throw_bad_shape(spec, "kernel_shape does not match W " + w.to_string());
    }
    const auto strides = ints_or(spec, "strides", 2, 1);
    const auto dilations = ints_or(spec, "dilations", 2, 1);
    const auto pads = ints_or(spec, "pads", 4, 0);
    stride_h_ = strides[0];
    stride_w_ = strides[1];
    dilation_h_ = dilations[0];
    dilation_w_ = dilations[1];
    pad_top_ = pads[0];
    pad_left_ = pads[1];
    if (stride_h_ < 1 || stride_w_ < 1 || dilation_h_ < 1 || dilation_w_ < 1 ||
        std::any_of(pads.begin(), pads.end(), [](std::int64_t p) { return p < 0; }))
      throw_unsupported(spec, "strides and dilations must be >= 1 and pads >= 0");
    const std::int64_t span_h = (kernel_h_ - 1) * dilation_h_ + 1;
    const std::int64_t span_w = (kernel_w_ - 1) * dilation_w_ + 1;
    out_h_ = (in_h_ + pads[0] + pads[2] - span_h) / stride_h_ + 1;
    out_w_ = (in_w_ + pads[1] + pads[3] - span_w) / stride_w_ + 1;
    if (in_h_ + pads[0] + pads[2] < span_h || in_w_ + pads[1] + pads[3] < span_w)
      throw_bad_shape(spec, "kernel larger than the padded input");
    require_shape(spec, spec.outputs[0].shape, Shape{batch_, out_channels_, out_h_, out_w_}, "output Y");

    has_bias_ = spec.inputs.size() == 3 && spec.inputs[2].present;
    if (has_bias_) require_shape(spec, spec.inputs[2].shape, Shape{out_channels_}, "bias B");

    group_in_ = in_channels_ / group_;
    group_out_ = out_channels_ / group_;
    patch_ = group_in_ * kernel_h_ * kernel_w_;
    pixels_ = out_h_ * out_w_;
    direct_ = kernel_h_ == 1 && kernel_w_ == 1 && stride_h_ == 1 && stride_w_ == 1 &&
              std::all_of(pads.begin(), pads.end(), [](std::int64_t p) { return p == 0; });
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
    float* y = static_cast<float*>(outputs[0]);
    float* columns = static_cast<float*>(workspace);
    void* gemm_workspace = static_cast<char*>(workspace) + (direct_ ? 0 : column_bytes());

    for (std::int64_t n = 0; n < batch_; ++n) {
      for (std::int64_t g = 0; g < group_; ++g) {
        const float* image = x + (n * in_channels_ + g * group_in_) * in_h_ * in_w_;
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
          for (std::int64_t oc = 0; oc < group_out_; ++oc)
            std::fill(out + oc * pixels_, out + (oc + 1) * pixels_, bias[g * group_out_ + oc]);
          beta = 1.0f;
        }
        gemm(group_out_, pixels_, patch_, 1.0f, row_major(filters, patch_), row_major(matrix, pixels_), beta, out,
             pixels_, gemm_workspace);
      }
    }
  }

 private:
  // The im2col matrix, rounded to 64 bytes so the GEMM's scratch after it starts aligned.
  std::size_t column_bytes() const {
    return static_cast<std::size_t>(round_up(patch_ * pixels_ * static_cast<std::int64_t>(sizeof(float)), 64));
  }

  // im2col for one image and group: row (c, kh, kw), column (oh, ow) holds the input pixel that
  // filter tap sees at that output position, or 0 in the padding.
  void unroll_patches(const float* image, float* columns) const {
    for (std::int64_t c = 0; c < group_in_; ++c) {
      const float* plane = image + c * in_h_ * in_w_;
      for (std::int64_t kh = 0; kh < kernel_h_; ++kh) {
        for (std::int64_t kw = 0; kw < kernel_w_; ++kw) {
          float* row = columns + ((c * kernel_h_ + kh) * kernel_w_ + kw) * pixels_;
          const std::int64_t col_offset = kw * dilation_w_ - pad_left_;
          // Output columns whose input column lies inside the image: [ow_begin, ow_end).
          const std::int64_t ow_begin = std::clamp<std::int64_t>(ceil_div(-col_offset, stride_w_), 0, out_w_);
          const std::int64_t ow_end =
              std::clamp<std::int64_t>(ceil_div(in_w_ - col_offset, stride_w_), ow_begin, out_w_);
          for (std::int64_t oh = 0; oh < out_h_; ++oh) {
            float* out = row + oh * out_w_;
            const std::int64_t ih = oh * stride_h_ + kh * dilation_h_ - pad_top_;
            if (ih < 0 || ih >= in_h_) {
              std::fill(out, out + out_w_, 0.0f);
              continue;
            }
            const float* in_row = plane + ih * in_w_;
            std::fill(out, out + ow_begin, 0.0f);
            if (stride_w_ == 1) {
              std::memcpy(out + ow_begin, in_row + ow_begin + col_offset,
                          static_cast<std::size_t>(ow_end - ow_begin) * sizeof(float));
            } else {
              for (std::int64_t ow = ow_begin; ow < ow_end; ++ow) out[ow] = in_row[ow * stride_w_ + col_offset];
            }
            std::fill(out + ow_end, out + out_w_, 0.0f);
          }
        }
      }
    }
  }

  // Ceiling of a / b for b > 0 and any sign of a.
  static std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

  std::int64_t batch_ = 0, in_channels_ = 0, in_h_ = 0, in_w_ = 0;
  std::int64_t out_channels_ = 0, out_h_ = 0, out_w_ = 0;
  std::int64_t kernel_h_ = 0, kernel_w_ = 0;
  std::int64_t stride_h_ = 1, stride_w_ = 1, dilation_h_ = 1, dilation_w_ = 1;
  std::int64_t pad_top_ = 0, pad_left_ = 0;
  std::int64_t group_ = 1, group_in_ = 0, group_out_ = 0;
  std::int64_t patch_ = 0, pixels_ = 0;
  bool has_bias_ = false;
  bool direct_ = false;
};

}  // namespace

std::unique_ptr<OpKernel> make_conv_kernel(const KernelSpec& spec) { return std::make_unique<ConvKernel>(spec); }

}  // namespace loom::backend::cpu
