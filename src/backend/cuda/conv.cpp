// 2-D Conv on cuDNN's convolution API: descriptors and the algorithm are fixed at creation (the
// shapes are static), bias is added with cudnnAddTensor. cuDNN pads symmetrically only, so an
// asymmetric `pads` is handled by copying X into a zero-padded buffer in the workspace first.
#include "strided_copy.cuh"

#include <climits>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/strided_layout.hpp"

namespace loom::backend::cuda {
namespace {

// Algorithms needing more scratch than this are passed over; the workspace comes from the
// memory plan, so a huge one would crowd out activations.
constexpr std::size_t kMaxConvWorkspace = std::size_t{1} << 30;

int to_int(const KernelSpec& spec, std::int64_t value) {
  if (value < 0 || value > INT_MAX) throw_unsupported(spec, "dimension " + std::to_string(value) + " exceeds cuDNN's range");
  return static_cast<int>(value);
}

std::vector<std::int64_t> ints_of(const KernelSpec& spec, const char* name, std::size_t count, std::int64_t fallback) {
  std::vector<std::int64_t> values = spec.node->attrs.get_ints(name, std::vector<std::int64_t>(count, fallback));
  if (values.size() != count)
    throw_unsupported(spec, std::string(name) + " must have " + std::to_string(count) + " values (2-D Conv only)");
  return values;
}

void set_tensor_4d(const KernelSpec& spec, cudnnTensorDescriptor_t desc, cudnnDataType_t type, std::int64_t n,
                   std::int64_t c, std::int64_t h, std::int64_t w) {
  LOOM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, type, to_int(spec, n), to_int(spec, c),
                                              to_int(spec, h), to_int(spec, w)));
}

class ConvKernel final : public CudaOpKernel {
 public:
  ConvKernel(const KernelSpec& spec, CudaBackend& backend) : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    const Attributes& attrs = spec.node->attrs;
    const std::string auto_pad = attrs.get_string("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET") throw_unsupported(spec, "auto_pad=" + auto_pad + " (NOTSET only)");
    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    if (x.rank() != 4 || w.rank() != 4) throw_unsupported(spec, "X and W of rank 4 only (2-D Conv)");
    const std::int64_t group = attrs.get_int("group", 1);
    const std::int64_t batch = x[0], channels = x[1], in_h = x[2], in_w = x[3];
    const std::int64_t maps = w[0], kernel_h = w[2], kernel_w = w[3];
    if (group < 1 || channels % group != 0 || maps % group != 0 || w[1] != channels / group)
      throw_bad_shape(spec, "W " + w.to_string() + " does not fit X " + x.to_string() + " with group " +
                                std::to_string(group));
    if (attrs.has("kernel_shape") && attrs.get_ints("kernel_shape") != std::vector<std::int64_t>{kernel_h, kernel_w})
      throw_bad_shape(spec, "kernel_shape differs from W's spatial dims");
    const std::vector<std::int64_t> strides = ints_of(spec, "strides", 2, 1);
    const std::vector<std::int64_t> dilations = ints_of(spec, "dilations", 2, 1);
    const std::vector<std::int64_t> pads = ints_of(spec, "pads", 4, 0);  // top, left, bottom, right
    for (std::int64_t v : strides)
      if (v < 1) throw_bad_shape(spec, "strides must be positive");
    for (std::int64_t v : dilations)
      if (v < 1) throw_bad_shape(spec, "dilations must be positive");
    for (std::int64_t v : pads)
      if (v < 0) throw_bad_shape(spec, "pads must not be negative");

    const std::int64_t out_h = (in_h + pads[0] + pads[2] - dilations[0] * (kernel_h - 1) - 1) / strides[0] + 1;
    const std::int64_t out_w = (in_w + pads[1] + pads[3] - dilations[1] * (kernel_w - 1) - 1) / strides[1] + 1;
    if (out_h < 1 || out_w < 1) throw_bad_shape(spec, "the kernel is larger than the padded input");
    require_output_shape(spec, 0, Shape{batch, maps, out_h, out_w});
    has_bias_ = has_input(spec, 2);
    if (has_bias_ && spec.inputs[2].shape.numel() != maps) throw_bad_shape(spec, "B must hold one value per output map");

    // Asymmetric padding: pad X explicitly, then convolve without padding.
    std::int64_t conv_h = in_h, conv_w = in_w, pad_h = pads[0], pad_w = pads[1];
    if (pads[0] != pads[2] || pads[1] != pads[3]) {
      conv_h = in_h + pads[0] + pads[2];
      conv_w = in_w + pads[1] + pads[3];
      pad_h = pad_w = 0;
      padded_bytes_ = static_cast<std::size_t>(batch * channels * conv_h * conv_w) * dtype_size(dtype_);
      const std::vector<std::int64_t> dims{batch, channels, in_h, in_w};
      const std::vector<std::int64_t> padded_strides = contiguous_strides({batch, channels, conv_h, conv_w});
      pad_layout_ = *make_copy_layout(dims, contiguous_strides(dims), padded_strides);
      pad_offset_ = pads[0] * padded_strides[2] + pads[1];
    }

    const cudnnDataType_t data_type = dtype_ == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    x_desc_ = create_tensor_desc();
    y_desc_ = create_tensor_desc();
    w_desc_ = create_filter_desc();
    conv_desc_ = create_conv_desc();
    set_tensor_4d(spec, x_desc_.get(), data_type, batch, channels, conv_h, conv_w);
    set_tensor_4d(spec, y_desc_.get(), data_type, batch, maps, out_h, out_w);
    LOOM_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc_.get(), data_type, CUDNN_TENSOR_NCHW, to_int(spec, maps),
                                                to_int(spec, w[1]), to_int(spec, kernel_h), to_int(spec, kernel_w)));
    // Compute in f32 for both dtypes (f16 data with f32 accumulation).
    LOOM_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc_.get(), to_int(spec, pad_h), to_int(spec, pad_w),
                                                     to_int(spec, strides[0]), to_int(spec, strides[1]),
                                                     to_int(spec, dilations[0]), to_int(spec, dilations[1]),
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc_.get(), to_int(spec, group)));
    // f32 stays on FMA kernels: the default math mode allows TF32 on Ampere and later, which
    // would drift from the CPU reference by ~1e-3. f16 uses tensor cores.
    const cudnnMathType_t math = dtype_ == DType::f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math));

    int out_dims[4] = {};
    LOOM_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(), &out_dims[0],
                                                           &out_dims[1], &out_dims[2], &out_dims[3]));
    if (out_dims[0] != batch || out_dims[1] != maps || out_dims[2] != out_h || out_dims[3] != out_w)
      throw Error(ErrorCode::internal, "Conv node '" + spec.node->name + "': cuDNN's output shape differs from ONNX's");

    if (has_bias_) {
      bias_desc_ = create_tensor_desc();
      set_tensor_4d(spec, bias_desc_.get(), data_type, 1, maps, 1, 1);
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
    LOOM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(cudnn.handle, x_desc_.get(), w_desc_.get(),
                                                            conv_desc_.get(), y_desc_.get(),
                                                            static_cast<int>(results.size()), &returned,
                                                            results.data()));
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& perf = results[i];
      if (perf.status != CUDNN_STATUS_SUCCESS) continue;
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
  std::int64_t pad_offset_ = 0;   // elements from the padded buffer's start to X's first element
};

}  // namespace

std::unique_ptr<OpKernel> create_conv_kernel(const KernelSpec& spec, CudaBackend& backend) {
  require_arity(spec, 2, 3, 1, 1);
  return std::make_unique<ConvKernel>(spec, backend);
}

}  // namespace loom::backend::cuda
