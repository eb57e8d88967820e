// The accelerator simulator (MISSION.md §1): a deterministic discrete-event model of a device with
// a compute resource, a memory-access resource and a limited on-chip capacity, driven by the same
// SchedulingPolicy objects as the executor, so a schedule can be tested exactly without a GPU.
//
// The model. Each Step of a request has a memory phase (memory_us on the memory resource: bringing
// its weights and inputs on chip) followed by a compute phase (compute_us on the compute resource).
// At every scheduling point the policy picks one candidate — the next Step of each live request —
// and that Step is dispatched:
//   - its memory phase starts when the memory resource is free and on-chip capacity holds its
//     onchip_bytes (reserved at memory start, released at its compute end); while capacity is
//     short the memory resource waits (memory idle);
//   - its compute phase starts when its memory phase has ended, the compute resource is free and
//     the request's previous Step has finished computing (compute idle otherwise).
//   - a Step whose onchip_bytes exceed the capacity is split into tiles by the planner's rule
//     (plan::tile_step; SimOptions::tile_buffers) and runs them in order, each a memory phase then
//     a compute phase as above, so the next tile's load overlaps this tile's compute where the
//     capacity holds both.
// Both resources serve Steps in dispatch order. A scheduling point occurs each time the memory
// resource can take the next Step; a request is live from its arrival time until its last Step is
// dispatched, and its next Step is a candidate as soon as the one before it is dispatched (so a
// Step's load may overlap the compute of its predecessor). When no request is live at a
// scheduling point, time jumps to the next arrival. Candidates are offered in arrival order
// (request_id: position in arrival order, ties in list order). docs/simulator.md has the details.
//
// Priorities and preemption (MISSION.md §3; docs/simulator.md, "Priorities and preemption"):
// priority decides which requests may be candidates, the policy the order among them. With
// preemption on, a started lower-priority request stops at its next cancellation point (a Step
// boundary chosen by sched::choose_cancellation_points) while higher-priority work is live; if
// device memory is short, its live bytes are dumped over the host link and restored before it
// resumes.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "loom/model.hpp"
#include "loom/model_info.hpp"
#include "loom/policy.hpp"
#include "loom/tensor.hpp"
#include "loom/trace.hpp"

namespace loom::sim {

// --- The GPU device model (loom-sim --device-model gpu; docs/simulator.md, "The GPU model") ---

// A GPU as the model sees it, from published specifications (profiles/gpu/*.json name theirs).
struct GpuDevice {
  std::string name;    // e.g. "h100-sxm"
  std::string source;  // where the figures come from (datasheet, whitepaper, CUDA guide table)
  int sm_count = 0;
  // Per SM (the CUDA occupancy calculator's inputs, compute capability table of the CUDA guide).
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  int registers_per_sm = 65536;
  int register_allocation_unit = 256;  // registers, per warp
  int max_registers_per_thread = 255;
  std::uint64_t shared_bytes_per_sm = 0;                 // usable by blocks (the opt-in carve-out)
  std::uint64_t shared_bytes_per_block_max = 0;          // opt-in maximum of one block
  std::uint64_t shared_bytes_reserved_per_block = 1024;  // the driver's reserve per resident block (sm_80+)
  int max_threads_per_block = 1024;
  int warp_size = 32;
  // Throughput of the whole GPU (FLOP/s, dense) and of its DRAM (bytes/s).
  double peak_flops_f32 = 0;  // FP32 on the CUDA cores (non-tensor)
  double peak_flops_f16 = 0;  // FP16 tensor cores, dense
  double dram_bytes_per_s = 0;
  // L2 cache: the on-chip capacity the policy's estimate is given, as the executor gives the
  // CUDA backend's (CudaBackend::onchip_bytes). The model itself counts every access as DRAM.
  std::uint64_t l2_bytes = 0;
  // One SM can draw at most this many times its even share (dram_bytes_per_s / sm_count) of the
  // DRAM bandwidth: a kernel on fewer SMs than this many times fewer still saturates DRAM.
  // An estimate (documented in profiles/gpu/README.md); gpu-check's calibration corrects it.
  double sm_bandwidth_share = 2.0;
  // Host time of one kernel launch and of one CUDA graph launch (a Step replayed as a graph),
  // and the device-side delay from a launch's end to its first block.
  double launch_us = 2.5;
  double graph_launch_us = 2.5;
  double launch_latency_us = 1.0;
};

// One kernel launch as the model runs it.
struct KernelSpec {
  std::string name;
  std::uint32_t blocks = 0;               // grid size (all dims multiplied)
  std::uint32_t threads_per_block = 256;  // block size
  std::uint32_t registers_per_thread = 32;
  std::uint64_t shared_bytes_per_block = 0;  // static + dynamic
  double flops = 0;                          // work of the whole grid
  std::uint64_t bytes = 0;                   // DRAM bytes read + written by the whole grid
  bool f16 = false;                          // its flops run at peak_flops_f16 (tensor cores)
  // A persistent cooperative kernel: starts only when all its blocks can be resident at once and
  // holds their SMs to its end (the recurrent device loops).
  bool cooperative = false;
};

// Blocks of `kernel` one SM can hold (the occupancy calculator: threads/warps, registers with
// their allocation unit, shared memory with the per-block reserve, the block limit); 0 when one
// block does not fit on an SM at all.
int blocks_per_sm(const GpuDevice& device, const KernelSpec& kernel);

// The GPU descriptions shipped in profiles/gpu/ (h100-sxm, h100-pcie, h200, a100-sxm, l4), by
// name, or a path to such a JSON file. Throws Error(invalid_argument) naming the file and field,
// or, for an unknown name, listing the known ones.
GpuDevice gpu_device(const std::string& name_or_path);
std::vector<std::string> gpu_device_names();
GpuDevice parse_gpu_device(std::istream& in, const std::string& source_name);

struct SimStep {
  std::string name;
  double compute_us = 0;
  double memory_us = 0;
  std::uint64_t onchip_bytes = 0;  // held on chip from its memory start to its compute end
  // Request bytes live at the boundary after this Step: what a pause there dumps and restores.
  // The model's largest value is each request's arena (device memory it holds while it runs).
  std::uint64_t live_bytes_after = 0;
  // Set on any Step of a model: that model's cancellation points are given (true = the boundary
  // after this Step is one; unset counts as false) instead of chosen by the rule. The boundary
  // after the last Step is never one.
  std::optional<bool> cancellation_point{};
  // The GPU model: the Step's kernels, launched in order on its model's stream. Empty: one kernel
  // derived from compute_us and memory_us (default_kernel()).
  std::vector<KernelSpec> kernels{};
};

struct SimModel {
  std::string name;
  std::vector<SimStep> steps;
};

struct SimRequest {
  std::string model;
  // When the request becomes live; with `follows`, the delay after that request finishes.
  double arrival_us = 0;
  // Higher runs first (loom::Priority: background -1, normal 0, urgent 1; any int is a class).
  int priority = 0;
  // Closed loop: the index of an earlier request in Workload::requests; this one arrives
  // arrival_us after that one's last compute ends (e.g. frames submitted back to back).
  std::optional<std::size_t> follows{};
  // Host (CPU) work before the request reaches the device, e.g. post-processing the output of the
  // request it follows. The request is submitted at arrival_us (with `follows`: that request's end
  // plus arrival_us), waits for the host CPU (one host stage at a time, first submitted first),
  // runs host_us on it and becomes live when that ends. 0 = none: live on submission.
  double host_us = 0;
};

struct Workload {
  std::vector<SimModel> models;
  std::vector<SimRequest> requests;
  std::uint64_t onchip_capacity_bytes = 0;  // 0 = unlimited
};

// How the simulated device treats priorities and memory.
struct SimOptions {
  // False: priority only decides which requests may start; a started request runs to its end.
  bool preemption = true;
  // The cancellation-point rule (sched::choose_cancellation_points) for models whose Steps do not
  // give their points: at least one point per this much estimated time, each Step counting
  // max(compute_us, memory_us) (its time alone on the device, its load overlapping the previous
  // compute), only at boundaries with live_bytes_after <= cancellation_max_live_bytes (0 = any).
  double cancellation_interval_us = 1000;
  std::uint64_t cancellation_max_live_bytes = 0;
  // Dump and restore speed of the host link in bytes per microsecond (25e3 = 25 GB/s).
  double host_link_bytes_per_us = 25e3;
  // Device memory the request arenas share (0 = unlimited). A request holds its model's largest
  // live_bytes_after from its arrival (when it fits then) or the decision that gives it memory to
  // its last compute end, except while dumped or given back (docs/simulator.md).
  std::uint64_t device_memory_bytes = 0;
  // The device model: unset, the source text's accelerator above; set, this GPU (docs/simulator.md,
  // "The GPU model": Steps become kernel launches on their model's stream, blocks share SMs by
  // occupancy and DRAM bandwidth by demand; on-chip capacity does not apply).
  std::optional<GpuDevice> gpu{};
  // GPU model: Steps launched and not yet finished, across all models, before the dispatcher
  // waits for the oldest unfinished one (ExecutorOptions::max_inflight_steps; an unbounded policy
  // such as "streams" launches everything at once).
  std::size_t max_inflight_steps = kDefaultMaxInflightSteps;
  // GPU model: each Step launched as one CUDA graph (GpuDevice::graph_launch_us) or kernel by
  // kernel (launch_us each), on the one host dispatcher thread.
  bool cuda_graphs = true;
  // The accelerator: a Step larger than onchip_capacity_bytes runs as tiles of at most
  // capacity / tile_buffers bytes each (plan::tile_step; 2 = double buffering). At least 1.
  std::uint64_t tile_buffers = 2;
};

// The kernel a Step without `kernels` becomes on `device`: flops = compute_us x peak_flops_f32,
// bytes = memory_us x dram_bytes_per_s (so alone on the GPU it lasts max(compute_us, memory_us)),
// one block of 256 threads and 32 registers per SM.
KernelSpec default_kernel(const SimStep& step, const GpuDevice& device);

// Kernels on the GPU model without a scheduler: each enters its stream's queue at at_us and
// starts once the kernel before it on that stream has finished; the block scheduler then places
// its blocks as docs/simulator.md describes. For the law tests and gpu-check's calibration.
struct GpuLaunch {
  KernelSpec kernel;
  int stream = 0;
  int priority = 0;  // stream priority: higher is dispatched first
  double at_us = 0;
};
struct GpuKernelRun {
  double start_us = 0;  // its first block starts
  double end_us = 0;    // its last block ends
};
std::vector<GpuKernelRun> simulate_kernels(const GpuDevice& device, const std::vector<GpuLaunch>& launches);
// `kernel` alone on an idle GPU: end - start of simulate_kernels with one launch.
double kernel_alone_us(const GpuDevice& device, const KernelSpec& kernel);

// One tile of a tiled Step (the accelerator, a Step larger than the on-chip capacity).
struct ScheduledTile {
  std::uint64_t onchip_bytes = 0;
  double memory_start_us = 0, memory_end_us = 0;
  double compute_start_us = 0, compute_end_us = 0;
};

// One dispatched Step in the schedule.
struct ScheduledStep {
  std::size_t request = 0;  // index into Workload::requests
  std::size_t step = 0;
  double decided_us = 0;  // the scheduling point at which the policy chose it
  // A tiled Step: its first tile's memory start to its last tile's memory end, and likewise for
  // compute.
  double memory_start_us = 0, memory_end_us = 0;
  double compute_start_us = 0, compute_end_us = 0;
  std::vector<ScheduledTile> tiles;  // in order; empty for a Step that fits on chip whole
};

struct RequestResult {
  std::size_t request = 0;
  std::string model;
  int priority = 0;
  // arrival: when it became live on the device (after `follows` and its host stage); latency =
  // finish - arrival, the time on the device side only.
  double arrival_us = 0, start_us = 0, finish_us = 0, latency_us = 0;
  // When it was submitted and when its host stage began (both = arrival_us without host_us).
  double submitted_us = 0, host_start_us = 0;
};

// One pause of a started request at a cancellation point while higher-priority work ran.
struct Preemption {
  std::size_t request = 0;     // index into Workload::requests
  std::size_t after_step = 0;  // the boundary it paused at: after this Step
  double paused_at_us = 0;     // max(the first scheduling point it was held back at, that Step's compute end)
  double resumed_at_us = 0;    // the memory start of its next Step
  std::uint64_t bytes_dumped = 0, bytes_restored = 0;  // both 0, or both the live bytes at the point
  double dump_start_us = 0, dump_end_us = 0;           // on "sim:host-link"; 0 when not dumped
  double restore_start_us = 0, restore_end_us = 0;
};

// Latencies of a group of requests; nearest-rank percentiles (the value at rank ceil(p/100 * n)).
struct LatencySummary {
  std::size_t requests = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, max_us = 0;
};
LatencySummary summarize_latencies(std::vector<double> latencies_us);  // all zero when empty

struct SimResult {
  std::vector<ScheduledStep> schedule;  // in dispatch order
  std::vector<RequestResult> requests;  // in Workload::requests order
  double makespan_us = 0;               // first arrival to last compute end
  double compute_busy_us = 0, memory_busy_us = 0;
  double compute_idle_us = 0, memory_idle_us = 0;  // makespan minus busy
  double resource_bound_us = 0;                    // max(total compute, total memory)
  double chain_bound_us = 0;                       // max over requests of arrival + its model alone on the device
  double lower_bound_us = 0;                       // max of the two bounds (measured from the first arrival)
  std::vector<double> model_alone_us;              // per Workload::models: one request alone from time 0 to its end
  std::vector<Preemption> preemptions;             // in the order the pauses began
  double host_link_busy_us = 0;                    // dumps and restores
  double host_cpu_busy_us = 0;                     // host stages (SimRequest::host_us)
  SimOptions options;                              // what the run used
  // Tracks "sim:memory", "sim:compute", "sim:host-link", "sim:host-cpu", "host:scheduler",
  // "request:<model>".
  Timeline timeline;
};

// Runs `workload` under `policy`. Throws Error(invalid_argument) for a request naming an unknown
// model or a negative time (also: a tile_buffers of 0, a duplicate model
// name, a model without Steps, a non-finite time, a `follows` not naming an earlier request, a
// model arena larger than device_memory_bytes, a host-link rate that is not positive), naming the
// field; Error(internal) when the policy answers an index outside the candidates. Same input,
// same result.
SimResult simulate(const Workload& workload, SchedulingPolicy& policy, const SimOptions& options);
SimResult simulate(const Workload& workload, SchedulingPolicy& policy);  // default SimOptions

// One flag per Step of `model`: true when the boundary after it is a cancellation point — the
// Steps' own cancellation_point flags when any is set, else the rule of SimOptions.
std::vector<bool> cancellation_points(const SimModel& model, const SimOptions& options);
// The device memory a request of `model` holds while it runs: its largest live_bytes_after.
std::uint64_t arena_bytes(const SimModel& model);

// The workload file (docs/workload-format.md): JSON with "models", "requests" and optional
// "onchip_capacity_bytes". Throws Error(invalid_argument) naming the file and the field.
Workload read_workload(const std::string& path);
Workload parse_workload(std::istream& in, const std::string& source_name);

// The result as the JSON document loom-sim --json prints (docs/simulator.md lists the keys).
std::string result_json(const SimResult& result, const Workload& workload, const std::string& policy);

// `workload` as a workload file (one entry per request); parse_workload reads a valid workload
// with at least one request back equal.
std::string workload_json(const Workload& workload);

// --- Workloads from real models ---

// `models` compiled into Steps (the planner's, as the executor runs them) for a device computing
// in `compute_dtype` with these peak figures: each Step's roofline estimate, compute_us = FLOPs /
// peak_flops and memory_us = bytes read and written / peak_bandwidth; onchip_bytes = its working
// set; live_bytes_after from the memory plan (cancellation points left to the rule). SimModel
// names are Model::name. Throws Error(invalid_argument) for a peak that is not
// positive, and the errors of infer_shapes().
std::vector<SimModel> sim_models(const std::vector<Model>& models, DType compute_dtype, double peak_flops,
                                 double peak_bandwidth);

// The Steps an Executor compiled (Executor::model_info): the roofline estimates, except that a
// Step with a measured time (StepInfo::measured_us > 0, from the device profile) takes that time,
// split between memory and compute in proportion to its roofline memory_us and compute_us (all
// compute when both are 0), so the Step alone on the simulated device lasts what was measured.
// onchip_bytes = working_set_bytes; live_bytes_after and cancellation_point (set on every Step: the
// executor's points) as compiled.
SimModel sim_model(const ModelInfo& info);

// `per_model` requests of every model, the i-th request of each arriving at i * interval_us;
// listed by arrival, models in the given order at equal times.
std::vector<SimRequest> periodic_requests(const std::vector<SimModel>& models, std::size_t per_model,
                                          double interval_us);

}  // namespace loom::sim
