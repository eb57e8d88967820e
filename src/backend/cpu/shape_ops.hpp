// Shape-family ops beyond layout.hpp, for every dtype: the strided copies (Slice, Expand, Tile),
// Split, GatherElements, GatherND, ScatterElements, ScatterND, Trilu, DepthToSpace,
// SpaceToDepth, OneHot, Compress, ReverseSequence, and the generators (Shape, Size, Constant, ConstantOfShape, Range,
// EyeLike, the windows).
#pragma once

#include <memory>

#include "backend/backend.hpp"

namespace loom::backend::cpu {

// Slice, Expand and Tile: constant starts/ends/axes/steps (Slice); Expand and Tile follow the
// output shape and check it against their constant input when there is one.
std::unique_ptr<OpKernel> make_strided_view_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_split_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_shape_kernel(const KernelSpec& spec);
// Size: the input's element count as an i64 scalar.
std::unique_ptr<OpKernel> make_size_kernel(const KernelSpec& spec);
// GatherElements (index_ops.cpp): any data dtype, i64/i32 indices; an out-of-range index throws.
std::unique_ptr<OpKernel> make_gather_elements_kernel(const KernelSpec& spec);
// GatherND (index_ops.cpp): any data dtype, i64/i32 indices, batch_dims.
std::unique_ptr<OpKernel> make_gather_nd_kernel(const KernelSpec& spec);
// ScatterElements (and its opset 9-10 name Scatter) and ScatterND (index_ops.cpp): any dtype; reduction add/mul/max/min
// in f32, i64, i32.
std::unique_ptr<OpKernel> make_scatter_kernel(const KernelSpec& spec);
// DepthToSpace (DCR, CRD) and SpaceToDepth (index_ops.cpp): any dtype.
std::unique_ptr<OpKernel> make_space_depth_kernel(const KernelSpec& spec);
// OneHot (index_ops.cpp): f32/i64/i32 indices, constant depth, values of any dtype.
std::unique_ptr<OpKernel> make_one_hot_kernel(const KernelSpec& spec);
// EyeLike (index_ops.cpp): any output dtype.
std::unique_ptr<OpKernel> make_eye_like_kernel(const KernelSpec& spec);
// Compress (index_ops.cpp): any dtype; the condition must be a constant.
std::unique_ptr<OpKernel> make_compress_kernel(const KernelSpec& spec);
// ReverseSequence (index_ops.cpp): any dtype; sequence_lens i64, read when it runs.
std::unique_ptr<OpKernel> make_reverse_sequence_kernel(const KernelSpec& spec);
// HannWindow, HammingWindow, BlackmanWindow (index_ops.cpp): periodic; f32, f16, bf16, i64, i32 output.
std::unique_ptr<OpKernel> make_window_kernel(const KernelSpec& spec);
// Trilu (index_ops.cpp): any dtype; the optional k is read when it runs.
std::unique_ptr<OpKernel> make_trilu_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_constant_kernel(const KernelSpec& spec);
std::unique_ptr<OpKernel> make_constant_of_shape_kernel(const KernelSpec& spec);
// Range in f32, i64, i32; start and delta are read when it runs.
std::unique_ptr<OpKernel> make_range_kernel(const KernelSpec& spec);

}  // namespace loom::backend::cpu
