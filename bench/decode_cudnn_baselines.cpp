// cuDNN RNN baselines and the copy-bandwidth probe for loom_decode_bench. Host code only (the CUDA
// runtime and cuDNN APIs), so g++ compiles it; every call is checked with the library's macros.
#include "decode_cudnn_baselines.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/cuda/cuda_handles.hpp"
#include "loom/tensor.hpp"

namespace loom::bench::decode {

namespace {

using backend::cuda::CudnnHandle;
using backend::cuda::CudnnTensorDesc;
using backend::cuda::DeviceBuffer;
using backend::cuda::DeviceGuard;
using backend::cuda::EventHandle;
using backend::cuda::StreamHandle;
using backend::cuda::UniqueHandle;

struct RnnDescTraits {
  using handle_type = cudnnRNNDescriptor_t;
  static void destroy(cudnnRNNDescriptor_t h) noexcept { LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyRNNDescriptor(h)); }
};
struct RnnDataDescTraits {
  using handle_type = cudnnRNNDataDescriptor_t;
  static void destroy(cudnnRNNDataDescriptor_t h) noexcept {
    LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyRNNDataDescriptor(h));
  }
};
struct DropoutDescTraits {
  using handle_type = cudnnDropoutDescriptor_t;
  static void destroy(cudnnDropoutDescriptor_t h) noexcept {
    LOOM_CUDNN_CHECK_NOTHROW(cudnnDestroyDropoutDescriptor(h));
  }
};
using RnnDesc = UniqueHandle<RnnDescTraits>;
using RnnDataDesc = UniqueHandle<RnnDataDescTraits>;
using DropoutDesc = UniqueHandle<DropoutDescTraits>;

DeviceBuffer device_alloc(std::size_t bytes) {
  void* pointer = nullptr;
  LOOM_CUDA_CHECK(cudaMalloc(&pointer, std::max<std::size_t>(bytes, 1)));
  return DeviceBuffer(pointer);
}

// Uniform values in [-bound, bound], stored as the RNN's data type, copied to `dst`.
void upload_uniform(void* dst, std::size_t count, bool f16, float bound, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-bound, bound);
  if (f16) {
    std::vector<f16_t> values(count);
    for (auto& v : values) v = float_to_f16(uniform(rng));
    LOOM_CUDA_CHECK(cudaMemcpy(dst, values.data(), count * sizeof(f16_t), cudaMemcpyHostToDevice));
  } else {
    std::vector<float> values(count);
    for (auto& v : values) v = uniform(rng);
    LOOM_CUDA_CHECK(cudaMemcpy(dst, values.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  }
}

// A packed, sequence-major RNN data descriptor of `length` tokens for every row (all rows equal,
// so the packed layout is the dense [length, batch, width] one Loom uses).
RnnDataDesc make_data_desc(cudnnDataType_t type, int length, int batch, int width) {
  cudnnRNNDataDescriptor_t raw = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&raw));
  RnnDataDesc desc(raw);
  const std::vector<int> lengths(static_cast<std::size_t>(batch), length);
  LOOM_CUDNN_CHECK(cudnnSetRNNDataDescriptor(raw, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, length, batch, width,
                                             lengths.data(), nullptr));
  return desc;
}

}  // namespace

struct CudnnRnn::Impl {
  RnnShape shape;
  int device = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  StreamHandle stream;
  CudnnHandle handle;
  DropoutDesc dropout;
  DeviceBuffer dropout_states;
  RnnDesc rnn;
  RnnDataDesc x_step, y_step, x_sequence, y_sequence;
  CudnnTensorDesc state_desc;  // [layers, batch, hidden], for h and c alike
  DeviceBuffer weights, workspace;
  std::size_t weight_bytes = 0, workspace_bytes = 0;
  DeviceBuffer lengths_step, lengths_sequence;  // int32 [batch] on the device, as cudnnRNNForward reads them
  DeviceBuffer x, y;                            // [steps, batch, input], [steps, batch, hidden]
  DeviceBuffer h[2], c[2];                      // ping-pong state between stepwise calls

  std::size_t element_bytes() const { return shape.f16 ? 2 : 4; }

  void forward(const RnnDataDesc& x_desc, const void* x_ptr, const RnnDataDesc& y_desc, void* y_ptr,
               const DeviceBuffer& lengths, int from, int to) {
    const bool lstm = !shape.gru;
    LOOM_CUDNN_CHECK(cudnnRNNForward(handle.get(), rnn.get(), CUDNN_FWD_MODE_INFERENCE,
                                     static_cast<const std::int32_t*>(lengths.get()), x_desc.get(), x_ptr, y_desc.get(),
                                     y_ptr, state_desc.get(), h[from].get(), h[to].get(), state_desc.get(),
                                     lstm ? c[from].get() : nullptr, lstm ? c[to].get() : nullptr, weight_bytes,
                                     weights.get(), workspace_bytes, workspace.get(), 0, nullptr));
  }
};

CudnnRnn::CudnnRnn(int device, const RnnShape& shape, std::uint64_t seed) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.shape = shape;
  s.device = device;
  s.type = shape.f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  DeviceGuard guard(device);

  s.stream = backend::cuda::create_stream_handle(cudaStreamNonBlocking, 0);
  s.handle = backend::cuda::create_cudnn_handle();
  LOOM_CUDNN_CHECK(cudnnSetStream(s.handle.get(), s.stream.get()));

  // No dropout at inference, but the descriptor must exist and be initialised.
  cudnnDropoutDescriptor_t dropout = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateDropoutDescriptor(&dropout));
  s.dropout = DropoutDesc(dropout);
  std::size_t state_bytes = 0;
  LOOM_CUDNN_CHECK(cudnnDropoutGetStatesSize(s.handle.get(), &state_bytes));
  s.dropout_states = device_alloc(state_bytes);
  LOOM_CUDNN_CHECK(cudnnSetDropoutDescriptor(dropout, s.handle.get(), 0.0f, s.dropout_states.get(), state_bytes, seed));

  cudnnRNNDescriptor_t rnn = nullptr;
  LOOM_CUDNN_CHECK(cudnnCreateRNNDescriptor(&rnn));
  s.rnn = RnnDesc(rnn);
  // f16 data accumulates in f32 on tensor cores, as Loom's f16 kernels and PyTorch's cuDNN path do;
  // f32 lets cuDNN choose its fastest f32 math.
  const cudnnDataType_t math_precision = CUDNN_DATA_FLOAT;
  const cudnnMathType_t math_type = shape.f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH;
  LOOM_CUDNN_CHECK(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, shape.gru ? CUDNN_GRU : CUDNN_LSTM,
                                            CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, s.type,
                                            math_precision, math_type, shape.input_size, shape.hidden_size,
                                            shape.hidden_size, shape.layers, dropout, CUDNN_RNN_PADDED_IO_DISABLED));

  s.x_step = make_data_desc(s.type, 1, shape.batch, shape.input_size);
  s.y_step = make_data_desc(s.type, 1, shape.batch, shape.hidden_size);
  s.x_sequence = make_data_desc(s.type, shape.steps, shape.batch, shape.input_size);
  s.y_sequence = make_data_desc(s.type, shape.steps, shape.batch, shape.hidden_size);

  s.state_desc = backend::cuda::create_tensor_desc();
  const int dims[3] = {shape.layers, shape.batch, shape.hidden_size};
  const int strides[3] = {shape.batch * shape.hidden_size, shape.hidden_size, 1};
  LOOM_CUDNN_CHECK(cudnnSetTensorNdDescriptor(s.state_desc.get(), s.type, 3, dims, strides));

  LOOM_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(s.handle.get(), rnn, &s.weight_bytes));
  std::size_t work_step = 0, work_sequence = 0, reserve = 0;
  LOOM_CUDNN_CHECK(
      cudnnGetRNNTempSpaceSizes(s.handle.get(), rnn, CUDNN_FWD_MODE_INFERENCE, s.x_step.get(), &work_step, &reserve));
  LOOM_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(s.handle.get(), rnn, CUDNN_FWD_MODE_INFERENCE, s.x_sequence.get(),
                                             &work_sequence, &reserve));
  s.workspace_bytes = std::max(work_step, work_sequence);
  s.workspace = device_alloc(s.workspace_bytes);

  std::mt19937_64 rng(seed);
  const float bound = 1.0f / std::sqrt(static_cast<float>(shape.hidden_size));
  s.weights = device_alloc(s.weight_bytes);
  upload_uniform(s.weights.get(), s.weight_bytes / s.element_bytes(), shape.f16, bound, rng);

  const std::size_t rows = static_cast<std::size_t>(shape.steps) * shape.batch;
  s.x = device_alloc(rows * shape.input_size * s.element_bytes());
  s.y = device_alloc(rows * shape.hidden_size * s.element_bytes());
  upload_uniform(s.x.get(), rows * shape.input_size, shape.f16, 1.0f, rng);
  const std::size_t state_count = static_cast<std::size_t>(shape.layers) * shape.batch * shape.hidden_size;
  for (auto* state : {&s.h[0], &s.h[1], &s.c[0], &s.c[1]}) {
    *state = device_alloc(state_count * s.element_bytes());
    LOOM_CUDA_CHECK(cudaMemset(state->get(), 0, state_count * s.element_bytes()));
  }

  s.lengths_step = device_alloc(sizeof(std::int32_t) * shape.batch);
  s.lengths_sequence = device_alloc(sizeof(std::int32_t) * shape.batch);
  const std::vector<std::int32_t> ones(static_cast<std::size_t>(shape.batch), 1);
  const std::vector<std::int32_t> full(static_cast<std::size_t>(shape.batch), shape.steps);
  LOOM_CUDA_CHECK(
      cudaMemcpy(s.lengths_step.get(), ones.data(), sizeof(std::int32_t) * shape.batch, cudaMemcpyHostToDevice));
  LOOM_CUDA_CHECK(
      cudaMemcpy(s.lengths_sequence.get(), full.data(), sizeof(std::int32_t) * shape.batch, cudaMemcpyHostToDevice));
  LOOM_CUDA_CHECK(cudaDeviceSynchronize());
}

CudnnRnn::~CudnnRnn() {
  if (!impl_) return;
  DeviceGuard guard(impl_->device, DeviceGuard::NoThrow{});
  if (impl_->stream) LOOM_CUDA_CHECK_NOTHROW(cudaStreamSynchronize(impl_->stream.get()));
  impl_.reset();
}

void CudnnRnn::run_stepwise() {
  Impl& s = *impl_;
  DeviceGuard guard(s.device);
  const std::size_t x_stride = static_cast<std::size_t>(s.shape.batch) * s.shape.input_size * s.element_bytes();
  const std::size_t y_stride = static_cast<std::size_t>(s.shape.batch) * s.shape.hidden_size * s.element_bytes();
  auto* x = static_cast<const std::byte*>(s.x.get());
  auto* y = static_cast<std::byte*>(s.y.get());
  // Token t reads the state token t-1 left in h[t % 2] and writes h[(t + 1) % 2]; calls queue back
  // to back on the stream (no decision needs the host, as with teacher forcing in a framework).
  for (int t = 0; t < s.shape.steps; ++t)
    s.forward(s.x_step, x + t * x_stride, s.y_step, y + t * y_stride, s.lengths_step, t % 2, (t + 1) % 2);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
}

void CudnnRnn::run_sequence() {
  Impl& s = *impl_;
  DeviceGuard guard(s.device);
  s.forward(s.x_sequence, s.x.get(), s.y_sequence, s.y.get(), s.lengths_sequence, 0, 1);
  LOOM_CUDA_CHECK(cudaStreamSynchronize(s.stream.get()));
}

std::size_t CudnnRnn::weight_space_bytes() const noexcept { return impl_->weight_bytes; }

double measure_copy_bandwidth(int device, std::size_t bytes, int repeats) {
  DeviceGuard guard(device);
  DeviceBuffer src = device_alloc(bytes), dst = device_alloc(bytes);
  LOOM_CUDA_CHECK(cudaMemset(src.get(), 1, bytes));
  StreamHandle stream = backend::cuda::create_stream_handle(cudaStreamNonBlocking, 0);
  EventHandle start = backend::cuda::create_event_handle(cudaEventDefault);
  EventHandle stop = backend::cuda::create_event_handle(cudaEventDefault);
  LOOM_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<double> rates;
  for (int i = -1; i < std::max(repeats, 1); ++i) {  // i = -1: the warm-up copy
    LOOM_CUDA_CHECK(cudaEventRecord(start.get(), stream.get()));
    LOOM_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream.get()));
    LOOM_CUDA_CHECK(cudaEventRecord(stop.get(), stream.get()));
    LOOM_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    LOOM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (i >= 0 && ms > 0) rates.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3));
  }
  if (rates.empty()) return 0;
  std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
  return rates[rates.size() / 2];
}

}  // namespace loom::bench::decode
