// The Executor: loads models once, then runs requests for all of them through a pipeline of
// pre-process, execute and post-process stages, each on its own thread. Priority, StepInfo and
// ModelInfo are in loom/model_info.hpp (included).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loom/debug.hpp"
#include "loom/model.hpp"
#include "loom/model_info.hpp"
#include "loom/placement_types.hpp"
#include "loom/policy.hpp"
#include "loom/stats.hpp"
#include "loom/tensor.hpp"
#include "loom/trace.hpp"

namespace loom {

namespace runtime {
struct ExecutorTestHooks;  // a test seam (src/runtime/executor_test_hooks.hpp), not public API
}

// Threads of the host stages (MISSION.md §4: the operator re-balances threads per stage so stage
// times match and the device never waits). The execute stage is the dispatcher: one thread, since it
// alone decides the order of Steps.
struct StageThreadOptions {
  std::size_t pre_process = 1;   // threads converting inputs and copying them in (>= 1)
  std::size_t post_process = 1;  // threads copying outputs out, converting back, completing (>= 1)
  // Automatic re-balancing: every rebalance_interval_ms, each host stage's busy time per request
  // over the interval is measured; the stage that limits throughput (the largest busy time per
  // request per thread) gets another thread while pre + post < thread_budget, else one from the
  // other stage when that stage would still keep up. Decisions: ExecutorStats::rebalances.
  bool automatic = false;
  std::size_t thread_budget = 0;  // pre + post at most; 0 = the cores this process may use (at least 2)
  double rebalance_interval_ms = 200;
};

struct ExecutorOptions {
  // "auto" (CUDA when a GPU is present, else CPU), "cpu", "cuda" or "cuda:N"; "cpu:accel" is a
  // second CPU backend standing in for an accelerator, for tests and debugging.
  std::string device = "auto";
  // A name from policy_names(), and the idle-time policy's tuning (window, starvation limit,
  // blocks).
  std::string policy = "fifo";
  PolicyOptions policy_options;
  // A policy of your own (a SchedulingPolicy subclass) instead of a named one: when set, `policy`
  // and `policy_options` are ignored. The executor calls it from its dispatcher thread only, for as
  // long as it runs; one object must not serve two running executors at once.
  std::shared_ptr<SchedulingPolicy> custom_policy;
  // CPU backend (device "cpu" or "cpu:accel", and debug = cpu): the threads a kernel may use for
  // its large loops (small ones stay on one thread); 0 = the cores this process may use. Results
  // are bit-identical for every count. Ignored by CUDA.
  std::size_t cpu_threads = 0;
  // CPU backend: give each model's stream a worker thread of its own and a share of cpu_threads
  // (an equal share, at least 1, recomputed as models load), so that Steps of different models
  // run at the same time on different cores: the CPU analogue of SM partitions. Launches then
  // return before their work is done, as on a GPU, and the policies see Steps overlap
  // (AcceleratorState::steps_overlap); a model running alone uses only its share. Off (the
  // default, and the reference): the dispatcher runs each Step itself, one at a time, on all
  // cpu_threads. docs/cpu-threads.md. Ignored by CUDA.
  bool cpu_stream_shares = false;
  // Precision of weights and activations on the device: f32, or f16 (CUDA only). Requests are
  // always given and returned in the model's own dtypes; the pre/post stages convert.
  DType compute_dtype = DType::f32;
  // Requests each pipeline queue holds before submit() blocks.
  std::size_t queue_capacity = 64;
  // Steps launched on the device and not yet finished, across all models. Not applied under a
  // policy that is not bounded() (the "streams" baseline launches everything at once).
  std::size_t max_inflight_steps = kDefaultMaxInflightSteps;
  // Device profile with measured Step costs: "auto" (find_profile() for this device), "none", or
  // a path to a profile JSON file (an unreadable file is an Error(invalid_argument)).
  std::string profile = "auto";
  // Function library for the placement pass (loom/placement.hpp, docs/placement.md): "auto"
  // (find_function_library() for this device, else the built-in defaults), "defaults", or a path
  // to a library JSON file (an unreadable file is an Error(invalid_argument)).
  std::string function_library = "auto";
  // Record a timeline (timed events around every Step and copy, scheduling decisions, request
  // lives); read it with Executor::timeline(). Off by default: timing events cost a little.
  bool record_timeline = false;
  // CUDA: replay each Step's kernels as a CUDA graph (captured on first use per request arena),
  // falling back to plain launches for a Step whose capture fails. Ignored on the CPU.
  bool cuda_graphs = true;
  // Cancellation points (MISSION.md §3), chosen per model at load: Step boundaries where the
  // request's live bytes are at most cancellation_max_live_bytes (0 = no bound), at least one per
  // cancellation_interval_us of estimated time where the model has such boundaries. Lower-priority
  // work pauses only there, and inside Steps that can pause inside (StepInfo::pausable_inside):
  // after any iteration of their device loop, resuming from the next one. A request paused inside
  // a Step keeps its arena (it is never dumped). preemption = false turns pausing off (priority
  // then only orders waiting requests).
  bool preemption = true;
  double cancellation_interval_us = 1000;
  std::uint64_t cancellation_max_live_bytes = 0;
  // Device memory the request arenas may hold together (0 = no limit beyond the device's own).
  // When an urgent request's arena does not fit, paused lower-priority requests have their live
  // buffers dumped to pinned host memory and their arenas freed; they are restored before
  // resuming.
  std::uint64_t arena_memory_limit_bytes = 0;
  // Threads per host stage, fixed or re-balanced automatically. A count of 0, or a thread budget
  // below the starting counts, is Error(invalid_argument).
  StageThreadOptions stage_threads;
  // Time every Step and copy on the device (two timed events each) for the stage figures of
  // stats() and each request's RequestTimes. Off (and record_timeline off too): device and copy
  // stages report no busy time and a request's time is all counted as compute.
  bool stage_timing = true;
  // NVTX: besides a range per request and per Step ("model/step"), one per op inside each Step
  // ("model/node (Op)"), for Nsight. Host ranges around each kernel's launch: with CUDA graphs on, a
  // replayed Step shows only its Step range (turn graphs off to see every op's launch).
  bool nvtx_op_ranges = false;
  // Serve stats() in Prometheus text format at http://metrics_address:metrics_port/metrics from
  // the constructor until shutdown(), on threads of its own (cpp-httplib); 0 = off. Metric names
  // and meanings: docs/metrics.md. A port outside 0..65535, one already in use, or an address this
  // host cannot listen on is Error(invalid_argument) from the constructor, naming the port and
  // the address.
  int metrics_port = 0;
  std::string metrics_address = "127.0.0.1";
  // Debug mode (loom/debug.hpp). cpu: the models run on the CPU backend in f32 instead of `device`
  // (compute_dtype is ignored). compare: they run on `device` and, Step by Step, on a CPU reference
  // in f32 too; the first Step of each request whose outputs differ beyond debug_tolerance is
  // reported by debug_report(), and the request still completes with the device's outputs. Each
  // comparison waits for the device and runs the Step on the CPU: a debugging aid, not for speed.
  DebugMode debug = DebugMode::off;
  // compare: |device - cpu| <= abs + rel * |cpu|; unset: default_debug_tolerance(compute_dtype).
  // A negative or non-finite bound is Error(invalid_argument).
  std::optional<DebugTolerance> debug_tolerance;
};

// How Executor::load() prepares a model: its name and the optimize() options (shapes for
// symbolic dimensions, inputs fixed at load, which passes run).
struct LoadOptions {
  std::string name;  // default: model.name
  OptimizeOptions optimize;
  // Symbolic input dims left open until a request arrives, by dim name (ValueInfo::dim_params),
  // with the sizes requests may give them (docs/placement.md, "Shapes that stay symbolic"). Each
  // request's sizes are checked at submit; its shape's plan is made on first use (the graph
  // optimized for those sizes: the shape subgraphs evaluated on the CPU, Steps compiled, kernels
  // created) and reused by later requests of that shape. Weights are uploaded once, with the plan
  // at opt; every request's arena is sized for the largest plan. Symbolic dims not named here are
  // bound as optimize says. load() throws Error(invalid_argument) naming the dim for a name no
  // input carries, a size < 1, min > opt or opt > max, a dim also bound in optimize, and
  // Error(unsupported) with pre_process (the transform decides the shapes after submit) or with
  // ExecutorOptions::debug = compare (one CPU twin per model, not per shape).
  std::map<std::string, DimRange> dim_ranges;
  // Priority of the model's stream: 0 = normal, higher = more urgent (CUDA stream priorities;
  // the device then favours this model's kernels). Ignored on the CPU.
  int stream_priority = 0;
  // CUDA: the most SMs a persistent kernel of this model may hold, one thread block each; 0 = no
  // cap, and so is the device's SM count or more. An LSTM or GRU node on the device loop runs its
  // whole sequence as one cooperative launch that, uncapped, takes about every SM until the
  // sequence ends or pauses: other models' kernels on other streams get only the SMs it leaves,
  // and the scheduler cannot preempt it except at its pause points. A cap leaves SMs to them at
  // the cost of a slower loop (fewer blocks, each with more hidden units; the weights may no
  // longer fit on chip and are then read through L2 every step). A cap too small for the hidden
  // size sends the node to the per-step path. Negative: Error(invalid_argument). Ignored on the CPU.
  int persistent_grid_max_sms = 0;
  // The placement pass (MISSION.md §2, docs/placement.md): each node classified tensor or scalar
  // work and placed on a processor by the source text's rule with thresholds th1/th2, from the
  // executor's function library; the result is ModelInfo::placement. Advisory unless
  // placement.execute: then each Step runs on the processor chosen for its nodes, with copies
  // between processors in the plan. A processor that cannot be opened, or a threshold that is not
  // a number, is Error(invalid_argument) from load().
  PlacementOptions placement;
  // The application's formats (MISSION.md §4): pre_process turns a request's tensors as submitted
  // into the model's inputs, post_process the model's outputs into what the caller receives. They
  // run on the host stages' threads (StageThreadOptions), so they overlap other requests' device
  // work, possibly on several threads at once. With pre_process set, submit() checks only the
  // model's name, and the inputs it produces are checked after it: a wrong count, dtype or shape
  // fails that request (through its future or callback) naming the input. An exception thrown by
  // either fails the request with Error(invalid_argument) carrying its message.
  std::function<void(std::vector<Tensor>& inputs)> pre_process;
  std::function<void(std::vector<Tensor>& outputs)> post_process;
};

struct RequestOptions {
  Priority priority = Priority::normal;
  // Optional: a request that has not started its first Step by then fails with
  // Error(deadline_exceeded) instead of running; one that has started runs to the end.
  // The default (the clock's epoch) means no deadline.
  std::chrono::steady_clock::time_point deadline{};
};

using Outputs = std::vector<Tensor>;
using Callback = std::function<void(std::exception_ptr error, Outputs outputs)>;
// As Callback, with the request's latency split into phases (a failed request's as far as it got).
using TimedCallback = std::function<void(std::exception_ptr error, Outputs outputs, const RequestTimes& times)>;

class Executor {
 public:
  // Throws Error(invalid_argument) for an unknown device or policy or a bad debug setting,
  // Error(backend) when the requested device cannot be opened.
  explicit Executor(ExecutorOptions options = {});
  ~Executor();  // finishes accepted requests, then stops the stage threads
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Compiles `model` into Steps, uploads its weights once and gives it a stream. The model is
  // known by `name` (default: model.name). Throws Error(invalid_argument) for a duplicate name and
  // the compile errors of infer_shapes() and of the backend (unsupported ops).
  void load(const Model& model, std::string name = "");
  // As above, with options. Every model goes through optimize() first; a model with symbolic
  // input dimensions needs them bound here (or takes OptimizeOptions::default_dim_value), or
  // left open within LoadOptions::dim_ranges.
  void load(const Model& model, const LoadOptions& options);
  std::vector<std::string> models() const;
  ModelInfo model_info(const std::string& name) const;

  // Queues a request. Inputs are checked here: a wrong count, dtype or shape, an unknown model or
  // a call after shutdown() throws loom::Error and nothing is queued. For a model loaded with
  // dim_ranges, a size outside its dim's range, or two inputs giving one dim different sizes, is
  // Error(shape_mismatch) naming the input, axis, dim and range; the first request of a new shape
  // makes that shape's plan here, on the calling thread (its errors are thrown here too). Failures while running
  // (e.g. out of memory) arrive through the future. Blocks while the first queue is full.
  std::future<Outputs> submit(const std::string& model, std::vector<Tensor> inputs, RequestOptions options = {});
  // As above, but `done` is called on the post-process thread with an error or the outputs.
  void submit(const std::string& model, std::vector<Tensor> inputs, Callback done, RequestOptions options = {});
  // As above, with the request's RequestTimes.
  void submit(const std::string& model, std::vector<Tensor> inputs, TimedCallback done, RequestOptions options = {});

  // Stops accepting requests and waits for every accepted one to finish. Idempotent.
  void shutdown();

  std::string device_name() const;   // e.g. "cpu", "NVIDIA H100 80GB HBM3"; notes a debug mode
  std::string backend_name() const;  // "cpu", "cpu:accel" or "cuda"
  std::string policy_name() const;
  ExecutorStats stats() const;
  // The profile in use ("none" when Step costs are roofline estimates) and the peak figures the
  // estimates use.
  std::string profile_path() const;
  // A copy of what was recorded so far (empty unless ExecutorOptions::record_timeline).
  Timeline timeline() const;
  // What the debug mode found so far: with debug = compare, each model's summary and the first
  // divergence of each divergent request; otherwise only the mode and the device.
  DebugReport debug_report() const;

 private:
  friend struct runtime::ExecutorTestHooks;
  struct Impl;
  explicit Executor(std::unique_ptr<Impl> impl) noexcept;
  std::unique_ptr<Impl> impl_;
};

// Number of CUDA devices this build can use: 0 without the CUDA backend or without a GPU.
int cuda_device_count() noexcept;

// The library version, "major.minor.patch".
const char* version() noexcept;

}  // namespace loom
