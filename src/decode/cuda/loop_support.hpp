// Host pieces the CUDA greedy and encoder decoders share: weights converted and uploaded in one
// allocation, scratch carved from the engine's buffer, pinned staging for the graph's per-run
// arguments, graph building with a WHILE node, and kernel launches with one argument struct.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "loom/tensor.hpp"

namespace loom::decode::detail::cuda_loop {

// The CUDA device behind `device`; throws Error(internal) for another backend.
int cuda_device_of(backend::Backend& device);

struct DeviceFacts {
  int sm_count = 0;
  std::size_t shared_per_block_optin = 0;  // the most shared memory one block may ask for
};
DeviceFacts device_facts(int device);

// Device memory from the backend, returned to it on destruction. Move-only.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(backend::Backend& backend, std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void release() noexcept;
  backend::Backend* backend_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Collects host arrays at 256-byte aligned offsets, then uploads them with one allocation and one
// copy. Float tensors are converted from f32 to the decoder's dtype on the way.
class HostImage {
 public:
  explicit HostImage(DType dtype) : dtype_(dtype) {}
  // `tensor` (f32) converted to the dtype; an empty tensor stands for `count` zeros. Returns the
  // array's byte offset. Throws Error(shape_mismatch) naming `what` when the count differs.
  std::size_t add_floats(const Tensor& tensor, std::int64_t count, const std::string& what);
  std::size_t add_bytes(const void* data, std::size_t bytes);
  std::size_t bytes() const noexcept { return image_.size(); }
  // Blocking upload; the host image may be dropped afterwards.
  DeviceMemory upload(backend::Backend& backend, int device) const;

 private:
  std::size_t reserve(std::size_t bytes);
  DType dtype_;
  std::vector<std::byte> image_;
};

// Hands out 256-byte aligned arrays from a run's scratch; with a null base it only measures, so
// scratch_bytes() and launch() share one layout.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : base_(static_cast<std::byte*>(base)) {}
  template <class T>
  T* take(std::int64_t count) {
    return static_cast<T*>(take_bytes(static_cast<std::size_t>(count) * sizeof(T)));
  }
  void* take_bytes(std::size_t bytes);
  std::size_t used() const noexcept { return used_; }

 private:
  std::byte* base_;
  std::size_t used_ = 0;
};

// Copies a small struct to device memory in stream order through pinned host slots. A slot is
// rewritten only after the copy that last used it has run, so the host never races the device.
class StagedCopy {
 public:
  explicit StagedCopy(std::size_t bytes, int slots = 4);
  ~StagedCopy();
  StagedCopy(const StagedCopy&) = delete;
  StagedCopy& operator=(const StagedCopy&) = delete;
  void copy(const void* source, void* device_destination, cudaStream_t stream);

 private:
  std::size_t bytes_;
  std::vector<void*> slots_;
  std::vector<backend::cuda::EventHandle> copied_;
  std::vector<bool> in_use_;
  std::size_t next_ = 0;
};

// A pinned host int the host loop reads its keep-going flag into.
class PinnedFlag {
 public:
  PinnedFlag();
  ~PinnedFlag();
  PinnedFlag(const PinnedFlag&) = delete;
  PinnedFlag& operator=(const PinnedFlag&) = delete;
  std::int32_t* get() const noexcept { return value_; }

 private:
  std::int32_t* value_ = nullptr;
};

// Launches `kernel` (one by-value argument struct at `args`) with kThreads-thread blocks.
void launch(const void* kernel, unsigned grid, std::size_t shared_bytes, void* args, cudaStream_t stream);
// As launch(), for kernels whose blocks wait for each other (decode::grid_barrier): the cooperative
// launch attribute makes the device start all blocks at once or fail the launch, so a persistent
// kernel never spins waiting for blocks that another kernel's residency keeps out. The kernel itself
// does not use grid.sync. `grid` must be within the co-resident limit.
void launch_all_resident(const void* kernel, unsigned grid, std::size_t shared_bytes, void* args, cudaStream_t stream);

// An instantiated graph: init kernel → WHILE(condition) { body } → optional tail kernel.
class LoopGraph {
 public:
  LoopGraph();
  ~LoopGraph();
  LoopGraph(const LoopGraph&) = delete;
  LoopGraph& operator=(const LoopGraph&) = delete;

  cudaGraphConditionalHandle condition() const noexcept { return condition_; }
  // Building, in this order: the init node, then the body (run in order), then an optional tail,
  // then instantiate(). `args` points to the kernel's argument struct (copied into the node).
  void add_init(const void* kernel, unsigned grid, void* args);
  void add_body(const void* kernel, unsigned grid, void* args);
  void add_tail(const void* kernel, unsigned grid, void* args);
  void instantiate();
  void launch(cudaStream_t stream);

 private:
  cudaGraphNode_t add_kernel(cudaGraph_t graph, cudaGraphNode_t after, const void* kernel, unsigned grid, void* args);
  cudaGraph_t graph_ = nullptr;
  cudaGraph_t body_ = nullptr;  // owned by the WHILE node
  cudaGraphExec_t exec_ = nullptr;
  cudaGraphConditionalHandle condition_ = 0;
  cudaGraphNode_t init_ = nullptr, while_ = nullptr, last_body_ = nullptr;
};

constexpr int kThreads = 256;  // every decode-loop kernel's block size (kernels/decode_rows.cuh)

}  // namespace loom::decode::detail::cuda_loop
