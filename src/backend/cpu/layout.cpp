// Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout, Transpose, Concat and Gather. The views
// are a plain copy (the planner may alias them away; a kernel that gets the same buffer in and out
// does nothing). Transpose is a strided copy, which merges dims that stay adjacent, so common
// permutations become row copies.
#include "backend/cpu/layout.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"
#include "backend/cpu/shape_strided_copy.hpp"
#include "backend/shape_spec.hpp"
#include "graph/ops/shape_geometry.hpp"

namespace loom::backend::cpu {
namespace {

void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0 || dst == src) return;
  std::memmove(dst, src, bytes);
}

void require_same_dtype(const KernelSpec& spec, const TensorDesc& desc, DType dtype, const char* role) {
  if (desc.present && desc.dtype != dtype)
    throw Error(ErrorCode::dtype_mismatch, spec.node->op_type + " node '" + spec.node->name + "': " + role + " is " +
                                               std::string(dtype_name(desc.dtype)) + ", expected " +
                                               std::string(dtype_name(dtype)));
}

// A copy whose output has the input's elements in the same order: only the shape changes.
class CopyKernel final : public OpKernel {
 public:
  CopyKernel(const KernelSpec& spec, std::size_t bytes) : OpKernel(spec), bytes_(bytes) {}

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    copy_bytes(outputs[0], inputs[0], bytes_);
  }

 private:
  std::size_t bytes_;
};

std::unique_ptr<OpKernel> make_reshape(const KernelSpec& spec) {
  require_input_count(spec, 2, 2);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "data");
  require_present(spec, 1, "shape");
  const TensorDesc& data = spec.inputs[0];
  const TensorDesc& out = spec.outputs[0];
  require_same_dtype(spec, out, data.dtype, "output reshaped");
  require_dtype(spec, spec.inputs[1], DType::i64, "input shape");
  if (out.shape.numel() != data.shape.numel())
    throw_bad_shape(spec, "cannot reshape " + data.shape.to_string() + " to " + out.shape.to_string());
  // When the target shape is known now, check that the planner's output shape follows from it.
  const Tensor* target = spec.constants.size() > 1 ? spec.constants[1] : nullptr;
  if (target) {
    std::vector<std::int64_t> dims(target->values<std::int64_t>().begin(), target->values<std::int64_t>().end());
    require_shape(spec, out.shape,
                  parse_for_node(spec, [&] { return graph::reshaped_shape(spec.node->attrs, data.shape, dims); }),
                  "output reshaped");
  }
  return std::make_unique<CopyKernel>(spec, static_cast<std::size_t>(data.shape.numel()) * dtype_size(data.dtype));
}

std::unique_ptr<OpKernel> make_flatten(const KernelSpec& spec) {
  require_input_count(spec, 1, 1);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "input");
  const TensorDesc& in = spec.inputs[0];
  require_same_dtype(spec, spec.outputs[0], in.dtype, "output");
  const auto rank = static_cast<std::int64_t>(in.shape.rank());
  std::int64_t axis = spec.node->attrs.get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    throw_bad_shape(spec, "axis " + std::to_string(spec.node->attrs.get_int("axis", 1)) + " is out of range for rank " +
                              std::to_string(rank));
  const auto split = static_cast<std::size_t>(axis);
  const Shape expected{product(in.shape.dims(), 0, split), product(in.shape.dims(), split, in.shape.rank())};
  require_shape(spec, spec.outputs[0].shape, expected, "output");
  return std::make_unique<CopyKernel>(spec, static_cast<std::size_t>(in.shape.numel()) * dtype_size(in.dtype));
}

// Squeeze, Unsqueeze and Identity: the planner fixed the output shape from the axes, so the bytes
// only need to be the input's.
std::unique_ptr<OpKernel> make_same_bytes(const KernelSpec& spec, std::size_t max_inputs) {
  require_input_count(spec, 1, max_inputs);
  require_output_count(spec, 1, 1);
  require_present(spec, 0, "data");
  const TensorDesc& in = spec.inputs[0];
  require_same_dtype(spec, spec.outputs[0], in.dtype, "output");
  if (spec.outputs[0].shape.numel() != in.shape.numel())
    throw_bad_shape(
        spec, "output " + spec.outputs[0].shape.to_string() + " does not hold the elements of " + in.shape.to_string());
  return std::make_unique<CopyKernel>(spec, static_cast<std::size_t>(in.shape.numel()) * dtype_size(in.dtype));
}

// Dropout at inference: the output is the input and the optional mask is all true.
class DropoutKernel final : public OpKernel {
 public:
  explicit DropoutKernel(const KernelSpec& spec) : OpKernel(spec) {
    check_dropout(spec);
    const TensorDesc& in = spec.inputs[0];
    count_ = static_cast<std::size_t>(in.shape.numel());
    bytes_ = count_ * dtype_size(in.dtype);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    copy_bytes(outputs[0], inputs[0], bytes_);
    if (outputs.size() > 1 && outputs[1] && count_ > 0) std::memset(outputs[1], 1, count_);
  }

 private:
  std::size_t count_ = 0, bytes_ = 0;
};

class TransposeKernel final : public OpKernel {
 public:
  explicit TransposeKernel(const KernelSpec& spec) : OpKernel(spec), copy_(make_copy(spec)) {}

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    copy_.run(inputs[0], outputs[0]);
  }

 private:
  static StridedCopy make_copy(const KernelSpec& spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "data");
    const TensorDesc& in = spec.inputs[0];
    require_same_dtype(spec, spec.outputs[0], in.dtype, "output transposed");
    const std::size_t rank = in.shape.rank();
    const std::vector<std::int64_t> perm =
        parse_for_node(spec, [&] { return graph::transpose_perm(spec.node->attrs, rank); });
    const std::vector<std::int64_t> in_strides = dense_strides(in.shape);
    std::vector<std::int64_t> out_dims(rank), src_strides(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      out_dims[d] = in.shape[perm[d]];
      src_strides[d] = in_strides[perm[d]];
    }
    require_shape(spec, spec.outputs[0].shape, Shape(out_dims), "output transposed");
    return StridedCopy(out_dims, src_strides, dtype_size(in.dtype));
  }

  StridedCopy copy_;
};

class ConcatKernel final : public OpKernel {
 public:
  explicit ConcatKernel(const KernelSpec& spec) : OpKernel(spec) {
    if (spec.inputs.empty()) throw_bad_shape(spec, "needs at least one input");
    require_output_count(spec, 1, 1);
    if (!spec.node->attrs.has("axis"))
      throw Error(ErrorCode::invalid_model, "Concat node '" + spec.node->name + "': the axis attribute is required");
    const TensorDesc& first = spec.inputs[0];
    const Shape& out = spec.outputs[0].shape;
    const auto rank = static_cast<std::int64_t>(first.shape.rank());
    if (rank == 0) throw_bad_shape(spec, "inputs must have rank >= 1");
    const auto axis = static_cast<std::size_t>(normalize_axis(spec, spec.node->attrs.get_int("axis", 0), rank));
    const std::size_t element_size = dtype_size(first.dtype);
    std::int64_t total = 0;
    for (std::size_t i = 0; i < spec.inputs.size(); ++i) {
      const TensorDesc& in = spec.inputs[i];
      const std::string role = "input " + std::to_string(i);
      require_present(spec, i, role.c_str());
      require_same_dtype(spec, in, first.dtype, role.c_str());
      if (in.shape.rank() != first.shape.rank()) throw_bad_shape(spec, role + " has a different rank");
      for (std::size_t d = 0; d < in.shape.rank(); ++d)
        if (d != axis && in.shape[d] != first.shape[d])
          throw_bad_shape(spec, role + " " + in.shape.to_string() + " differs from " + first.shape.to_string() +
                                    " outside axis " + std::to_string(axis));
      total += in.shape[axis];
      chunk_bytes_.push_back(static_cast<std::size_t>(product(in.shape.dims(), axis, in.shape.rank())) * element_size);
    }
    std::vector<std::int64_t> expected = first.shape.dims();
    expected[axis] = total;
    require_same_dtype(spec, spec.outputs[0], first.dtype, "output concat_result");
    require_shape(spec, out, Shape(expected), "output concat_result");
    outer_ = product(expected, 0, axis);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    auto* dst = static_cast<std::byte*>(outputs[0]);
    for_each_piece_run(outer_, chunk_bytes_,
                       [&](std::size_t i, std::size_t piece_offset, std::size_t packed_offset, std::size_t bytes) {
                         std::memcpy(dst + packed_offset, static_cast<const std::byte*>(inputs[i]) + piece_offset,
                                     bytes);
                       });
  }

 private:
  std::int64_t outer_ = 0;
  std::vector<std::size_t> chunk_bytes_;  // bytes each input contributes per outer index
};

class GatherKernel final : public OpKernel {
 public:
  explicit GatherKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "data");
    require_present(spec, 1, "indices");
    const TensorDesc& data = spec.inputs[0];
    const TensorDesc& indices = spec.inputs[1];
    index_dtype_ = indices.dtype;
    if (index_dtype_ != DType::i64 && index_dtype_ != DType::i32)
      throw_unsupported(spec, "indices dtype " + std::string(dtype_name(index_dtype_)) + " (expects i64 or i32)");
    require_same_dtype(spec, spec.outputs[0], data.dtype, "output");
    const auto rank = static_cast<std::int64_t>(data.shape.rank());
    if (rank == 0) throw_bad_shape(spec, "data must have rank >= 1");
    const auto axis = static_cast<std::size_t>(normalize_axis(spec, spec.node->attrs.get_int("axis", 0), rank));
    std::vector<std::int64_t> expected(data.shape.dims().begin(), data.shape.dims().begin() + axis);
    expected.insert(expected.end(), indices.shape.dims().begin(), indices.shape.dims().end());
    expected.insert(expected.end(), data.shape.dims().begin() + axis + 1, data.shape.dims().end());
    require_shape(spec, spec.outputs[0].shape, Shape(expected), "output");
    outer_ = product(data.shape.dims(), 0, axis);
    axis_length_ = data.shape[axis];
    index_count_ = indices.shape.numel();
    slice_bytes_ =
        static_cast<std::size_t>(product(data.shape.dims(), axis + 1, data.shape.rank())) * dtype_size(data.dtype);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    if (index_dtype_ == DType::i64)
      run_typed(static_cast<const std::int64_t*>(inputs[1]), inputs[0], outputs[0]);
    else
      run_typed(static_cast<const std::int32_t*>(inputs[1]), inputs[0], outputs[0]);
  }

 private:
  template <class Index>
  void run_typed(const Index* indices, const void* data, void* output) const {
    // Check every index before writing anything, so a bad request leaves the output untouched.
    for (std::int64_t j = 0; j < index_count_; ++j) {
      const std::int64_t index = indices[j];
      if (index < -axis_length_ || index >= axis_length_)
        throw Error(ErrorCode::invalid_argument,
                    "Gather node '" + node_name() + "': index " + std::to_string(index) + " at position " +
                        std::to_string(j) + " is out of range for axis length " + std::to_string(axis_length_));
    }
    // Each (outer, index) pair copies one slice: the kernel's threads take runs of them.
    const auto* src = static_cast<const std::byte*>(data);
    parallel_for(outer_ * index_count_,
                 std::max<std::int64_t>(1, kCopyChunkBytes / std::max<std::int64_t>(slice_bytes_, 1)),
                 [&](std::int64_t begin, std::int64_t end) {
                   auto* dst = static_cast<std::byte*>(output) + static_cast<std::size_t>(begin) * slice_bytes_;
                   for (std::int64_t p = begin; p < end; ++p) {
                     const std::int64_t o = p / index_count_;
                     std::int64_t index = indices[p % index_count_];
                     if (index < 0) index += axis_length_;
                     const std::byte* block = src + static_cast<std::size_t>(o * axis_length_) * slice_bytes_;
                     std::memcpy(dst, block + static_cast<std::size_t>(index) * slice_bytes_, slice_bytes_);
                     dst += slice_bytes_;
                   }
                 });
  }

  DType index_dtype_ = DType::i64;
  std::int64_t outer_ = 0, axis_length_ = 0, index_count_ = 0;
  std::size_t slice_bytes_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_reshape_kernel(const KernelSpec& spec) { return make_reshape(spec); }
std::unique_ptr<OpKernel> make_flatten_kernel(const KernelSpec& spec) { return make_flatten(spec); }
std::unique_ptr<OpKernel> make_transpose_kernel(const KernelSpec& spec) {
  return std::make_unique<TransposeKernel>(spec);
}
std::unique_ptr<OpKernel> make_concat_kernel(const KernelSpec& spec) { return std::make_unique<ConcatKernel>(spec); }
std::unique_ptr<OpKernel> make_gather_kernel(const KernelSpec& spec) { return std::make_unique<GatherKernel>(spec); }
std::unique_ptr<OpKernel> make_squeeze_kernel(const KernelSpec& spec) { return make_same_bytes(spec, 2); }
std::unique_ptr<OpKernel> make_identity_kernel(const KernelSpec& spec) { return make_same_bytes(spec, 1); }
std::unique_ptr<OpKernel> make_dropout_kernel(const KernelSpec& spec) { return std::make_unique<DropoutKernel>(spec); }

}  // namespace loom::backend::cpu
