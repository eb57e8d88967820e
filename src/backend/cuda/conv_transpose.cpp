// ConvTranspose (1-D to 3-D) as cuDNN's backward-data convolution: X plays dy, W the forward
// filter, and the result is the full, unpadded output (stride * (in - 1) + dilated kernel per
// axis) in the workspace. A small kernel then cuts the ONNX output window out of it (pads,
// output_padding, output_shape, auto_pad) and adds the bias. A 1-D op runs as 2-D with H = 1.
#include "conv_transpose.cuh"

#include <algorithm>
#include <vector>

#include "backend/conv_spec.hpp"
#include "backend/cuda/conv_kernels.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"

namespace loom::backend::cuda {
namespace {

// As Conv: algorithms needing more scratch than this are passed over.
constexpr std::size_t kMaxConvWorkspace = std::size_t{1} << 30;

class ConvTransposeKernel final : public CudaOpKernel {
 public:
  ConvTransposeKernel(const KernelSpec& spec, CudaBackend& backend)
      : CudaOpKernel(spec), dtype_(require_float_dtype(spec, {1, 2})) {
    const Shape& x = spec.inputs[0].shape;
    const Shape& w = spec.inputs[1].shape;
    if (x.rank() < 3 || w.rank() != x.rank())
      throw_bad_shape(spec, "X " + x.to_string() + " and W " + w.to_string() +
                                " must be [N, C, spatial...] and "
                                "[C, M/group, kernel...] of the same rank");
    const std::int64_t group = spec.node->attrs.get_int("group", 1);
    const std::int64_t batch = x[0], channels = x[1];
    if (group < 1 || channels % group != 0 || w[0] != channels)
      throw_bad_shape(
          spec, "W " + w.to_string() + " does not fit X " + x.to_string() + " with group " + std::to_string(group));
    const std::int64_t maps = w[1] * group;
    const WindowGeometry g = parse_transposed_window(spec, {w.dims().begin() + 2, w.dims().end()}, maps)
                                 .padded_to(std::max<std::size_t>(2, x.rank() - 2));
    const std::size_t rank = g.rank();
    has_bias_ = has_input(spec, 2);
    if (has_bias_ && spec.inputs[2].shape.numel() != maps)
      throw_bad_shape(spec, "B must hold one value per output map");

    std::vector<std::int64_t> full(rank);
    for (std::size_t i = 0; i < rank; ++i)
      full[i] = g.stride[i] * (g.input[i] - 1) + (g.kernel[i] - 1) * g.dilation[i] + 1;
    std::vector<std::int64_t> x_dims{batch, channels}, full_dims{batch, maps};
    x_dims.insert(x_dims.end(), g.input.begin(), g.input.end());
    full_dims.insert(full_dims.end(), full.begin(), full.end());
    full_bytes_ = static_cast<std::size_t>(product(Shape(full_dims), 0, full_dims.size())) * dtype_size(dtype_);

    // The crop kernel works over 3 axes.
    const WindowGeometry g3 = g.padded_to(3);
    const std::size_t lead = 3 - rank;
    crop_.planes = batch * maps;
    crop_.channels = maps;
    for (std::size_t a = 0; a < 3; ++a) {
      crop_.full[a] = a < lead ? 1 : full[a - lead];
      crop_.out[a] = g3.output[a];
      crop_.pad_begin[a] = g3.pad_begin[a];
    }

    const cudnnDataType_t data_type = dtype_ == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    x_desc_ = create_tensor_desc();
    full_desc_ = create_tensor_desc();
    w_desc_ = create_filter_desc();
    conv_desc_ = create_conv_desc();
    set_dense_tensor_desc(spec, x_desc_.get(), data_type, x_dims);
    set_dense_tensor_desc(spec, full_desc_.get(), data_type, full_dims);
    std::vector<int> filter_dims{cudnn_int(spec, channels), cudnn_int(spec, w[1])}, pads(rank, 0), strides, dilations;
    for (std::size_t i = 0; i < rank; ++i) {
      filter_dims.push_back(cudnn_int(spec, g.kernel[i]));
      strides.push_back(cudnn_int(spec, g.stride[i]));
      dilations.push_back(cudnn_int(spec, g.dilation[i]));
    }
    LOOM_CUDNN_CHECK(cudnnSetFilterNdDescriptor(w_desc_.get(), data_type, CUDNN_TENSOR_NCHW,
                                                static_cast<int>(filter_dims.size()), filter_dims.data()));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionNdDescriptor(conv_desc_.get(), static_cast<int>(rank), pads.data(),
                                                     strides.data(), dilations.data(), CUDNN_CROSS_CORRELATION,
                                                     CUDNN_DATA_FLOAT));
    LOOM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_desc_.get(), cudnn_int(spec, group)));
    const cudnnMathType_t math = dtype_ == DType::f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
    LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), math));
    choose_algorithm(spec, backend, math);
  }

  std::size_t workspace_bytes() const override { return align_bytes(full_bytes_) + cudnn_workspace_bytes_; }

 protected:
  void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
              CudaStream& stream) override {
    auto* full = static_cast<std::byte*>(workspace);
    std::byte* scratch = full + align_bytes(full_bytes_);
    const float one = 1.0f, zero = 0.0f;
    LOOM_CUDNN_CHECK(cudnnConvolutionBackwardData(
        stream.cudnn(), &one, w_desc_.get(), inputs[1], x_desc_.get(), inputs[0], conv_desc_.get(), algorithm_,
        cudnn_workspace_bytes_ ? scratch : nullptr, cudnn_workspace_bytes_, &zero, full_desc_.get(), full));
    kernels::launch_conv_transpose_crop(full, has_bias_ ? inputs[2] : nullptr, outputs[0], dtype_, crop_, stream.get());
  }

 private:
  void choose_algorithm(const KernelSpec& spec, CudaBackend& backend, cudnnMathType_t wanted_math) {
    CudaBackend::LockedCudnn cudnn = backend.creation_cudnn();
    int max_count = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnn.handle, &max_count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> results(static_cast<std::size_t>(std::max(max_count, 1)));
    int returned = 0;
    LOOM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        cudnn.handle, w_desc_.get(), x_desc_.get(), conv_desc_.get(), full_desc_.get(),
        static_cast<int>(results.size()), &returned, results.data()));
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionBwdDataAlgoPerf_t& perf = results[i];
      if (perf.status != CUDNN_STATUS_SUCCESS) continue;
      // Only algorithms whose sums run in a fixed order (no atomics), so that a Step computes the
      // same bits on every run: plain or captured, before or after a pause, on any stream.
      if (perf.determinism != CUDNN_DETERMINISTIC) continue;
      const bool fma_only = wanted_math == CUDNN_FMA_MATH;
      if (fma_only && (perf.mathType == CUDNN_TENSOR_OP_MATH || perf.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
        continue;
      LOOM_CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc_.get(), fma_only ? CUDNN_FMA_MATH : perf.mathType));
      size_t bytes = 0;
      if (cudnnGetConvolutionBackwardDataWorkspaceSize(cudnn.handle, w_desc_.get(), x_desc_.get(), conv_desc_.get(),
                                                       full_desc_.get(), perf.algo, &bytes) != CUDNN_STATUS_SUCCESS ||
          bytes > kMaxConvWorkspace)
        continue;
      algorithm_ = perf.algo;
      cudnn_workspace_bytes_ = bytes;
      return;
    }
    throw_unsupported(spec, "cuDNN offers no backward-data algorithm for these shapes and attributes");
  }

  DType dtype_;
  bool has_bias_ = false;
  CudnnTensorDesc x_desc_, full_desc_;
  CudnnFilterDesc w_desc_;
  CudnnConvDesc conv_desc_;
  cudnnConvolutionBwdDataAlgo_t algorithm_ = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  std::size_t cudnn_workspace_bytes_ = 0;
  std::size_t full_bytes_ = 0;
  kernels::ConvTransposeCrop crop_;
};

}  // namespace

std::unique_ptr<OpKernel> create_conv_transpose_kernel(const KernelSpec& spec, CudaBackend& backend) {
  require_arity(spec, 2, 3, 1, 1);
  return std::make_unique<ConvTransposeKernel>(spec, backend);
}

}  // namespace loom::backend::cuda
