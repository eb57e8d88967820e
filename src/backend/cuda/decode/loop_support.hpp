// Host pieces the CUDA greedy and encoder decoders share: weights converted and uploaded in one
// allocation, scratch carved from the engine's buffer, pinned staging for the graph's per-run
// arguments, graph building with a WHILE node, kernel launches with one argument struct, and
// LoopDecoder, the base that runs a decoder's loop by each of the three methods.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "backend/cuda/decode/cuda_decoders.hpp"
#include "loom/error.hpp"
#include "loom/tensor.hpp"

namespace loom::backend::cuda::decoders::loop_support {

// The CUDA device behind `device`; throws Error(internal) for another backend.
int cuda_device_of(Backend& device);

struct DeviceFacts {
  int sm_count = 0;
};
DeviceFacts device_facts(int device);

// Device memory from the backend, returned to it on destruction. Move-only.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(Backend& backend, std::size_t bytes);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& other) noexcept;
  DeviceMemory& operator=(DeviceMemory&& other) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  void* get() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }

 private:
  void release() noexcept;
  Backend* backend_ = nullptr;
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
  DeviceMemory upload(Backend& backend, int device) const;

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
  std::vector<EventHandle> copied_;
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
// does not use grid.sync. `grid` must be within the co-resident limit. Throws Error(unsupported)
// when `shared_bytes` exceed the kernel's limit (backend/cuda/smem_limit.hpp).
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
constexpr int kWarps = kThreads / 32;

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// One kernel launch of a graph or host loop step: every launch carries its own argument struct.
template <class Args>
struct StepLaunch {
  const void* kernel = nullptr;
  unsigned grid = 1;
  Args args;
};

// What the graph and the host loop run: `init` once, `body` (in order) while the loop goes on, then
// `tail` if there is one. The graph puts each launch into a node; the host loop launches them.
template <class Args>
struct StepPlan {
  StepLaunch<Args> init;
  std::vector<StepLaunch<Args>> body;
  std::optional<StepLaunch<Args>> tail;
  // The most times the body can run for this call (its steps or blocks): the host loop stops
  // with an error past it rather than trust a keep-going word that never clears.
  int max_iterations = 0;
};

// What LoopDecoder needs that does not depend on the kernels' structs.
class LoopDecoderBase : public DeviceDecoder {
 public:
  std::vector<DecodeMethod> methods() const final {
    return {DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop};
  }
  DecodeMethod default_method() const final { return DecodeMethod::persistent; }

 protected:
  // Throws Error(unsupported) naming `kind` ("greedy", "encoder") for a dtype other than f32/f16,
  // and Error(internal) for a backend that is not CUDA.
  LoopDecoderBase(const DecoderProgram& program, Backend& backend, const char* kind);
  // Host loop: waits for the run's keep-going word (`device_word`) to reach the host.
  bool keep_going(const std::int32_t* device_word, cudaStream_t stream);
  [[noreturn]] void throw_unresolved_method() const;

  std::string name_;
  Backend& backend_;
  int device_;
  DType dtype_;
  unsigned persistent_grid_ = 1;
  std::size_t persistent_shared_ = 0;  // the persistent kernel's dynamic shared memory

  // Built on the first graph run: the graph reads each run's Run struct from graph_run_.
  std::unique_ptr<LoopGraph> graph_;
  DeviceMemory graph_run_;
  std::unique_ptr<StagedCopy> staging_;
  std::unique_ptr<PinnedFlag> keep_going_;  // host loop
};

// A decoder whose kernels each take one `Args` by value ({model, run, run_on_device, condition,
// set_condition}) and whose per-sample `Run` (with scratch `loop` and `barrier`) is carved from the
// engine's scratch. launch() runs the persistent kernel with persistent_model_, or the step plan
// with step_model_ as a graph or a host loop; the derived decoder supplies what is its own.
template <class Run, class Args>
class LoopDecoder : public LoopDecoderBase {
 public:
  std::size_t scratch_bytes(int batch, int) const final {
    ScratchCarver measure(nullptr);
    carve_run(measure, batch);
    return measure.used();
  }

  void launch(const DecodeArgs& args, DecodeMethod method, const volatile std::int32_t* pause_flag, void* scratch,
              DecoderRunStatus* status, Stream& stream) final {
    DeviceGuard guard(device_);
    auto cuda_stream = static_cast<cudaStream_t>(stream.native_handle());
    ScratchCarver carver(scratch);
    Run run = carve_run(carver, args.batch);
    describe_run(run, args, pause_flag, status);
    switch (method) {
      case DecodeMethod::persistent: {
        LOOM_CUDA_CHECK(cudaMemsetAsync(run.barrier, 0, sizeof(unsigned), cuda_stream));
        Args kernel_args;
        kernel_args.model = persistent_model_;
        kernel_args.run = run;
        launch_all_resident(persistent_kernel(), persistent_grid_, persistent_shared_, &kernel_args, cuda_stream);
        return;
      }
      case DecodeMethod::graph:
        launch_graph(run, cuda_stream);
        return;
      case DecodeMethod::host_loop:
        launch_host_loop(run, cuda_stream);
        return;
      case DecodeMethod::automatic:
        break;
    }
    throw_unresolved_method();
  }

 protected:
  using Model = decltype(Args::model);
  using LoopDecoderBase::LoopDecoderBase;

  // The decoder's own scratch arrays of a run; carve_run() adds the loop words and the barrier.
  virtual Run carve(ScratchCarver& carver, int batch) const = 0;
  // The rest of the run from the engine's arguments.
  virtual void describe_run(Run& run, const DecodeArgs& args, const volatile std::int32_t* pause_flag,
                            DecoderRunStatus* status) const = 0;
  virtual const void* persistent_kernel() const = 0;
  // The graph's and host loop's launches, each starting from `args` (model and run already set).
  virtual StepPlan<Args> step_plan(const Args& args) const = 0;

  Model persistent_model_{}, step_model_{};

 private:
  // One layout for measuring (null base) and for a run.
  Run carve_run(ScratchCarver& carver, int batch) const {
    Run run = carve(carver, batch);
    run.loop = carver.take<std::int32_t>(4);
    run.barrier = carver.take<unsigned>(1);
    return run;
  }

  void launch_graph(const Run& run, cudaStream_t stream) {
    if (!graph_) {
      DeviceMemory run_memory(backend_, sizeof(Run));
      auto staging = std::make_unique<StagedCopy>(sizeof(Run));
      auto graph = std::make_unique<LoopGraph>();
      Args args;
      args.model = step_model_;
      args.run_on_device = static_cast<const Run*>(run_memory.get());
      args.condition = graph->condition();
      args.set_condition = true;
      StepPlan<Args> plan = step_plan(args);
      graph->add_init(plan.init.kernel, plan.init.grid, &plan.init.args);
      for (StepLaunch<Args>& step : plan.body) graph->add_body(step.kernel, step.grid, &step.args);
      if (plan.tail) graph->add_tail(plan.tail->kernel, plan.tail->grid, &plan.tail->args);
      graph->instantiate();
      graph_run_ = std::move(run_memory);
      staging_ = std::move(staging);
      graph_ = std::move(graph);
    }
    staging_->copy(&run, graph_run_.get(), stream);
    graph_->launch(stream);
  }

  void launch_host_loop(const Run& run, cudaStream_t stream) {
    if (!keep_going_) keep_going_ = std::make_unique<PinnedFlag>();
    Args args;
    args.model = step_model_;
    args.run = run;
    StepPlan<Args> plan = step_plan(args);
    loop_support::launch(plan.init.kernel, plan.init.grid, 0, &plan.init.args, stream);
    for (int iterations = 0; keep_going(run.loop + 1, stream); ++iterations) {
      if (iterations == plan.max_iterations)
        throw Error(ErrorCode::internal, "decoder '" + name_ + "': the host loop was asked for iteration " +
                                             std::to_string(iterations + 1) + " of at most " +
                                             std::to_string(plan.max_iterations));
      for (StepLaunch<Args>& step : plan.body) loop_support::launch(step.kernel, step.grid, 0, &step.args, stream);
    }
    if (plan.tail) loop_support::launch(plan.tail->kernel, plan.tail->grid, 0, &plan.tail->args, stream);
  }
};

}  // namespace loom::backend::cuda::decoders::loop_support
