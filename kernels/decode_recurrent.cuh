// Launchers for stacked LSTM/GRU loops that run on the device: the persistent kernel (one launch
// runs every step; thread blocks meet at a counter barrier), and the per-step kernels the CUDA
// graph (WHILE node) and the host loop repeat. Used by the recurrent decoder
// (src/backend/cuda/decode/cuda_recurrent.cpp) and by the ONNX LSTM/GRU ops in their simple case.
// Plain host header: no device code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "backend/recurrent_loop_plan.hpp"
#include "loom/tensor.hpp"

namespace loom::kernels::decode {

inline constexpr int kMaxRecurrentLayers = 16;

// One layer of one direction, ONNX layout and gate order (LSTM i, o, f, c; GRU z, r, h).
struct RecurrentLayerWeights {
  const void* w = nullptr;     // [gates*H, layer input], dtype. Layer 0's is never read here: the
                               // caller supplies X·W0ᵀ (RecurrentRun::x_proj)
  const void* r = nullptr;     // [gates*H, H], dtype
  const void* bias = nullptr;  // [2*gates*H] (Wb then Rb) in bias_dtype; nullptr = zeros
};

// What stays fixed across runs. Activations are ONNX's defaults; no peepholes, no clip.
struct RecurrentModel {
  bool gru = false;
  bool linear_before_reset = false;  // GRU only
  int layers = 1;
  int hidden = 0;
  DType dtype = DType::f32;       // weights, states, inputs and outputs: f32 or f16
  DType bias_dtype = DType::f32;  // f32 or dtype
  // LSTM: keep c in f32 scratch instead of rounding it to dtype every step (initial_c and final_c
  // stay in dtype). The ONNX LSTM op sets it so that f16 nodes match its cuBLAS path.
  bool cell_f32 = false;
  RecurrentLayerWeights layer[kMaxRecurrentLayers];
  int gates() const { return gru ? 3 : 4; }
};

// The loop's control words in device scratch (zeroed or set by the launchers, never by callers).
struct RecurrentControl {
  unsigned int barrier;  // persistent: the grid barrier's counter
  int stop[2];           // persistent: block 0's pause decision, by step parity
  int step;              // step kernels: steps completed in this call
  int count;             // the loop bound (the longest row), derived on the device
  int keep_going;        // step kernels: whether another step runs
  int paused;
  int pause_seen;  // step kernels: the pause flag as read during the current step
};

// Where a run reports how it ended (the decoder's RunStatus has this layout).
struct RecurrentStatus {
  std::int32_t steps_run;
  std::int32_t paused;
};

// One run: every pointer is device memory. States are [layers, batch, H] in dtype.
struct RecurrentRun {
  int batch = 1;
  int steps = 0;         // T: the time extent of the input and output
  int start_step = 0;    // first loop position this call runs
  bool reverse = false;  // per row, position p processes time len-1-p (ONNX direction=reverse)
  // x_proj[(t - x_proj_first_step) * batch + b][gates*H]: X(t, b)·W0ᵀ (no bias), f32.
  const float* x_proj = nullptr;
  int x_proj_first_step = 0;
  void* output = nullptr;         // [T, batch, H] dtype: h(t) of the last layer, zeros past a row's length; may be null
  const void* lengths = nullptr;  // [batch] int32 (or int64 with lengths_i64), each clamped to [0, T]; or null
  bool lengths_i64 = false;
  const std::uint8_t* mask = nullptr;            // [T, batch]: row length = its leading ones; or null
  const void* initial_h = nullptr;               // null = zeros
  const void* initial_c = nullptr;               // LSTM; null = zeros
  void* final_h = nullptr;                       // may be null
  void* final_c = nullptr;                       // may be null
  const volatile std::int32_t* pause = nullptr;  // mapped host flag, checked once per step; may be null
  RecurrentStatus* status = nullptr;             // may be null
  // LSTM with RecurrentModel::cell_f32 only: initial_c / final_c hold c in f32 instead of dtype,
  // so that a paused run's cell state resumes unrounded (the ONNX LSTM op's resumable runs).
  bool initial_c_f32 = false;
  bool final_c_f32 = false;
  // Scratch, carved by bind_recurrent_scratch().
  void* h_state = nullptr;     // [2][layers][batch][H] dtype: h by step parity
  void* c_state = nullptr;     // [layers][batch][H] dtype (LSTM; f32 with RecurrentModel::cell_f32)
  void* reset_h = nullptr;     // [batch][H] dtype: r ⊙ h (GRU without linear_before_reset)
  float* gru_pre = nullptr;    // [batch][2][H]: z's pre-activation and Wh·x + Wbh (same GRU)
  int* row_lengths = nullptr;  // [batch]
  RecurrentControl* control = nullptr;
};

// Scratch bytes for `batch` rows (state, gate buffers, lengths, control words; not x_proj), and
// the pointers into it.
std::size_t recurrent_scratch_bytes(const RecurrentModel& model, int batch);
void bind_recurrent_scratch(const RecurrentModel& model, int batch, void* scratch, RecurrentRun& run);

// --- persistent: one launch per run ---

// The grid arithmetic is plain host code (backend/recurrent_loop_plan.hpp), tested on the CPU.
using PersistentPlan = backend::recurrent_loop::PersistentPlan;

// Sizes the grid for `device` so that all blocks are co-resident (the barrier needs it) and keeps
// the weights on chip when they fit (backend::recurrent_loop::plan_persistent). The grid holds at
// most `max_sms` SMs, one block each (0, or at least the device's SM count: no cap), leaving the
// others to kernels on other streams: a cooperative launch keeps its SMs for the whole run. Throws
// Error(unsupported) when hidden is too large for even one staged row, Error(invalid_argument) for
// a negative max_sms. Runs launched with this plan may have at most `max_batch` rows.
PersistentPlan plan_recurrent_persistent(const RecurrentModel& model, int device, int max_batch, int max_sms);

// Zeroes the control words and launches the loop (a cooperative launch, which guarantees
// co-residency). `run` must be bound to scratch and carry x_proj when steps remain. Throws
// Error(unsupported) when the run needs more dynamic shared memory than the kernel may use.
void launch_recurrent_persistent(const RecurrentModel& model, const PersistentPlan& plan, const RecurrentRun& run,
                                 cudaStream_t stream);

// How far a resumable run got (the layout of backend::ResumeProgress).
struct RecurrentProgress {
  std::int32_t next_step;  // loop positions done, counting earlier runs
  std::int32_t paused;
};

// Enqueued after a single-layer run that reported into `status` and left its final state in
// `final_h` (dtype) and `final_c` (LSTM, f32 when `final_c_f32`, else dtype; null for GRU):
// writes *progress = {start_step + steps_run, 1} when the run paused, else {total_steps, 0}, and
// only when it finished copies `elements` (batch*H) values of the state to out_h / out_c (either
// may be null), c rounded to dtype as the loop rounds final_c.
void launch_recurrent_resume_report(const RecurrentModel& model, const RecurrentStatus* status, int start_step,
                                    int total_steps, std::size_t elements, const void* final_h, const void* final_c,
                                    bool final_c_f32, void* out_h, void* out_c, RecurrentProgress* progress,
                                    cudaStream_t stream);

// --- step kernels: ordinary grids, the run's arguments read from device memory ---

struct StepPlan {
  int blocks = 0;
  int threads = 0;
  int units_per_block = 0;
  int vec = 1;
  int max_tile_rows = 1;
  int prepare_blocks = 0;
  std::size_t smem_bytes = 0;  // of each step kernel
};

StepPlan plan_recurrent_steps(const RecurrentModel& model, int device);

// Host loop: prepare (lengths, count, zeroed tail, initial state; keep_going), then per step
// launch_recurrent_step (all layers, then the control kernel that advances the step and decides
// keep_going), then finish (final state, status). `run` points to a device copy of the run. These
// and build_recurrent_graph throw Error(unsupported) when a kernel would need more dynamic shared
// memory than it may use (the prepare kernel holds max_batch + 1 ints).
void launch_recurrent_prepare(const RecurrentModel& model, const StepPlan& plan, const RecurrentRun* run, int max_batch,
                              cudaStream_t stream);
void launch_recurrent_step(const RecurrentModel& model, const StepPlan& plan, const RecurrentRun* run,
                           cudaStream_t stream);
void launch_recurrent_finish(const RecurrentModel& model, const StepPlan& plan, const RecurrentRun* run,
                             cudaStream_t stream);

// Adds to the empty graph `graph`: prepare → WHILE conditional node { every layer's step kernels →
// control kernel } → finish. The prepare kernel sets the condition to (start_step < count); the
// control kernel sets it to (another step remains and no pause was seen). `run` is baked into the
// nodes: the caller refreshes its contents before each graph launch.
void build_recurrent_graph(const RecurrentModel& model, const StepPlan& plan, const RecurrentRun* run, int max_batch,
                           cudaGraph_t graph);

}  // namespace loom::kernels::decode
