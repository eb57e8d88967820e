// Window geometry of the sliding-window ops (Conv, ConvTranspose, MaxPool, AveragePool) from their
// ONNX attributes: auto_pad resolved into explicit pads and the output extents computed. Shape
// inference and every backend's kernels use the same functions, so they agree on the shapes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

// Spatial ranks the kernels handle (1-D, 2-D, 3-D).
inline constexpr std::size_t kMaxWindowRank = 3;

// One entry per spatial axis of an [N, C, spatial...] tensor.
struct WindowGeometry {
  std::vector<std::int64_t> input, output, kernel, stride, dilation, pad_begin, pad_end;
  std::size_t rank() const noexcept { return input.size(); }
  // The same geometry with leading unit axes added until it has `rank` axes (a 1-D window seen as
  // a 2-D one with H = 1), for kernels written for a fixed rank.
  WindowGeometry padded_to(std::size_t rank) const;
};

// Conv and pooling: output = floor (or, with ceil_mode, ceil) of (input + pads - dilated kernel) /
// stride + 1, pads from `pads` or from auto_pad (SAME_UPPER / SAME_LOWER: output = ceil(input /
// stride), the odd pad at the end / the beginning; VALID: no pads). `kernel` comes from W (Conv)
// or kernel_shape (pooling); a kernel_shape attribute must agree with it. With ceil_mode a last
// window that would start in the end padding is dropped (ONNX, PyTorch). Throws Error
// (shape_mismatch or unsupported) with a message about the attributes.
WindowGeometry sliding_window(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& kernel,
                              bool ceil_mode);

// ConvTranspose: output = stride * (input - 1) + output_padding + dilated kernel - pads, or
// output_shape. SAME_* derive the pads from output_shape (default input * stride) as the ONNX spec
// says (SAME_UPPER puts the odd pad at the end). With output_shape and NOTSET the output starts at
// pads_begin (default 0) of the full result and is cut or zero-extended at the end, as in the ONNX
// reference; pad_end is then whatever makes the extents add up (negative when extended). Output
// position of input x and tap k: x * stride + k * dilation - pad_begin.
WindowGeometry transposed_window(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>& kernel);

// MaxUnpool: the output shape of X [N, C, spatial...] — `output_shape` (the whole shape) when given,
// else N, C and (input - 1) * stride + kernel - pad_begin - pad_end per spatial axis
// (kernel_shape required; strides default 1, pads 0). Throws Error(invalid_model).
std::vector<std::int64_t> max_unpool_shape(const Attributes& attrs, const Shape& x,
                                           const std::vector<std::int64_t>* output_shape);

}  // namespace loom::graph
