// The ONNX LSTM/GRU ops' device loop: the op's X·Wᵀ GEMM fills the persistent kernel's x_proj,
// then one cooperative launch per direction runs every time step (see rnn_device_loop.hpp).
#include "backend/cuda/rnn_device_loop.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>

#include "backend/cuda/cublas_gemm.hpp"
#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_op_kernel.hpp"
#include "loom/error.hpp"

namespace loom::backend::cuda {
namespace {

namespace kd = loom::kernels::decode;

// The report kernel writes ResumeProgress through its own struct of the same layout.
static_assert(sizeof(kd::RecurrentProgress) == sizeof(ResumeProgress) &&
              offsetof(kd::RecurrentProgress, next_step) == offsetof(ResumeProgress, next_iteration) &&
              offsetof(kd::RecurrentProgress, paused) == offsetof(ResumeProgress, paused));

// The loop computes ONNX's default activations only: LSTM f, g, h = sigmoid, tanh, tanh; GRU f, g
// = sigmoid, tanh. Their alpha and beta are unused, so the kind alone decides.
bool default_activations(const RnnSpec& rnn, bool gru) {
  const RnnActivationKind expected[] = {RnnActivationKind::sigmoid, RnnActivationKind::tanh, RnnActivationKind::tanh};
  const int functions = gru ? 2 : 3;
  for (std::int64_t d = 0; d < rnn.directions; ++d)
    for (int f = 0; f < functions; ++f)
      if (rnn.activations[static_cast<std::size_t>(d)][static_cast<std::size_t>(f)].kind != expected[f]) return false;
  return true;
}

bool fits_int(std::int64_t v) { return v > 0 && v <= INT_MAX; }

}  // namespace

std::optional<RnnDeviceLoop> RnnDeviceLoop::plan(const RnnSpec& rnn, bool gru, bool linear_before_reset, DType dtype,
                                                 bool op_specific_ok, int device, int max_sms) {
  if (!op_specific_ok || rnn.batch_major || rnn.clip > 0.0f || !default_activations(rnn, gru)) return std::nullopt;
  if (dtype != DType::f32 && dtype != DType::f16) return std::nullopt;
  if (!fits_int(rnn.steps) || !fits_int(rnn.batch) || !fits_int(rnn.hidden) || !fits_int(rnn.input_size))
    return std::nullopt;
  if (rnn.directions != 1 && rnn.directions != 2) return std::nullopt;

  RnnDeviceLoop loop;
  loop.rnn_ = rnn;
  kd::RecurrentModel& m = loop.model_;
  m.gru = gru;
  m.linear_before_reset = gru && linear_before_reset;
  m.layers = 1;
  m.hidden = static_cast<int>(rnn.hidden);
  m.dtype = dtype;
  m.bias_dtype = dtype;  // B is the node's own tensor, in X's dtype
  // The per-step path keeps c in f32 whatever the dtype; so does the loop, so that f16 nodes
  // give the same values on both paths.
  m.cell_f32 = !gru;
  const int batch = static_cast<int>(rnn.batch);
  try {
    loop.plan_ = kd::plan_recurrent_persistent(m, device, batch, max_sms);
  } catch (const Error& error) {
    if (error.code() != ErrorCode::unsupported) throw;
    return std::nullopt;
  }
  const std::size_t state_bytes = static_cast<std::size_t>(rnn.batch * rnn.hidden) * dtype_size(dtype);
  loop.x_proj_bytes_ =
      align_bytes(static_cast<std::size_t>(rnn.steps * rnn.batch * m.gates() * rnn.hidden) * sizeof(float));
  loop.scratch_bytes_ = align_bytes(kd::recurrent_scratch_bytes(m, batch));
  loop.y_stage_bytes_ = rnn.directions == 2 ? align_bytes(static_cast<std::size_t>(rnn.steps) * state_bytes) : 0;
  loop.status_bytes_ = loop.resumable() ? align_bytes(sizeof(kd::RecurrentStatus)) : 0;
  return loop;
}

void RnnDeviceLoop::prepare_direction(const RnnDeviceLoopArgs& args, std::int64_t d, void* workspace,
                                      CudaStream& stream, kd::RecurrentModel& m, kd::RecurrentRun& run) const {
  auto* base = static_cast<std::byte*>(workspace);
  auto* x_proj = reinterpret_cast<float*>(base);
  void* scratch = base + x_proj_bytes_;

  const std::int64_t H = rnn_.hidden, B = rnn_.batch, T = rnn_.steps, I = rnn_.input_size, G = model_.gates();
  const auto e = static_cast<std::int64_t>(dtype_size(model_.dtype));
  const auto at = [](const void* p, std::int64_t bytes) {
    return p ? static_cast<const std::byte*>(p) + bytes : nullptr;
  };
  const auto at_mut = [](void* p, std::int64_t bytes) { return p ? static_cast<std::byte*>(p) + bytes : nullptr; };

  // x_proj[t * B + b] = X(t, b)·W_dᵀ: layout 0 puts X's rows in exactly the loop's order.
  const void* w_d = at(args.w, d * G * H * I * e);
  gemm_row_major(stream, T * B, G * H, I, 1.0f, {args.x, false, I, 0}, {w_d, true, I, 0}, 0.0f, {x_proj, G * H, 0}, 1,
                 model_.dtype, DType::f32);

  m = model_;
  m.layer[0].w = w_d;
  m.layer[0].r = at(args.r, d * G * H * H * e);
  m.layer[0].bias = at(args.bias, d * 2 * G * H * e);

  run = kd::RecurrentRun{};
  run.batch = static_cast<int>(B);
  run.steps = static_cast<int>(T);
  run.start_step = 0;
  run.reverse = rnn_.reverse_only || d == 1;
  run.x_proj = x_proj;
  run.x_proj_first_step = 0;
  run.output = args.y;
  run.lengths = args.sequence_lens;
  run.lengths_i64 = rnn_.sequence_lens_dtype == DType::i64;
  // Layout 0 states are [directions, B, H]: direction d's block is contiguous.
  run.initial_h = at(args.initial_h, d * B * H * e);
  run.initial_c = model_.gru ? nullptr : at(args.initial_c, d * B * H * e);
  run.final_h = at_mut(args.y_h, d * B * H * e);
  run.final_c = model_.gru ? nullptr : at_mut(args.y_c, d * B * H * e);
  kd::bind_recurrent_scratch(m, run.batch, scratch, run);
}

void RnnDeviceLoop::launch(const RnnDeviceLoopArgs& args, void* workspace, CudaStream& stream) const {
  const cudaStream_t s = stream.get();
  void* y_stage = static_cast<std::byte*>(workspace) + x_proj_bytes_ + scratch_bytes_;
  const std::size_t state_bytes = static_cast<std::size_t>(rnn_.batch * rnn_.hidden) * dtype_size(model_.dtype);

  for (std::int64_t d = 0; d < rnn_.directions; ++d) {
    kd::RecurrentModel m;
    kd::RecurrentRun run;
    prepare_direction(args, d, workspace, stream, m, run);
    // With two directions Y is [T, 2, B, H]: direction d's [B, H] blocks are 2·B·H apart, so the
    // loop writes a dense [T, B, H] and a strided copy places it.
    const bool staged = rnn_.directions == 2 && args.y;
    if (staged) run.output = y_stage;
    kd::launch_recurrent_persistent(m, plan_, run, s);

    if (staged)
      LOOM_CUDA_CHECK(cudaMemcpy2DAsync(static_cast<std::byte*>(args.y) + d * static_cast<std::int64_t>(state_bytes),
                                        rnn_.directions * state_bytes, y_stage, state_bytes, state_bytes,
                                        static_cast<std::size_t>(rnn_.steps), cudaMemcpyDeviceToDevice, s));
  }
}

std::size_t RnnDeviceLoop::resume_state_bytes() const noexcept {
  if (!resumable()) return 0;
  const auto elements = static_cast<std::size_t>(rnn_.batch * rnn_.hidden);
  return align_bytes(elements * dtype_size(model_.dtype)) + (model_.gru ? 0 : elements * sizeof(float));
}

void RnnDeviceLoop::run_resumable(const OpKernel& kernel, const RnnDeviceLoopArgs& args, void* workspace,
                                  const ResumeContext& context, Stream& stream) const {
  if (!resumable())
    throw Error(ErrorCode::internal, kernel.op_type() + " node '" + kernel.node_name() +
                                         "': resumable run of a device loop that cannot pause (two directions)");
  CudaStream& cuda_stream = as_cuda_stream(stream);
  DeviceGuard guard(cuda_stream.device());
  const cudaStream_t s = cuda_stream.get();

  // The whole X·Wᵀ again, even when resuming: the same GEMM call as run()'s gives the same bits,
  // and a reverse row's remaining positions read its earliest time steps anyway.
  kd::RecurrentModel m;
  kd::RecurrentRun run;
  prepare_direction(args, 0, workspace, cuda_stream, m, run);

  const auto elements = static_cast<std::size_t>(rnn_.batch * rnn_.hidden);
  auto* state_h = static_cast<std::byte*>(context.state);
  float* state_c =
      model_.gru ? nullptr : reinterpret_cast<float*>(state_h + align_bytes(elements * dtype_size(m.dtype)));
  auto* status = reinterpret_cast<kd::RecurrentStatus*>(static_cast<std::byte*>(workspace) + x_proj_bytes_ +
                                                        scratch_bytes_ + y_stage_bytes_);
  const bool resuming = context.start_iteration > 0;
  run.start_step = context.start_iteration;
  if (resuming) {
    run.initial_h = state_h;
    run.initial_c = state_c;
    run.initial_c_f32 = !model_.gru;
  }
  // The final state always goes to the request's state, paused or not; Y_h / Y_c are copied from
  // it only when the run finished (the report kernel), so a paused run leaves them untouched.
  run.final_h = state_h;
  run.final_c = state_c;
  run.final_c_f32 = !model_.gru;
  run.pause = context.pause;
  run.status = status;
  kd::launch_recurrent_persistent(m, plan_, run, s);
  kd::launch_recurrent_resume_report(m, status, context.start_iteration, run.steps, elements, state_h, state_c,
                                     !model_.gru, args.y_h, model_.gru ? nullptr : args.y_c,
                                     reinterpret_cast<kd::RecurrentProgress*>(context.progress), s);

  // Launch-configuration errors surface here, named as run() names them.
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess)
    throw Error(ErrorCode::backend, kernel.op_type() + " node '" + kernel.node_name() + "': resumable launch failed: " +
                                        cudaGetErrorName(error) + " (" + cudaGetErrorString(error) + ")");
}

RnnDeviceLoopArgs rnn_loop_args(std::span<const void* const> inputs, std::span<void* const> outputs) {
  const auto in = [&](std::size_t i) { return i < inputs.size() ? inputs[i] : nullptr; };
  const auto out = [&](std::size_t i) { return i < outputs.size() ? outputs[i] : nullptr; };
  return {in(0), in(1), in(2), in(3), in(4), in(5), in(6), out(0), out(1), out(2)};
}

}  // namespace loom::backend::cuda
