// A model as the runtime holds it: its compiled plan, one kernel per op on the executor's backend,
// its weights on the device (uploaded once), its kernels' shared scratch and its own stream.
// Executed across processors (AcrossProcessors), each processor it uses has its own stream, its
// kernels, the weights its Steps read, scratch, and per request an arena of the plan's layout.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/model_info.hpp"
#include "plan/compiled_model.hpp"
#include "profile/active_profile.hpp"
#include "runtime/across_processors.hpp"
#include "runtime/memory_pool.hpp"
#include "runtime/step_graphs.hpp"

namespace loom::runtime {

// Where a Step that paused inside stopped: the position, in the Step's node list, of the
// resumable kernel that paused, and the iteration it resumes from. The default is the Step's start.
struct StepCursor {
  std::size_t node = 0;
  std::int32_t iteration = 0;
  bool at_start() const noexcept { return node == 0 && iteration == 0; }
};

// Whether a model's kernels may fuse a Step's ops (Backend::create_fused_kernel). The debug mode's
// CPU reference loads with fusion off: one kernel per op, so it writes every value the device's
// Steps write, whatever the device fuses.
enum class KernelFusion { allowed, off };

class LoadedModel {
 public:
  // Compiles `model`, creates its kernels, uploads its weights (converted to the compute dtype)
  // and creates its stream. Throws what compile() and Backend::create_kernel() throw.
  // `peaks` are the figures the roofline estimates use: the device profile's, else the backend's.
  // `persistent_grid_max_sms` goes to every kernel (KernelSpec::persistent_grid_max_sms). With
  // fusion allowed, each Step's anchor is offered to Backend::create_fused_kernel with the rest of
  // its Step first.
  // With `shares_with` (another shape's plan of the same model, runtime/shape_plans.hpp), the new
  // plan runs on that plan's stream (stream_priority is then unused) and reads each weight that
  // plan holds with the same name, dtype, shape and bytes from that plan's block; only the others
  // (the constants folded for this shape) are uploaded. `shares_with` must outlive this object.
  // With `across` naming more than one processor (its handles[0] is `device` and `pool`), the plan
  // is split and copied across them (plan::compile) and each Step's kernels are created on its
  // processor's backend; the model then runs without graphs. The two do not combine (load()
  // refuses dim ranges with an executed placement).
  LoadedModel(const Model& model, std::string name, std::size_t index, DType compute_dtype, backend::Backend& device,
              MemoryPool& pool, const plan::DevicePeaks& peaks, int stream_priority = 0,
              int persistent_grid_max_sms = 0, KernelFusion fusion = KernelFusion::allowed,
              LoadedModel* shares_with = nullptr, const AcrossProcessors* across = nullptr);

  const std::string& name() const noexcept { return name_; }
  std::size_t index() const noexcept { return index_; }
  // What compile() produced, as it produced it.
  const plan::CompiledModel& plan() const noexcept { return plan_; }
  // The plan's Steps with what loading added (measured times, cancellation points, pausing
  // inside): the one place those facts are kept.
  const ModelInfo& info() const noexcept { return info_; }
  // "<model>/<step>": the NVTX range name of Step `step`, built once at load.
  const std::string& step_label(std::size_t step) const { return step_labels_.at(step); }
  // The stream of the executor's device (processor 0): uploads, downloads, dumps and restores are
  // ordered against it.
  backend::Stream& stream() noexcept { return *stream_; }
  // Whether the plan runs on more than one processor (plan().heterogeneous()).
  bool across_processors() const noexcept { return !sides_.empty(); }
  // The stream Step `step` runs on (stream() unless the model runs across processors).
  backend::Stream& step_stream(std::size_t step);
  // Every stream the model's Steps use, stream() first.
  std::vector<backend::Stream*> streams();
  // Orders Step `step`'s work after `event`, recorded on a stream of the executor's device (a
  // request's uploaded inputs, a restore).
  void order_step_after(std::size_t step, backend::Event& event);
  // Orders `consumer`'s later work (a stream of the executor's device) after what Step `step`'s
  // stream holds so far.
  void order_after_step(std::size_t step, backend::Stream& consumer);

  // Sets every Step's measured_us and probe slowdowns from the profile's entry with this model's
  // fingerprint (when it has one with as many Steps), and info().fingerprint and cost_source.
  void apply_profile(const profile::ActiveProfile& active);
  // Marks the boundary after Step s as a cancellation point when points[s] (one flag per Step),
  // in info(), and the plan can dump it from the executor's device alone
  // (Step::live_on_first_processor_only).
  void set_cancellation_points(const std::vector<bool>& points);
  // Records where the placement pass placed each node (info().placement); the plan was split by it
  // at construction when the model runs across processors.
  void set_placement(ModelPlacement placement) { info_.placement = std::move(placement); }

  // Enqueues the kernels of Step `step` for the request whose arena starts at `arena`. With graphs
  // on (see set_graphs_enabled), a Step's first run is plain launches, a run for an arena without
  // a graph of that Step captures one and launches it, and later runs for that arena replay it.
  // A Step whose capture fails runs with plain launches from then on.
  void run_step(std::size_t step, void* arena);
  // Runs Step `step` from `cursor`, its resumable kernels (OpKernel::resumable) polling `pause`
  // (see backend::ResumeContext), for a request whose arena holds request_arena_bytes(). Returns
  // true when the Step finished (cursor back at the start); false when a kernel paused: `cursor`
  // then says where, and a later call with the same arena and cursor carries on from there (the
  // nodes before it are not run again). A pausable Step with a flag, or one resuming, runs with
  // plain launches (a graph would freeze the start iteration). After each resumable kernel it
  // reads the kernel's progress report back, waiting for the stream: free on the CPU, one host
  // wait per resumable kernel on an asynchronous backend. pause == nullptr at the Step's start is
  // run_step(step, arena).
  bool run_step(std::size_t step, void* arena, StepCursor& cursor, const volatile std::int32_t* pause);
  // Whether Step `step` holds a resumable kernel, i.e. can pause inside (StepInfo::pausable_inside).
  bool pausable_inside(std::size_t step) const { return info_.steps.at(step).pausable_inside; }
  // Bytes of one request's arena: the plan's (plan().arena_bytes) and, when some Step can pause
  // inside, after it the resume area: the progress report and the largest resume state of the
  // model's kernels (one kernel of a request is paused at a time). The area is never live at a
  // Step boundary, so boundary dumps leave it out.
  std::uint64_t request_arena_bytes() const noexcept { return request_arena_bytes_; }
  // Makes every request's arena at least `bytes` (and info().activation_bytes with it): the
  // per-shape plans of one model give all requests the largest plan's arena, so the pool reuses
  // one size for every shape. Never shrinks.
  void raise_request_arena_bytes(std::uint64_t bytes) noexcept;
  // Bytes of weights this plan uploaded itself (the rest it reads from the plan it shares with).
  std::uint64_t own_weight_bytes() const noexcept { return own_weight_bytes_; }
  // Whether the last run_step() launched the Step as a graph (replayed or freshly captured).
  bool last_step_was_graph() const noexcept { return last_step_was_graph_; }

  // NVTX ranges per op inside each Step (ExecutorOptions::nvtx_op_ranges), "model/node (Op)".
  // Call between Steps, not during one.
  void set_op_ranges(bool enabled);

  // Graph capture of Steps (ExecutorOptions::cuda_graphs): on by default where the backend
  // supports graphs; turning it off frees the graphs held. Call between Steps, not during one.
  void set_graphs_enabled(bool enabled);
  bool graphs_enabled() const noexcept { return graphs_ != nullptr; }
  // The graph cache, for tests and statistics; nullptr while graphs are off.
  const StepGraphs* step_graphs() const noexcept { return graphs_.get(); }
  // Device address of value `id` for a request whose arena starts at `arena`.
  void* address(int id, void* arena) const;
  // Whether the kernels write value `id` when its Step runs: false for a value inside a fused
  // kernel that nothing outside it reads (its bytes hold whatever was there before), for views
  // (they alias a value written elsewhere), graph inputs and weights.
  bool value_written(int id) const { return value_written_.at(static_cast<std::size_t>(id)); }
  // Nodes (into plan().nodes) computed by a fused kernel, the anchor first, for each planned node
  // whose kernel is fused; empty for the others.
  const std::vector<std::size_t>& fused_members(std::size_t node) const { return fused_members_.at(node); }

  // A request's data in and out of its arena, enqueued on `stream` (host memory must stay valid
  // until the stream has passed the copies). The executor uses these instead of the plan's layout.
  //   upload_inputs: `inputs` (the plan's input order and dtypes) into the arena.
  //   download_outputs: host tensors of the plan's output dtypes and shapes, filled once the
  //     stream has passed the copies.
  //   dump_live / restore_live: the values live at the boundary after Step `step`
  //     (Step::live_after, live_bytes_after(step) bytes, packed in that order) to and from `host`.
  void upload_inputs(void* arena, const std::vector<Tensor>& inputs, backend::Stream& stream) const;
  std::vector<Tensor> download_outputs(void* arena, backend::Stream& stream) const;
  std::uint64_t output_bytes() const noexcept { return output_bytes_; }  // what download_outputs copies
  std::uint64_t live_bytes_after(std::size_t step) const { return plan_.steps.at(step).info.live_bytes_after; }
  void dump_live(std::size_t step, void* arena, std::byte* host, backend::Stream& stream) const;
  void restore_live(std::size_t step, void* arena, const std::byte* host, backend::Stream& stream) const;

 private:
  std::string name_;
  std::size_t index_;
  plan::CompiledModel plan_;
  // steps[s]: plan_.steps[s].info and the load facts.
  ModelInfo info_;
  // Per planned node; null for views and for the nodes a fused kernel computes besides its anchor.
  std::vector<std::unique_ptr<backend::OpKernel>> kernels_;
  std::vector<std::vector<std::size_t>> fused_members_;  // per planned node, see fused_members()
  std::vector<bool> fused_away_;                         // per planned node: computed by another's kernel
  std::vector<bool> value_written_;                      // per value, see value_written()
  PooledBuffer weights_;
  PooledBuffer workspace_;
  // Per value id: the device address of a weight (in weights_ or in the block of the plan shared
  // with); null for the other values.
  std::vector<std::byte*> weight_addresses_;
  std::uint64_t own_weight_bytes_ = 0;
  std::unique_ptr<backend::Stream> own_stream_;  // null when running on a shared plan's stream
  backend::Stream* stream_ = nullptr;
  backend::Backend* device_ = nullptr;
  // Processors 1.. of a model run across processors (sides_[p - 1] is processor p).
  struct Side {
    ProcessorHandle handle;
    std::unique_ptr<backend::Stream> stream;
    PooledBuffer weights;
    PooledBuffer workspace;
    // Its arena for each request, by the request's arena on processor 0: the executor's pool hands
    // an arena to one request at a time, and gives it back only after every stream of the model
    // passed the request's work, so its side arenas are free again with it.
    std::map<void*, PooledBuffer> arenas;
  };
  std::vector<Side> sides_;
  // Per request arena: the event after its last Step, when the next Step runs on another stream.
  std::map<void*, std::unique_ptr<backend::Event>> handoffs_;
  std::vector<std::string> step_labels_;
  std::vector<std::string> op_labels_;  // per planned node while op ranges are on; else empty
  std::uint64_t request_arena_bytes_ = 0;
  std::uint64_t output_bytes_ = 0;
  std::uint64_t progress_offset_ = 0;  // in the arena: backend::ResumeProgress
  std::uint64_t resume_state_offset_ = 0;
  bool graphs_supported_ = false;
  bool last_step_was_graph_ = false;
  // Last, so it is destroyed first: instances go before the buffers their nodes point into
  // (still-running instances are freed by the driver when they finish).
  std::unique_ptr<StepGraphs> graphs_;

  backend::KernelSpec kernel_spec(std::size_t node, int persistent_grid_max_sms) const;
  backend::FusionCandidate fusion_candidate(std::size_t step, int persistent_grid_max_sms) const;
  void create_kernels(int persistent_grid_max_sms, KernelFusion fusion);
  void upload_weights(MemoryPool& pool, const LoadedModel* shares_with, backend::Stream& upload);
  backend::Backend& backend_of(int processor) const;
  std::byte* arena_on(int processor, void* arena);
  void* address_on(int processor, int id, void* arena);
  void upload_side_weights(Side& side, int processor);
  // Across processors: the wait before Step `step` runs, and the event after it for the next.
  void hand_over_before(std::size_t step, void* arena);
  void hand_over_after(std::size_t step, void* arena);
  void launch_copies(std::size_t step, void* arena);
  void launch_step(std::size_t step, void* arena);
  bool launch_step_from(std::size_t step, void* arena, StepCursor& cursor, const volatile std::int32_t* pause);
};

}  // namespace loom::runtime
