// Convolution (ONNX Conv, 1-D to 3-D, groups, dilations, auto_pad) and ConvTranspose.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.hpp"
#include "backend/conv_spec.hpp"
#include "backend/cpu/epilogue.hpp"

namespace loom::backend::cpu {

// A Conv node's checked shapes and window: X [N, C, spatial...], W [M, C/group, kernel...], an
// optional bias B [M], f32. Throws Error naming the node otherwise. Every Conv kernel starts here.
struct ConvGeometry {
  std::int64_t batch = 0, in_channels = 0, out_channels = 0, group = 1;
  WindowGeometry window;  // one axis per spatial axis of X
  bool has_bias = false;
};
ConvGeometry parse_conv(const KernelSpec& spec);
// The checks Conv and ConvTranspose share: X, W and an optional B, one output, f32, and X and W of
// one rank of at least 3; `weights_layout` names W's dims for the error ("[M, C/group, kernel...]").
void require_conv_operands(const KernelSpec& spec, const char* weights_layout);

// The registry's Conv: oneDNN's convolution where the build has it and the library takes the
// conv (dnnl/dnnl_kernels.hpp), else our own im2col kernel.
std::unique_ptr<OpKernel> make_conv_kernel(const KernelSpec& spec);
// The same for a fusion's chain (fusion.hpp): `fused` null computes the Conv alone.
std::unique_ptr<OpKernel> make_fused_conv_kernel(const KernelSpec& spec, const FusedRun* fused);
// Our own im2col + packed GEMM convolution: any group, dilation and rank; the fallback, and the
// reference the library's kernel is tested against.
std::unique_ptr<OpKernel> make_im2col_conv_kernel(const KernelSpec& spec, const FusedRun* fused = nullptr);
// conv_transpose.cpp
std::unique_ptr<OpKernel> make_conv_transpose_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
