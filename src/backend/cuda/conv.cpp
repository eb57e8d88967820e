// Conv (1-D to 3-D) on cuDNN's convolution API: descriptors and the algorithm are fixed at
// creation (the shapes are static), bias is added with cudnnAddTensor. A 1-D conv runs as a 2-D
// one with H = 1. cuDNN pads symmetrically only, so asymmetric pads (explicit or from auto_pad)
// are handled by copying X into a zero-padded buffer in the workspace first.
#include "strided_copy.cuh"

#include <algorithm>
#include <climits>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"

namespace loom::backend::cuda {
namespace {

// Algorithms needing more scratch than this are passed over; the workspace comes from the
// memory plan, so a huge one would crowd out activations.
constexpr std::size_t kMaxConvWorkspace = std::size_t{1} << 30;

std::vector<std::int64_t> nchw(std::int64_t n, std::int64_t c, const std::vector<std::int64_t>& spatial) {
  std::vector<std::int64_t> dims{n, c};
  dims.insert(dims.end(), spatial.begin(), spatial.end());
  return dims;
}

class ConvKernel final : public CudaOpKernel {
 public:
  ConvKernel(const KernelSpec& spec, CudaBackend& backend)
      : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    if (x.rank() < 3 || w.rank() != x.rank())
      throw_bad_shape(spec, "X " + x.to_string() + " and W " + w.to_string() +
                                " must be [N, C, spatial...] and "
                                "[M, C/group, kernel...] of the same rank");
    const std::int64_t group = spec.node->attrs.get_int("group", 1);
    const std::int64_t batch = x[0], channels = x[1], maps = w[0];
    if (group < 1 || channels % group != 0 || maps % group != 0 || w[1] != channels / group)
      throw_bad_shape(
          spec, "W " + w.to_string() + " does not fit X " + x.to_string() + " with group " + std::to_string(group));
    // cuDNN wants at least 2 spatial dims: a 1-D window gets H = 1.
    const WindowGeometry g = parse_sliding_window(spec, {w.dims().begin() + 2, w.dims().end()}, maps, false)
                                 .padded_to(std::max<std::size_t>(2, x.rank() - 2));
    const std::size_t rank = g.rank();
    has_bias_ = has_input(spec, 2);
    if (has_bias_ && spec.inputs[2].shape.numel() != maps)
      throw_bad_shape(spec, "B must hold one value per output map");

    // Asymmetric padding: pad X explicitly, then convolve without padding.
    std::vector<std::int64_t> conv_in = g.input, conv_pads = g.pad_begin;
    if (g.pad_begin != g.pad_end) {
      for (std::size_t i = 0; i < rank; ++i) conv_in[i] = g.input[i] + g.pad_begin[i] + g.pad_end[i];
      conv_pads.assign(rank, 0);
      const std::vector<std::int64_t> dims = nchw(batch, channels, g.input);
      const std::vector<std::int64_t> padded_dims = nchw(batch, channels, conv_in);
      padded_bytes_ = static_cast<std::size_t>(product(Shape(padded_dims), 0, padded_dims.size())) * dtype_size(dtype_);
      const std::vector<std::int64_t> padded_strides = contiguous_strides(padded_dims);
      const auto layout = make_copy_layout(dims, contiguous_strides(dims), padded_strides);
      if (!layout) throw_unsupported(spec, "asymmetric padding of this rank");
      pad_layout_ = *layout;
      pad_offset_ = 0;
      for (std::size_t i = 0; i < rank; ++i) pad_offset_ += g.pad_begin[i] * padded_strides[2 + i];
    }

    const cudnnDataType_t data_type = dtype_ == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    x_desc_ = create_tensor_desc();
    y_desc_ = create_tensor_desc();
    w_desc_ = create_filter_desc();
    conv_desc_ = create_conv_desc();
    set_dense_tensor_desc(spec, x_desc_.get(), data_type, nchw(batch, channels, conv_in));
    set_dense_tensor_desc(spec, y_desc_.get(), data_type, nchw(batch, maps, g.output));
    std::vector<int> filter_dims{cudnn_int(spec, maps), cudnn_int(spec, w[1])}, pads, strides, dilations;
    for (std::size_t i = 0; i < rank; ++i) {
      filter_dims.push_back(cudnn_int(spec, g.kernel[i]));
      pads.push_back(cudnn_int(spec, conv_pads[i]));
      strides.push_back(cudnn_int(spec, g.stride[i]));
      dilations.push_back(cudnn_int(spec, g.dilation[i]));
    }
    LOOM_CUDNN_CHECK(cudnnSetFilterNdDescriptor(w_desc_.get(), data_type, CUDNN_TENSOR_NCHW,
                                                static_cast<int>(filter_dims.size()), filter_dims.data()));
    // Compute in f32 for both dtypes (f16 data with f32 accumulation).
    LOOM_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(conv_desc_.get(), static_cast<int>(rank), pads.data(),
                                                     strides.data(), dilations.data(), CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc_.get(), cudnn_int(spec, group)));
    // f32 stays on FMA kernels: the default math mode allows TF32 on Ampere and later, which
    // would drift from the CPU reference by ~1e-3. f16 uses tensor cores.
    const cudnnMathType_t math = dtype_ == DType::f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math));

    std::vector<int> out_dims(rank + 2);
    LOOM_CUDNN_CHECK(cudnnGetConvolutionNdForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(),
                                                           static_cast<int>(out_dims.size()), out_dims.data()));
    if (std::vector<std::int64_t>(out_dims.begin(), out_dims.end()) != nchw(batch, maps, g.output))
      throw Error(ErrorCode::internal, "Conv node '" + spec.node->name + "': cuDNN's output shape differs from ONNX's");

    if (has_bias_) {
      bias_desc_ = create_tensor_desc();
      set_dense_tensor_desc(spec, bias_desc_.get(), data_type, nchw(1, maps, std::vector<std::int64_t>(rank, 1)));
    }
    choose_algorithm(spec, backend, math);
  }

  std::size_t workspace_bytes() const override { return align_bytes(padded_bytes_) + cudnn_workspace_bytes_; }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
              CudaStream& stream) override {
    cudnnHandle_t handle = stream.cudnn();
    const void* x = inputs[0];
    auto* scratch = static_cast<std::byte*>(workspace);
    if (padded_bytes_ > 0) {
      LOOM_CUDA_CHECK(cudaMemsetAsync(scratch, 0, padded_bytes_, stream.get()));
      kernels::launch_strided_copy(x, scratch + pad_offset_ * static_cast<std::int64_t>(dtype_size(dtype_)),
                                   dtype_size(dtype_), pad_layout_, stream.get());
      x = scratch;
      scratch += align_bytes(padded_bytes_);
    }
    // Scaling factors are float for both f32 and f16 data.
    const float one = 1.0f, zero = 0.0f;
    LOOM_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, x_desc_.get(), x, w_desc_.get(), inputs[1], conv_desc_.get(),
                                             algorithm_, cudnn_workspace_bytes_ ? scratch : nullptr,
                                             cudnn_workspace_bytes_, &zero, y_desc_.get(), outputs[0]));
    if (has_bias_)
      LOOM_CUDNN_CHECK(cudnnAddTensor(handle, &one, bias_desc_.get(), inputs[2], &one, y_desc_.get(), outputs[0]));
  }

 private:
  // cuDNN's heuristics rank the algorithms without running them, so creation needs no buffers.
  void choose_algorithm(const KernelSpec& spec, CudaBackend& backend, cudnnMathType_t wanted_math) {
    CudaBackend::LockedCudnn cudnn = backend.creation_cudnn();
    int max_count = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(cudnn.handle, &max_count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<std::size_t>(std::max(max_count, 1)));
    int returned = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
        cudnn.handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(), y_desc_.get(), static_cast<int>(results.size()),
        &returned, results.data()));
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& perf = results[i];
      if (perf.status != CUDNN_STATUS_SUCCESS) continue;
      // Only algorithms whose sums run in a fixed order (no atomics), so that a Step computes the
      // same bits on every run: plain or captured, before or after a pause, on any stream.
      if (perf.determinism != CUDNN_DETERMINISTIC) continue;
      // For f32, an entry that would run on tensor cores means TF32 or f16 conversion: skip it,
      // and keep the descriptor on FMA math for the algorithm chosen.
      const bool fma_only = wanted_math == CUDNN_FMA_MATH;
      if (fma_only && (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
        continue;
      LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), fma_only ? CUDNN_FMA_MATH : perf.mathType));
      // The workspace query doubles as the check that the algorithm accepts this configuration.
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(cudnn.handle, x_desc_.get(), w_desc_.get(), conv_desc_.get(),
                                                  y_desc_.get(), perf.algo, &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > kMaxConvWorkspace)
        continue;
      algorithm_ = perf.algo;
      cudnn_workspace_bytes_ = bytes;
      return;
    }
    throw_unsupported(spec, "cuDNN offers no forward algorithm for these shapes and attributes");
  }

  DType dtype_;
  bool has_bias_ = false;
  CudnnTensorDesc x_desc_, y_desc_, bias_desc_;
  CudnnFilterDesc w_desc_;
  CudnnConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algorithm_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  std::size_t cudnn_workspace_bytes_ = 0;
  std::size_t padded_bytes_ = 0;  // 0 unless pads are asymmetric
  kernels::StridedCopyLayout pad_layout_;
  std::int64_t pad_offset_ = 0;  // elements from the padded buffer's start to X's first element
};

}  // namespace

int cudnn_int(const KernelSpec& spec, std::int64_t value) {
  if (value < 0 || value > INT_MAX)
    throw_unsupported(spec, "dimension " + std::to_string(value) + " exceeds cuDNN's range");
  return static_cast<int>(value);
}

void set_dense_tensor_desc(const KernelSpec& spec, cudnnTensorDescriptor_t desc, cudnnDataType_t type,
                           const std::vector<std::int64_t>& dims) {
  std::vector<int> d, strides(dims.size());
  for (std::int64_t v : dims) d.push_back(cudnn_int(spec, v));
  std::int64_t stride = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    strides[i] = cudnn_int(spec, stride);
    stride *= dims[i];
  }
  LOOM_CUDNN_CHECK(cudnnSetTensorNdDescriptor(desc, type, static_cast<int>(d.size()), d.data(), strides.data()));
}

std::unique_ptr<OpKernel> create_conv_kernel(const KernelSpec& spec, CudaBackend& backend) {
  require_arity(spec, 2, 3, 1, 1);
  return std::make_unique<ConvKernel>(spec, backend);
}

}  // namespace loom::backend::cuda
