// ConvTranspose (1-D to 3-D) as GEMM + col2im: for each image and group, every input pixel's
// contribution to every filter tap is one GEMM, [M/group * prod(kernel), C/group] (the group's
// filters, transposed) times [C/group, prod(input)]; col2im then adds each tap's row into the
// output at x * stride + k * dilation - pad_begin, skipping positions outside it.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cpu/conv.hpp"
#include "backend/cpu/gemm.hpp"
#include "backend/cpu/kernel_support.hpp"

namespace loom::backend::cpu {
namespace {

class ConvTransposeKernel final : public OpKernel {
 public:
  explicit ConvTransposeKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_conv_operands(spec, "[C, M/group, kernel...]");
    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    batch_ = x[0];
    in_channels_ = x[1];
    group_ = spec.node->attrs.get_int("group", 1);
    if (group_ < 1 || in_channels_ % group_ != 0 || w[0] != in_channels_)
      throw_bad_shape(
          spec, "W " + w.to_string() + " does not fit X " + x.to_string() + " with group " + std::to_string(group_));
    group_in_ = in_channels_ / group_;
    group_out_ = w[1];
    out_channels_ = group_out_ * group_;
    geometry_ = parse_transposed_window(spec, {w.dims().begin() + 2, w.dims().end()}, out_channels_).padded_to(3);
    has_bias_ = spec.inputs.size() == 3 && spec.inputs[2].present;
    if (has_bias_) require_shape(spec, spec.inputs[2].shape, Shape{out_channels_}, "bias B");
    in_pixels_ = product(geometry_.input, 0, 3);
    out_pixels_ = product(geometry_.output, 0, 3);
    taps_ = product(geometry_.kernel, 0, 3);
  }

  std::size_t workspace_bytes() const override {
    return column_bytes() + gemm_workspace_bytes(rows(), in_pixels_, group_in_);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    const float* w = static_cast<const float*>(inputs[1]);
    const float* bias = has_bias_ ? static_cast<const float*>(inputs[2]) : nullptr;
    float* y = static_cast<float*>(outputs[0]);
    float* columns = static_cast<float*>(workspace);
    void* gemm_workspace = static_cast<char*>(workspace) + column_bytes();
    for (std::int64_t n = 0; n < batch_; ++n) {
      for (std::int64_t g = 0; g < group_; ++g) {
        const float* image = x + (n * in_channels_ + g * group_in_) * in_pixels_;
        const float* filters = w + g * group_in_ * rows();  // [C/group, M/group * taps]
        gemm(rows(), in_pixels_, group_in_, 1.0f, transposed(filters, rows()), row_major(image, in_pixels_), 0.0f,
             columns, in_pixels_, gemm_workspace);
        float* out = y + (n * out_channels_ + g * group_out_) * out_pixels_;
        for (std::int64_t oc = 0; oc < group_out_; ++oc) {
          float* plane = out + oc * out_pixels_;
          std::fill(plane, plane + out_pixels_, bias ? bias[g * group_out_ + oc] : 0.0f);
          add_taps(columns + oc * taps_ * in_pixels_, plane);
        }
      }
    }
  }

 private:
  std::int64_t rows() const { return group_out_ * taps_; }
  std::size_t column_bytes() const {
    return static_cast<std::size_t>(round_up(rows() * in_pixels_ * static_cast<std::int64_t>(sizeof(float)), 64));
  }

  // col2im for one output channel: `columns` holds [taps, input pixels].
  void add_taps(const float* columns, float* plane) const {
    const auto& in = geometry_.input;
    const auto& out = geometry_.output;
    const auto& k = geometry_.kernel;
    const auto& s = geometry_.stride;
    const auto& d = geometry_.dilation;
    const auto& p = geometry_.pad_begin;
    const float* row = columns;
    for (std::int64_t kd = 0; kd < k[0]; ++kd)
      for (std::int64_t kh = 0; kh < k[1]; ++kh)
        for (std::int64_t kw = 0; kw < k[2]; ++kw, row += in_pixels_)
          for (std::int64_t id = 0; id < in[0]; ++id) {
            const std::int64_t od = id * s[0] + kd * d[0] - p[0];
            if (od < 0 || od >= out[0]) continue;
            for (std::int64_t ih = 0; ih < in[1]; ++ih) {
              const std::int64_t oh = ih * s[1] + kh * d[1] - p[1];
              if (oh < 0 || oh >= out[1]) continue;
              const float* src = row + (id * in[1] + ih) * in[2];
              float* dst = plane + (od * out[1] + oh) * out[2];
              for (std::int64_t iw = 0; iw < in[2]; ++iw) {
                const std::int64_t ow = iw * s[2] + kw * d[2] - p[2];
                if (ow >= 0 && ow < out[2]) dst[ow] += src[iw];
              }
            }
          }
  }

  WindowGeometry geometry_;  // always 3 axes
  std::int64_t batch_ = 0, in_channels_ = 0, out_channels_ = 0;
  std::int64_t group_ = 1, group_in_ = 0, group_out_ = 0;
  std::int64_t in_pixels_ = 0, out_pixels_ = 0, taps_ = 0;
  bool has_bias_ = false;
};

}  // namespace

std::unique_ptr<OpKernel> make_conv_transpose_kernel(const KernelSpec& spec) {
  return std::make_unique<ConvTransposeKernel>(spec);
}

}  // namespace loom::backend::cpu
