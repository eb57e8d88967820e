// Host pieces shared by the CUDA greedy and encoder decoders (see loop_support.hpp).
#include "backend/cuda/decode/loop_support.hpp"

#include <cstring>
#include <string>
#include <utility>

#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/smem_limit.hpp"

namespace loom::backend::cuda::decoders::loop_support {

namespace {
constexpr std::size_t kAlignment = 256;
std::size_t align_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
}  // namespace

int cuda_device_of(Backend& device) {
  auto* cuda = dynamic_cast<CudaBackend*>(&device);
  if (!cuda) throw Error(ErrorCode::internal, "CUDA decoder: the backend '" + device.name() + "' is not CUDA");
  return cuda->device();
}

DeviceFacts device_facts(int device) {
  DeviceFacts facts;
  int value = 0;
  LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, device));
  facts.sm_count = value;
  return facts;
}

// --- DeviceMemory ---

DeviceMemory::DeviceMemory(Backend& backend, std::size_t bytes)
    : backend_(&backend), data_(backend.allocate(bytes)), bytes_(bytes) {}

DeviceMemory::~DeviceMemory() { release(); }

DeviceMemory::DeviceMemory(DeviceMemory&& other) noexcept
    : backend_(std::exchange(other.backend_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& other) noexcept {
  if (this != &other) {
    release();
    backend_ = std::exchange(other.backend_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceMemory::release() noexcept {
  if (data_) backend_->deallocate(data_);
  data_ = nullptr;
}

// --- HostImage ---

std::size_t HostImage::reserve(std::size_t bytes) {
  const std::size_t offset = align_up(image_.size());
  image_.resize(offset + bytes);
  return offset;
}

std::size_t HostImage::add_floats(const Tensor& tensor, std::int64_t count, const std::string& what) {
  const std::size_t element = dtype_size(dtype_);
  const std::size_t offset = reserve(static_cast<std::size_t>(count) * element);  // zero-filled
  if (tensor.bytes() == 0) return offset;                                         // an empty Tensor: zeros
  if (tensor.numel() != count)
    throw Error(ErrorCode::shape_mismatch,
                what + ": " + std::to_string(tensor.numel()) + " values, expected " + std::to_string(count));
  const Tensor converted = tensor.to(dtype_);
  std::memcpy(image_.data() + offset, converted.data(), converted.bytes());
  return offset;
}

std::size_t HostImage::add_bytes(const void* data, std::size_t bytes) {
  const std::size_t offset = reserve(bytes);
  if (bytes) std::memcpy(image_.data() + offset, data, bytes);
  return offset;
}

DeviceMemory HostImage::upload(Backend& backend, int device) const {
  DeviceMemory memory(backend, image_.empty() ? kAlignment : image_.size());
  DeviceGuard guard(device);
  if (!image_.empty()) LOOM_CUDA_CHECK(cudaMemcpy(memory.get(), image_.data(), image_.size(), cudaMemcpyHostToDevice));
  return memory;
}

// --- ScratchCarver ---

void* ScratchCarver::take_bytes(std::size_t bytes) {
  used_ = align_up(used_);
  void* at = base_ ? base_ + used_ : nullptr;
  used_ += bytes;
  return at;
}

// --- StagedCopy ---

StagedCopy::StagedCopy(std::size_t bytes, int slots) : bytes_(bytes) {
  for (int i = 0; i < slots; ++i) {
    void* slot = nullptr;
    LOOM_CUDA_CHECK(cudaHostAlloc(&slot, bytes, cudaHostAllocDefault));
    slots_.push_back(slot);
    copied_.push_back(create_event_handle(cudaEventDisableTiming));
    in_use_.push_back(false);
  }
}

StagedCopy::~StagedCopy() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    // A copy still queued reads its slot: let it finish before the memory goes.
    if (in_use_[i]) LOOM_CUDA_CHECK_NOTHROW(cudaEventSynchronize(copied_[i].get()));
    release_outside_captures([slot = slots_[i]] { LOOM_CUDA_CHECK_NOTHROW(cudaFreeHost(slot)); });
  }
}

void StagedCopy::copy(const void* source, void* device_destination, cudaStream_t stream) {
  const std::size_t i = next_;
  next_ = (next_ + 1) % slots_.size();
  if (in_use_[i]) LOOM_CUDA_CHECK(cudaEventSynchronize(copied_[i].get()));
  std::memcpy(slots_[i], source, bytes_);
  LOOM_CUDA_CHECK(cudaMemcpyAsync(device_destination, slots_[i], bytes_, cudaMemcpyHostToDevice, stream));
  LOOM_CUDA_CHECK(cudaEventRecord(copied_[i].get(), stream));
  in_use_[i] = true;
}

// --- PinnedFlag ---

PinnedFlag::PinnedFlag() {
  void* memory = nullptr;
  LOOM_CUDA_CHECK(cudaHostAlloc(&memory, sizeof(std::int32_t), cudaHostAllocDefault));
  value_ = static_cast<std::int32_t*>(memory);
  *value_ = 0;
}

PinnedFlag::~PinnedFlag() {
  release_outside_captures([value = value_] { LOOM_CUDA_CHECK_NOTHROW(cudaFreeHost(value)); });
}

// --- launches and graphs ---

void launch(const void* kernel, unsigned grid, std::size_t shared_bytes, void* args, cudaStream_t stream) {
  void* params[] = {args};
  LOOM_CUDA_CHECK(cudaLaunchKernel(kernel, dim3(grid), dim3(kThreads), params, shared_bytes, stream));
}

void launch_all_resident(const void* kernel, unsigned grid, std::size_t shared_bytes, void* args, cudaStream_t stream) {
  require_smem_limit(kernel, shared_bytes, "decode loop (persistent)");
  void* params[] = {args};
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  LOOM_CUDA_CHECK(cudaLaunchKernelExC(&config, kernel, params));
}

LoopGraph::LoopGraph() {
  LOOM_CUDA_CHECK(cudaGraphCreate(&graph_, 0));
  // Each launch starts with the loop off; the init kernel turns it on when there is work.
  LOOM_CUDA_CHECK(cudaGraphConditionalHandleCreate(&condition_, graph_, 0, cudaGraphCondAssignDefault));
}

LoopGraph::~LoopGraph() {
  if (exec_) LOOM_CUDA_CHECK_NOTHROW(cudaGraphExecDestroy(exec_));
  if (graph_) LOOM_CUDA_CHECK_NOTHROW(cudaGraphDestroy(graph_));
}

cudaGraphNode_t LoopGraph::add_kernel(cudaGraph_t graph, cudaGraphNode_t after, const void* kernel, unsigned grid,
                                      void* args) {
  void* params[] = {args};
  cudaKernelNodeParams node_params{};
  node_params.func = const_cast<void*>(kernel);
  node_params.gridDim = dim3(grid);
  node_params.blockDim = dim3(kThreads);
  node_params.sharedMemBytes = 0;
  node_params.kernelParams = params;  // the argument struct is copied into the node here
  node_params.extra = nullptr;
  cudaGraphNode_t node = nullptr;
  LOOM_CUDA_CHECK(cudaGraphAddKernelNode(&node, graph, after ? &after : nullptr, after ? 1 : 0, &node_params));
  return node;
}

void LoopGraph::add_init(const void* kernel, unsigned grid, void* args) {
  init_ = add_kernel(graph_, nullptr, kernel, grid, args);
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeConditional;
  params.conditional.handle = condition_;
  params.conditional.type = cudaGraphCondTypeWhile;
  params.conditional.size = 1;
  LOOM_CUDA_CHECK(cudaGraphAddNode(&while_, graph_, &init_, nullptr, 1, &params));
  body_ = params.conditional.phGraph_out[0];
}

void LoopGraph::add_body(const void* kernel, unsigned grid, void* args) {
  last_body_ = add_kernel(body_, last_body_, kernel, grid, args);
}

void LoopGraph::add_tail(const void* kernel, unsigned grid, void* args) {
  add_kernel(graph_, while_, kernel, grid, args);
}

void LoopGraph::instantiate() { LOOM_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0)); }

void LoopGraph::launch(cudaStream_t stream) { LOOM_CUDA_CHECK(cudaGraphLaunch(exec_, stream)); }

// --- LoopDecoderBase ---

LoopDecoderBase::LoopDecoderBase(const DecoderProgram& program, Backend& backend, const char* kind)
    : name_(program.name), backend_(backend), device_(cuda_device_of(backend)), dtype_(program.dtype) {
  if (dtype_ != DType::f32 && dtype_ != DType::f16)
    throw Error(ErrorCode::unsupported, "decoder '" + name_ + "': dtype " + std::string(dtype_name(dtype_)) +
                                            " (the CUDA " + kind + " decoder runs f32 and f16)");
}

bool LoopDecoderBase::keep_going(const std::int32_t* device_word, cudaStream_t stream) {
  LOOM_CUDA_CHECK(
      cudaMemcpyAsync(keep_going_->get(), device_word, sizeof(std::int32_t), cudaMemcpyDeviceToHost, stream));
  LOOM_CUDA_CHECK(cudaStreamSynchronize(stream));
  return *keep_going_->get() != 0;
}

void LoopDecoderBase::throw_unresolved_method() const {
  throw Error(ErrorCode::internal, "decoder '" + name_ + "': launch without a resolved method");
}

}  // namespace loom::backend::cuda::decoders::loop_support
