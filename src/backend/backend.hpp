// The backend seam: a device that allocates memory, runs streams of work and creates one kernel
// object per op. The CPU backend implements every op (the reference and debug baseline); the CUDA
// backend is the fast one. Nothing outside src/backend/ knows which one it talks to.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "loom/error.hpp"
#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom::backend {

// A point in a stream's work; lets another stream or the host wait for it.
class Event {
 public:
  virtual ~Event() = default;
  virtual void synchronize() = 0;  // blocks the calling host thread until the point is reached
  virtual bool ready() = 0;
  // Microseconds from `earlier` to this event, both from record_timed() on the same backend and
  // both reached (call synchronize() first). Throws Error(invalid_argument) for untimed events.
  virtual double microseconds_since(Event& earlier) = 0;
};

class Stream;

// Work recorded from a stream by Stream::begin_capture()/end_capture(), ready to be replayed: the
// same kernels with the same arguments (device addresses included), launched as one unit.
class Graph {
 public:
  virtual ~Graph() = default;
  // Enqueues the recorded work on `stream` (of the backend that recorded it), ordered after the
  // stream's earlier work like any launch. Throws Error(backend) when the launch fails.
  virtual void launch(Stream& stream) = 0;
};

// Where an asynchronous stream reports work that failed after its launch had returned (a CPU
// kernel on a stream's worker thread throwing on a request's bad data), so that the failure
// reaches the one request whose work it was and nothing else. Work enqueued on a stream while a
// scope is set on it (Stream::set_failure_scope) belongs to that scope: the scope keeps the first
// failure, and its work not yet started is skipped from then on (events are still reached, so
// waits and the memory pool's release_after() carry on). Launches that fail as they are made
// (every launch on a synchronous stream) throw instead and leave the scope untouched. Thread-safe.
class FailureScope {
 public:
  // Keeps `error` unless a failure is kept already.
  void fail(std::exception_ptr error) noexcept;
  bool failed() const noexcept { return failed_.load(std::memory_order_acquire); }
  // The first failure, or null.
  std::exception_ptr failure() const;

 private:
  mutable std::mutex mutex_;
  std::exception_ptr failure_;
  std::atomic<bool> failed_{false};
};

// An ordered queue of device work. CUDA streams run asynchronously to the host; the CPU backend's
// streams run each call to completion before returning, unless they were given a thread share
// with stream workers on (HostThreading): then they run their work on a worker thread of their own.
class Stream {
 public:
  virtual ~Stream() = default;
  // Copies are ordered with the stream's other work. For asynchronous backends the host memory
  // must stay valid until the stream has passed the copy.
  virtual void copy_to_device(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void copy_on_device(void* dst, const void* src, std::size_t bytes) = 0;
  // `rows` rows of `row_bytes` each, from `src` (rows `src_pitch` bytes apart) to `dst` (rows
  // `dst_pitch` apart), on the device: a slice of a tensor along any axis in one call. Default: one
  // copy_on_device per row; a backend overrides it with a single strided copy.
  virtual void copy_on_device_2d(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch,
                                 std::size_t row_bytes, std::size_t rows);
  virtual std::unique_ptr<Event> record() = 0;
  // As record(), but the event carries a timestamp (CUDA timing events cost a little more).
  virtual std::unique_ptr<Event> record_timed() = 0;
  virtual void wait(Event& event) = 0;  // later work on this stream starts after `event`
  virtual void synchronize() = 0;
  virtual void* native_handle() noexcept { return nullptr; }  // cudaStream_t on CUDA

  // Work enqueued from now on belongs to `scope` (nullptr: to none), until the next call; see
  // FailureScope. Default: ignored, for streams whose launches report their errors as they are
  // made. A failure of work that belongs to no scope is rethrown by the next synchronize().
  virtual void set_failure_scope(std::shared_ptr<FailureScope> scope) { (void)scope; }
  // The share of the device this stream's kernels may use, the CPU analogue of an SM partition:
  // on a backend that computes on the host (Backend::host_threads() > 0), `threads` threads for
  // each kernel (0 = the backend's count), and with stream workers on (HostThreading), a worker
  // thread of its own that runs the stream's work asynchronously from this call on (make that
  // first call before other threads use the stream). Later calls may come from any thread: a new
  // share applies from the stream's next kernel. Default: ignored.
  virtual void set_thread_share(std::size_t threads) { (void)threads; }

  // Graph capture, on backends whose supports_graphs() is true (others throw Error(unsupported)).
  // Between begin_capture() and end_capture(), work the calling thread enqueues on this stream is
  // recorded, not run; other threads and other streams are unaffected. Only kernel launches and
  // stream-ordered copies belong inside: no record()/wait()/synchronize() on this stream.
  virtual void begin_capture();
  // Ends the capture and returns the recorded work ready to launch, or nullptr when something
  // inside could not be recorded (or the graph could not be instantiated). Either way the stream
  // is capturing no more and usable, nothing recorded has run, and the error is cleared. Safe to
  // call after an exception thrown while capturing. Throws only for a sticky device error.
  virtual std::unique_ptr<Graph> end_capture();
};

// What a kernel is created from. Shapes and dtypes are static: the planner inferred them.
struct TensorDesc {
  DType dtype = DType::f32;
  Shape shape;
  bool present = true;  // false for an omitted optional input (ONNX empty name)
};

class Backend;

struct KernelSpec {
  const Node* node = nullptr;  // op_type, name, attributes
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  // For each input, its host value when it is an initializer (weights, shape tensors), else
  // nullptr. Kernels may read these at creation; at run time the device copy is passed.
  std::vector<const Tensor*> constants;
  // The most SMs a persistent (cooperative) kernel of this op may hold, one block each; 0 = no cap
  // (LoadOptions::persistent_grid_max_sms). Read by the CUDA LSTM/GRU device loop.
  int persistent_grid_max_sms = 0;
  // The backend creating the kernel, set by Backend::create_kernel(): a kernel that runs a
  // subgraph (If, Loop, Scan) creates its body's kernels and memory through it.
  Backend* backend = nullptr;
  // Set when the planner stores every float value in one dtype on the device (the compute dtype,
  // f32 or f16); a kernel that lays out values of its own (a subgraph's) stores its floats so.
  // Unset (constant folding on the host): every value keeps its model dtype.
  std::optional<DType> device_float_dtype;
};

// Pausing inside a long op (MISSION.md §3, issue 7): a device loop over many iterations (the time
// steps of an LSTM or GRU) polls a flag after each iteration; when the host has set it, the loop
// saves what it carries from one iteration to the next into request-owned device memory, reports
// how far it got and returns. A later run resumes from that iteration. Results after any number of
// pauses are bit-identical to an uninterrupted run: the same float operations in the same order.
//
// How far a resumable run got, written by the kernel into device memory before the run ends (the
// host reads it back once the run has completed on its stream).
struct ResumeProgress {
  std::int32_t next_iteration = 0;  // iterations done so far, counting those of earlier runs
  std::int32_t paused = 0;          // 1: stopped at next_iteration < total; 0: finished
};

// Everything a resumable run needs beyond run()'s arguments. Pointers are device addresses.
struct ResumeContext {
  // At least resume_state_bytes() of request-owned device memory, kept unchanged by the caller
  // between a paused run and its resumption (the model's workspace is not: other requests use it).
  void* state = nullptr;
  // 0: start from the beginning (state is not read); otherwise the next_iteration a paused run
  // reported, with the state and the op's outputs as that run left them.
  std::int32_t start_iteration = 0;
  // Polled after each iteration but the last; nonzero asks the run to pause there. Readable by
  // the device while the kernel runs (mapped pinned host memory on CUDA, plain host memory on the
  // CPU; see Backend::create_pause_flag). nullptr: never pause.
  const volatile std::int32_t* pause = nullptr;
  // Device memory for the kernel's report; always written, paused or not.
  ResumeProgress* progress = nullptr;
};

// A word the host sets and a running device loop polls: "pause after your current iteration".
// Set and cleared from any host thread (atomically); kernels read device_address().
class PauseFlag {
 public:
  virtual ~PauseFlag() = default;
  PauseFlag(const PauseFlag&) = delete;
  PauseFlag& operator=(const PauseFlag&) = delete;

  void set() noexcept { __atomic_store_n(host_, 1, __ATOMIC_RELEASE); }
  void clear() noexcept { __atomic_store_n(host_, 0, __ATOMIC_RELEASE); }
  bool is_set() const noexcept { return __atomic_load_n(host_, __ATOMIC_ACQUIRE) != 0; }
  // The address a kernel polls (ResumeContext::pause).
  const volatile std::int32_t* device_address() const noexcept { return device_; }

 protected:
  // `host` and `device` name the same word (equal on the CPU; mapped pinned memory on CUDA).
  PauseFlag(volatile std::int32_t* host, const volatile std::int32_t* device) noexcept : host_(host), device_(device) {}

 private:
  volatile std::int32_t* host_;
  const volatile std::int32_t* device_;
};

// How a host-side device loop polls ResumeContext::pause: one atomic load (no tearing, no data
// race with PauseFlag::set on another thread).
inline bool pause_requested(const volatile std::int32_t* pause) noexcept {
  return pause != nullptr && __atomic_load_n(pause, __ATOMIC_ACQUIRE) != 0;
}

// One op of one model on one backend, created once at load. run() is called for every request.
class OpKernel {
 public:
  explicit OpKernel(const KernelSpec& spec);
  virtual ~OpKernel() = default;
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  // Device scratch bytes run() needs (e.g. cuDNN workspace, LSTM gate buffers).
  virtual std::size_t workspace_bytes() const { return 0; }

  // Whether run()'s work can be recorded into a Graph (Stream::begin_capture) and replayed. False
  // for a kernel whose run() reads device data on the host (control flow deciding on a condition
  // that comes with the request): a replay would repeat the first request's decision.
  virtual bool capturable() const noexcept { return true; }

  // Checks the pointer counts against the spec, then runs. `inputs[i]` is nullptr for an absent
  // optional input. `workspace` holds at least workspace_bytes(). Enqueued on `stream`.
  void run(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace, Stream& stream);

  // Resumable kernels (a device loop that can pause inside, see ResumeContext). Default: not
  // resumable, no state, no iterations.
  virtual bool resumable() const noexcept { return false; }
  // Request-owned device bytes ResumeContext::state must hold.
  virtual std::size_t resume_state_bytes() const { return 0; }
  // Iterations of a whole run (ResumeProgress::next_iteration when it finishes).
  virtual std::int32_t resume_iterations() const { return 0; }

  // As run(), resumable: starts at context.start_iteration, polls context.pause and writes
  // *context.progress. With start_iteration 0 and no pause it computes exactly what run() does.
  // Throws Error(internal) for a kernel that is not resumable(), a missing state or progress
  // pointer or a start_iteration outside [0, resume_iterations()).
  void run_resumable(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                     const ResumeContext& context, Stream& stream);

  const std::string& op_type() const noexcept { return op_type_; }
  const std::string& node_name() const noexcept { return node_name_; }

 protected:
  virtual void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                        Stream& stream) = 0;
  // Called only for resumable() kernels, with the context checked.
  virtual void run_resumable_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                                  const ResumeContext& context, Stream& stream);

 private:
  std::string op_type_;
  std::string node_name_;
  std::size_t input_count_;
  std::size_t output_count_;
};

// Kernel fusion, decided at load (docs/architecture.md, "Kernel fusion"). Before it creates the
// kernel of a Step's anchor (the Conv, MatMul... that opens the Step), the runtime offers the
// backend that node and the Step's nodes after it; the backend may claim the anchor together with
// some of those nodes and return one kernel that computes them all (a Conv with its bias, SiLU and
// residual Add). What a backend fuses is its own choice; by default it fuses nothing. The plan is
// unchanged: the same Steps, nodes and values, so a device that fuses and one that does not (the
// debug mode's CPU reference) can still be compared Step by Step.
struct FusionNode {
  KernelSpec spec;
  std::vector<int> inputs;   // value ids (opaque to the backend), -1 for an absent input
  std::vector<int> outputs;  // value ids, -1 for an absent output
  bool view = false;         // aliases its input (Reshape, Flatten): runs nothing, cannot be claimed
};

struct FusionCandidate {
  // nodes[0]: the anchor whose kernel is being created; then the Step's nodes after it, in order.
  std::vector<FusionNode> nodes;
  // Values read after the Step (by later Steps, or graph outputs).
  std::vector<int> read_after_step;

  // Whether value `id` must be written by a kernel computing `members` (indices into nodes): a node
  // that is not a member reads it, or it is read after the Step.
  bool needed_outside(int id, std::span<const std::size_t> members) const;
};

// One kernel computing several nodes of a FusionCandidate, run where nodes[0] would run. Its run()
// takes every member's inputs, member after member (absent ones as nullptr), and every member's
// outputs likewise. It writes each output FusionCandidate::needed_outside names and may leave the
// others unwritten: the runtime treats those as values no kernel writes (the debug mode does not
// compare them).
struct FusedKernel {
  std::unique_ptr<OpKernel> kernel;
  std::vector<std::size_t> members;  // increasing, members[0] == 0
};

// Throws Error(internal) unless `fused` is a claim the runtime can run: members start at 0,
// increase, name no view and no node twice, and every member's inputs are ready where the kernel
// runs (no node of the candidate outside the members writes one of them).
void check_fused_kernel(const FusionCandidate& candidate, const FusedKernel& fused);

// A co-running load for interference measurements (loom-profile): compute-saturating or
// bandwidth-saturating work on its own stream, running until stop() or destruction.
enum class ProbeKind { compute, memory };
class Probe {
 public:
  virtual ~Probe() = default;
  virtual void stop() = 0;  // returns once the probe's work has left the device
};

// What a backend can do. Callers ask these instead of which backend it is, so a new backend is
// one registration (open_backend.hpp) and one answer here, not a branch in every caller.
struct Capabilities {
  // Kernel launches return only once their work is done (the CPU backend runs each call to
  // completion on the calling thread); false: launches are queued and run asynchronously (CUDA;
  // the CPU backend with stream workers, whose streams given a share run on their own threads).
  bool synchronous_launches = true;
  // A device apart from the host, with memory of its own and copies across a link (a GPU): the
  // profiler sizes its peak measurements for it.
  bool accelerator = false;
  // Runs models in f16 (ExecutorOptions::compute_dtype = f16).
  bool f16_compute = false;
  // Streams can record work as a Graph (Stream::begin_capture).
  bool graphs = false;
};

// How a backend that runs its kernels on the host's cores (the CPU backend) uses them; backends
// whose kernels run on a device of their own ignore it.
struct HostThreading {
  // Threads one kernel may use (intra-op parallelism); 0 = the cores this process may use.
  std::size_t threads = 0;
  // Streams given a share (Stream::set_thread_share) run their work on a worker thread of their
  // own, asynchronously to their callers, so that two streams' kernels run at the same time on
  // different cores; capabilities().synchronous_launches is then false. Off: every call runs to
  // completion on the calling thread (the reference mode).
  bool stream_workers = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Sets how kernels use the host's cores; applies to the streams created after the call (make
  // it before creating any). Default: ignored.
  virtual void set_host_threading(const HostThreading& threading) { (void)threading; }
  // Threads a kernel of this backend may use (HostThreading::threads resolved); 0 for a backend
  // whose kernels do not run on the host.
  virtual std::size_t host_threads() const noexcept { return 0; }
  virtual Capabilities capabilities() const noexcept = 0;
  virtual std::string name() const = 0;         // as device strings spell it: "cpu" | "cpu:accel" | "cuda"
  virtual std::string device_name() const = 0;  // e.g. "NVIDIA H100 80GB HBM3"
  // Peak figures for roofline estimates.
  virtual double peak_flops(DType dtype) const = 0;  // FLOP/s
  virtual double peak_bandwidth() const = 0;         // bytes/s of device memory
  virtual std::size_t onchip_bytes() const = 0;      // L2 (GPU) or last-level cache (CPU)

  // Creates the kernel for spec.node; throws Error(unsupported) naming node and op for an op,
  // dtype or attribute this backend does not implement, Error(shape_mismatch) for bad shapes.
  virtual std::unique_ptr<OpKernel> create_kernel(const KernelSpec& spec) = 0;
  // Kernel fusion (FusionCandidate): one kernel for candidate.nodes[0] and some nodes after it, or
  // nullopt to create nodes[0]'s kernel alone with create_kernel(). Throws what create_kernel()
  // throws. Default: nullopt (no fusion).
  virtual std::optional<FusedKernel> create_fused_kernel(const FusionCandidate& candidate);
  // priority: 0 = normal; higher = more urgent (mapped to CUDA stream priorities).
  virtual std::unique_ptr<Stream> create_stream(int priority = 0) = 0;
  // Raw device memory, 256-byte aligned; throws Error(out_of_memory). Used by the memory pool.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* ptr) noexcept = 0;
  // Host memory the device copies from and to fastest (pinned on CUDA).
  virtual void* allocate_host(std::size_t bytes) = 0;
  virtual void deallocate_host(void* ptr) noexcept = 0;
  // A pause flag for resumable kernels (ResumeContext::pause). Default: a plain host word, right
  // for backends whose kernels run on the host (the CPU); a device backend whose kernels are
  // resumable overrides it with memory the device reads while a kernel runs (mapped pinned).
  virtual std::unique_ptr<PauseFlag> create_pause_flag();
  // Whether streams can record work as a Graph (Stream::begin_capture): capabilities().graphs.
  bool supports_graphs() const noexcept { return capabilities().graphs; }
  // Starts a probe; nullptr when this backend has none (the CPU backend).
  virtual std::unique_ptr<Probe> start_probe(ProbeKind) { return nullptr; }
  // Converts `count` elements between float dtypes (f32 <-> f16 <-> bf16) on the device.
  virtual void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
                       Stream& stream) = 0;
};

std::unique_ptr<Backend> make_cpu_backend();
// Throws Error(backend) when the device cannot be opened or the CUDA backend is not built.
std::unique_ptr<Backend> make_cuda_backend(int device);
// CUDA devices present: 0 without the CUDA backend, without a driver or without a GPU. Never throws.
int cuda_device_count() noexcept;

// Short form for kernels: throws Error(unsupported) "<op> node '<name>': <what>".
[[noreturn]] void throw_unsupported(const KernelSpec& spec, const std::string& what);
[[noreturn]] void throw_bad_shape(const KernelSpec& spec, const std::string& what);

// Runs `parse`, one of the attribute parsers the kernels share with shape inference
// (src/graph/ops/: conv_window, resize_geometry, shape_geometry...), and rethrows its Error naming
// the node: Error(unsupported) stays unsupported, every other code becomes shape_mismatch, as the
// kernels' own checks report.
template <class Parse>
decltype(auto) parse_for_node(const KernelSpec& spec, Parse&& parse) {
  try {
    return parse();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::unsupported) throw_unsupported(spec, e.what());
    throw_bad_shape(spec, e.what());
  }
}

// The values of constant input `index` (an i64 or i32 initializer: axes, starts, K, repeats...)
// as int64; Error(unsupported) naming node, op and `role` when it is absent or not constant.
std::vector<std::int64_t> constant_ints(const KernelSpec& spec, std::size_t index, const char* role);

}  // namespace loom::backend
