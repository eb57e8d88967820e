// The CUDA recurrent decoder (LSTM/GRU stacks): weights uploaded once in the decoder's dtype, layer
// 0's input projection for the whole sample by one cuBLAS GEMM, then the loop by one of three
// methods over the same layer pass (kernels/decode_recurrent.cu):
//   persistent — one cooperative launch runs every step (the default: no launch per step and the
//                recurrent weights held on chip where they fit);
//   graph      — a CUDA graph built once per decoder: prepare → WHILE node { step kernels →
//                control kernel, which sets the condition } → finish;
//   host_loop  — the baseline: per step, launch the step kernels, copy the "keep going" word to
//                the host, synchronise and decide there.
// graph and host_loop read the run's pointers from a device copy of RecurrentRun that launch()
// refreshes from a ring of pinned host slots before each run.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cublas_gemm.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "backend/cuda/decode/cuda_decoders.hpp"
#include "loom/error.hpp"
#include "decode_recurrent.cuh"

namespace loom::backend::cuda::decoders {
namespace {

namespace kd = loom::kernels::decode;

static_assert(sizeof(DecoderRunStatus) == sizeof(kd::RecurrentStatus) &&
                  offsetof(DecoderRunStatus, steps_run) == offsetof(kd::RecurrentStatus, steps_run) &&
                  offsetof(DecoderRunStatus, paused) == offsetof(kd::RecurrentStatus, paused),
              "the kernels write DecoderRunStatus through RecurrentStatus");

constexpr std::size_t align256(std::size_t n) { return (n + 255) / 256 * 256; }

// Device or pinned host memory from the backend, freed on destruction.
class BackendMemory {
 public:
  BackendMemory() = default;
  BackendMemory(Backend& device, std::size_t bytes, bool host)
      : device_(&device), host_(host), data_(host ? device.allocate_host(bytes) : device.allocate(bytes)) {}
  ~BackendMemory() { reset(); }
  BackendMemory(BackendMemory&& other) noexcept
      : device_(other.device_), host_(other.host_), data_(std::exchange(other.data_, nullptr)) {}
  BackendMemory& operator=(BackendMemory&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      host_ = other.host_;
      data_ = std::exchange(other.data_, nullptr);
    }
    return *this;
  }
  void* get() const noexcept { return data_; }
  void reset() noexcept {
    if (!data_) return;
    if (host_)
      device_->deallocate_host(data_);
    else
      device_->deallocate(data_);
    data_ = nullptr;
  }

 private:
  Backend* device_ = nullptr;
  bool host_ = false;
  void* data_ = nullptr;
};

class CudaRecurrentDecoder final : public DeviceDecoder {
 public:
  CudaRecurrentDecoder(const DecoderProgram& program, Backend& device)
      : program_(program), backend_(dynamic_cast<CudaBackend&>(device)) {
    const CellStack& cells = program.cells;
    const std::string where = "decoder '" + program.name + "'";
    if (program.dtype != DType::f32 && program.dtype != DType::f16)
      throw Error(ErrorCode::unsupported, where + ": dtype " + std::string(dtype_name(program.dtype)) +
                                              " (the CUDA recurrent decoder runs f32 and f16)");
    if (cells.layers.empty() || cells.layers.size() > static_cast<std::size_t>(kd::kMaxRecurrentLayers))
      throw Error(ErrorCode::unsupported, where + ": " + std::to_string(cells.layers.size()) +
                                              " layers (the CUDA recurrent decoder runs 1 to " +
                                              std::to_string(kd::kMaxRecurrentLayers) + ")");
    DeviceGuard guard(backend_.device());
    upload_weights();
    plan_ =
        kd::plan_recurrent_persistent(model_, backend_.device(), program.max_batch, program.persistent_grid_max_sms);
    step_plan_ = kd::plan_recurrent_steps(model_, backend_.device());

    device_run_ = BackendMemory(backend_, sizeof(kd::RecurrentRun), false);
    staging_ = BackendMemory(backend_, kStagingSlots * sizeof(kd::RecurrentRun), true);
    keep_going_host_ = BackendMemory(backend_, sizeof(int), true);
    for (auto& event : staging_events_) event = create_event_handle(cudaEventDisableTiming);
  }

  ~CudaRecurrentDecoder() override {
    // The engine has waited for every run; nothing of this decoder is still in flight.
    DeviceGuard guard(backend_.device(), DeviceGuard::NoThrow{});
    graph_exec_.reset();
    graph_.reset();
    for (auto& event : staging_events_) event.reset();
    weights_.reset();
    device_run_.reset();
    staging_.reset();
    keep_going_host_.reset();
  }

  std::vector<DecodeMethod> methods() const override {
    return {DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop};
  }
  // Persistent: no launch per step and the weights on chip where they fit; the benchmark
  // (bench/decode) compares it with the graph.
  DecodeMethod default_method() const override { return DecodeMethod::persistent; }
  std::uint64_t weight_bytes() const override { return weight_bytes_; }
  std::uint64_t recurrent_weight_bytes() const override { return recurrent_weight_bytes_; }
  bool weights_on_chip() const override { return plan_.on_chip; }

  std::size_t scratch_bytes(int batch, int steps) const override {
    return x_proj_bytes(batch, steps) + kd::recurrent_scratch_bytes(model_, batch);
  }

  void launch(const DecodeArgs& args, DecodeMethod method, const volatile std::int32_t* pause_flag, void* scratch,
              DecoderRunStatus* status, Stream& stream) override {
    DeviceGuard guard(backend_.device());
    auto& cuda_stream = as_cuda_stream(stream);
    const cudaStream_t s = cuda_stream.get();

    kd::RecurrentRun run;
    run.batch = args.batch;
    run.steps = args.steps;
    run.start_step = args.start_step;
    run.x_proj = static_cast<const float*>(scratch);
    run.x_proj_first_step = 0;  // every call projects the whole sample: see project_inputs
    run.output = args.output;
    run.lengths = args.lengths;
    run.mask = args.mask;
    run.initial_h = args.initial_h;
    run.initial_c = args.initial_c;
    run.final_h = args.final_h;
    run.final_c = args.final_c;
    run.pause = pause_flag;
    run.status = reinterpret_cast<kd::RecurrentStatus*>(status);
    kd::bind_recurrent_scratch(model_, args.batch,
                               static_cast<std::byte*>(scratch) + x_proj_bytes(args.batch, args.steps), run);

    project_inputs(args, const_cast<float*>(run.x_proj), cuda_stream);

    switch (method) {
      case DecodeMethod::persistent:
        kd::launch_recurrent_persistent(model_, plan_, run, s);
        break;
      case DecodeMethod::graph:
        if (args.batch > program_.max_batch) throw_batch(args.batch);
        ensure_graph();
        stage(run, s);
        LOOM_CUDA_CHECK(cudaGraphLaunch(graph_exec_.get(), s));
        break;
      case DecodeMethod::host_loop:
        run_host_loop(run, s);
        break;
      default:
        throw Error(ErrorCode::internal,
                    "decoder '" + program_.name + "': method " + std::string(method_name(method)) + " reached launch");
    }
    LOOM_CUDA_CHECK(cudaGetLastError());
  }

 private:
  static constexpr int kStagingSlots = 8;

  std::int64_t hidden() const { return program_.cells.hidden_size; }
  std::int64_t gates() const { return program_.gates(); }
  std::size_t x_proj_bytes(int batch, int steps) const {
    return align256(static_cast<std::size_t>(steps) * batch * gates() * hidden() * sizeof(float));
  }

  [[noreturn]] void throw_batch(int batch) const {
    throw Error(ErrorCode::internal,
                "decoder '" + program_.name + "': batch " + std::to_string(batch) + " above max_batch reached launch");
  }

  // Weights in the decoder's dtype, biases in f32 after rounding to it (the device computes what a
  // dtype-stored bias gives), laid out per layer: W, R, bias; every piece 256-byte aligned.
  void upload_weights() {
    const CellStack& cells = program_.cells;
    const std::int64_t H = cells.hidden_size, G = gates();
    const std::size_t e = dtype_size(program_.dtype);
    struct Piece {
      Tensor host;
      std::size_t offset;
    };
    std::vector<Piece> pieces;
    std::size_t total = 0;
    auto add = [&](Tensor host) {
      pieces.push_back({std::move(host), total});
      total += align256(pieces.back().host.bytes());
      return pieces.size() - 1;
    };
    std::vector<std::array<std::size_t, 3>> index(cells.layers.size());
    for (std::size_t l = 0; l < cells.layers.size(); ++l) {
      const CellLayer& layer = cells.layers[l];
      Tensor bias = layer.b.bytes() > 0 ? layer.b.to(DType::f32) : Tensor(DType::f32, Shape{2 * G * H});
      if (program_.dtype != DType::f32) bias = bias.to(program_.dtype).to(DType::f32);
      index[l] = {add(layer.w.to(program_.dtype)), add(layer.r.to(program_.dtype)), add(std::move(bias))};
      const std::int64_t in = l == 0 ? cells.input_size : H;
      recurrent_weight_bytes_ += static_cast<std::uint64_t>(G * H * H) * e;
      if (l > 0) recurrent_weight_bytes_ += static_cast<std::uint64_t>(G * H * in) * e;
      weight_bytes_ += static_cast<std::uint64_t>(G * H * (in + H)) * e + 2 * G * H * sizeof(float);
    }
    weights_ = BackendMemory(backend_, std::max<std::size_t>(total, 1), false);
    auto* base = static_cast<std::byte*>(weights_.get());
    for (const Piece& piece : pieces)
      LOOM_CUDA_CHECK(cudaMemcpy(base + piece.offset, piece.host.data(), piece.host.bytes(), cudaMemcpyHostToDevice));

    model_.gru = cells.type == CellType::gru;
    model_.linear_before_reset = model_.gru && cells.linear_before_reset;
    model_.layers = static_cast<int>(cells.layers.size());
    model_.hidden = static_cast<int>(H);
    model_.dtype = program_.dtype;
    model_.bias_dtype = DType::f32;
    for (std::size_t l = 0; l < cells.layers.size(); ++l) {
      model_.layer[l].w = base + pieces[index[l][0]].offset;
      model_.layer[l].r = base + pieces[index[l][1]].offset;
      model_.layer[l].bias = base + pieces[index[l][2]].offset;
    }
  }

  // x_proj[t] = X(t)·W0ᵀ for every t in [0, steps): [steps * batch, gates*H] f32. A resumed call
  // (start_step > 0) projects the rows it has already passed again rather than only the rest:
  // the GEMM then has the same shape and operand addresses on every call of a sample, so it runs
  // the same pinned algorithm and the rows the loop still reads are bit-identical to those of an
  // uninterrupted run (cublas_gemm.hpp). Its cost is one GEMM of the sample, not a step's worth.
  void project_inputs(const DecodeArgs& args, float* x_proj, CudaStream& stream) {
    const std::int64_t rows = static_cast<std::int64_t>(args.steps) * args.batch;
    if (rows <= 0 || args.start_step >= args.steps) return;
    const std::int64_t input_size = program_.cells.input_size;
    gemm_row_major(stream, rows, gates() * hidden(), input_size, 1.0f, {args.input, false, input_size, 0},
                   {model_.layer[0].w, true, input_size, 0}, 0.0f, {x_proj, gates() * hidden(), 0}, 1, program_.dtype,
                   DType::f32);
  }

  // Copies `run` into the device copy the graph and the step kernels read. The pinned slot must
  // outlive the asynchronous copy: a slot is reused only after its previous copy has run (the
  // wait blocks only when kStagingSlots runs are queued at once).
  void stage(const kd::RecurrentRun& run, cudaStream_t s) {
    const int slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kStagingSlots;
    if (slot_used_[slot]) LOOM_CUDA_CHECK(cudaEventSynchronize(staging_events_[slot].get()));
    auto* host = static_cast<kd::RecurrentRun*>(staging_.get()) + slot;
    *host = run;
    LOOM_CUDA_CHECK(cudaMemcpyAsync(device_run_.get(), host, sizeof(kd::RecurrentRun), cudaMemcpyHostToDevice, s));
    LOOM_CUDA_CHECK(cudaEventRecord(staging_events_[slot].get(), s));
    slot_used_[slot] = true;
  }

  const kd::RecurrentRun* device_run() const { return static_cast<const kd::RecurrentRun*>(device_run_.get()); }

  void ensure_graph() {
    if (graph_exec_) return;
    cudaGraph_t graph = nullptr;
    LOOM_CUDA_CHECK(cudaGraphCreate(&graph, 0));
    GraphHandle owned(graph);
    kd::build_recurrent_graph(model_, step_plan_, device_run(), program_.max_batch, graph);
    cudaGraphExec_t exec = nullptr;
    LOOM_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    graph_exec_ = GraphExecHandle(exec);
    graph_ = std::move(owned);
  }

  // The baseline: every step decided on the host after a synchronisation.
  void run_host_loop(const kd::RecurrentRun& run, cudaStream_t s) {
    if (run.batch > program_.max_batch) throw_batch(run.batch);
    stage(run, s);
    kd::launch_recurrent_prepare(model_, step_plan_, device_run(), program_.max_batch, s);
    auto* keep_going = static_cast<volatile int*>(keep_going_host_.get());
    // The device decides when to stop, but never after more steps than the call has: a wrong
    // "keep going" word must end in an error, not in a host loop that never returns.
    const int most_steps = std::max(run.steps - run.start_step, 0);
    for (int launched = 0;; ++launched) {
      LOOM_CUDA_CHECK(
          cudaMemcpyAsync(keep_going_host_.get(), &run.control->keep_going, sizeof(int), cudaMemcpyDeviceToHost, s));
      LOOM_CUDA_CHECK(cudaStreamSynchronize(s));
      if (*keep_going == 0) break;
      if (launched == most_steps)
        throw Error(ErrorCode::internal, "decoder '" + program_.name + "': the host loop was asked for step " +
                                             std::to_string(run.start_step + launched + 1) + " of " +
                                             std::to_string(run.steps));
      kd::launch_recurrent_step(model_, step_plan_, device_run(), s);
    }
    kd::launch_recurrent_finish(model_, step_plan_, device_run(), s);
  }

  DecoderProgram program_;
  CudaBackend& backend_;
  kd::RecurrentModel model_;
  kd::PersistentPlan plan_;
  kd::StepPlan step_plan_;
  BackendMemory weights_;
  std::uint64_t weight_bytes_ = 0, recurrent_weight_bytes_ = 0;
  BackendMemory device_run_, staging_, keep_going_host_;
  std::array<EventHandle, kStagingSlots> staging_events_;
  std::array<bool, kStagingSlots> slot_used_{};
  int next_slot_ = 0;
  GraphHandle graph_;
  GraphExecHandle graph_exec_;
};

}  // namespace

std::unique_ptr<DeviceDecoder> make_cuda_recurrent_decoder(const DecoderProgram& program, Backend& device) {
  return std::make_unique<CudaRecurrentDecoder>(program, device);
}

}  // namespace loom::backend::cuda::decoders
