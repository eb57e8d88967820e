// The CUDA greedy decoder: weights uploaded once in the decoder's dtype, then per sample either one
// persistent kernel (its blocks keep their share of the cell weights in shared memory and meet at
// grid barriers), a graph whose WHILE node repeats the step kernels, or the host loop baseline.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/smem_limit.hpp"
#include "backend/recurrent_loop_plan.hpp"
#include "backend/cuda/decode/cuda_decoders.hpp"
#include "backend/cuda/decode/loop_support.hpp"
#include "decode_greedy.cuh"

namespace loom::backend::cuda::decoders {
namespace {

namespace kd = loom::kernels::decode;
using loop_support::ceil_div;
using loop_support::DeviceMemory;
using loop_support::HostImage;
using loop_support::kWarps;
using loop_support::ScratchCarver;
using loop_support::StepLaunch;
using loop_support::StepPlan;

constexpr int kMaxRows = 64;  // the kernels' per-block row tables (kernels/decode_rows.cuh)

class CudaGreedyDecoder final : public loop_support::LoopDecoder<kd::GreedyRun, kd::GreedyKernelArgs> {
 public:
  CudaGreedyDecoder(const DecoderProgram& program, Backend& backend);

  std::uint64_t weight_bytes() const override { return weight_bytes_; }
  std::uint64_t recurrent_weight_bytes() const override { return recurrent_weight_bytes_; }
  bool weights_on_chip() const override { return weights_on_chip_; }

 private:
  void upload(const DecoderProgram& program);
  void plan_persistent(std::vector<kd::GreedyLayer>& layers, const loop_support::DeviceFacts& facts, int max_sms);
  kd::GreedyRun carve(ScratchCarver& carver, int batch) const override;
  void describe_run(kd::GreedyRun& run, const DecodeArgs& args, const volatile std::int32_t* pause_flag,
                    DecoderRunStatus* status) const override;
  const void* persistent_kernel() const override { return kernel(kd::GreedyKernel::persistent); }
  StepPlan<kd::GreedyKernelArgs> step_plan(const kd::GreedyKernelArgs& args) const override;
  const void* kernel(kd::GreedyKernel which) const { return kd::greedy_kernel(which, dtype_); }

  int layers_, hidden_, gates_;
  bool gru_, split_gru_;
  std::int64_t vocab_;
  DeviceMemory weights_;
  DeviceMemory layer_table_;  // kd::GreedyLayer[layers], shared by every method
  std::uint64_t weight_bytes_ = 0, recurrent_weight_bytes_ = 0;
  bool weights_on_chip_ = false;

  unsigned cell_grid_ = 1, projection_grid_ = 1, fill_grid_ = 1;
  int max_partials_ = 1;
};

CudaGreedyDecoder::CudaGreedyDecoder(const DecoderProgram& program, Backend& backend)
    : LoopDecoder(program, backend, "greedy"),
      layers_(static_cast<int>(program.cells.layers.size())),
      hidden_(static_cast<int>(program.cells.hidden_size)),
      gates_(static_cast<int>(program.gates())),
      gru_(program.cells.type == CellType::gru),
      split_gru_(gru_ && !program.cells.linear_before_reset),
      vocab_(program.vocab) {
  if (program.max_batch < 1 || program.max_batch > kMaxRows)
    throw Error(ErrorCode::invalid_argument,
                "decoder '" + name_ + "': max_batch " + std::to_string(program.max_batch) + " outside [1, 64]");
  if (layers_ < 1 || hidden_ < 1 || vocab_ < 1 || program.cells.input_size < 1)
    throw Error(ErrorCode::invalid_argument, "decoder '" + name_ + "': empty cells, hidden size or vocabulary");
  DeviceGuard guard(device_);
  upload(program);
}

void CudaGreedyDecoder::upload(const DecoderProgram& program) {
  const CellStack& cells = program.cells;
  const std::int64_t H = hidden_, G = gates_, E = cells.input_size, V = vocab_;
  HostImage image(dtype_);
  struct Offsets {
    std::size_t w, r, b;
  };
  std::vector<Offsets> offsets;
  std::int64_t cell_values = 0;
  for (int l = 0; l < layers_; ++l) {
    const CellLayer& layer = cells.layers[static_cast<std::size_t>(l)];
    const std::int64_t in = l == 0 ? E : H;
    const std::string where = "decoder '" + name_ + "' layer " + std::to_string(l);
    offsets.push_back({image.add_floats(layer.w, G * H * in, where + " w"),
                       image.add_floats(layer.r, G * H * H, where + " r"),
                       image.add_floats(layer.b, 2 * G * H, where + " b")});
    cell_values += G * H * in + G * H * H + 2 * G * H;
  }
  const std::size_t embedding = image.add_floats(program.embedding, V * E, "decoder '" + name_ + "' embedding");
  const std::size_t projection = image.add_floats(program.projection, V * H, "decoder '" + name_ + "' projection");
  const std::size_t bias = image.add_floats(program.projection_bias, V, "decoder '" + name_ + "' projection_bias");
  weights_ = image.upload(backend_, device_);
  const std::uint64_t element = dtype_size(dtype_);
  weight_bytes_ = static_cast<std::uint64_t>(cell_values + V * E + V * H + V) * element;
  recurrent_weight_bytes_ = static_cast<std::uint64_t>(cell_values + V * H + V) * element;

  auto* base = static_cast<const std::byte*>(weights_.get());
  std::vector<kd::GreedyLayer> layers(static_cast<std::size_t>(layers_));
  for (int l = 0; l < layers_; ++l) {
    kd::GreedyLayer& layer = layers[static_cast<std::size_t>(l)];
    layer.w = base + offsets[static_cast<std::size_t>(l)].w;
    layer.r = base + offsets[static_cast<std::size_t>(l)].r;
    layer.bias = base + offsets[static_cast<std::size_t>(l)].b;
    layer.input = static_cast<int>(l == 0 ? E : H);
  }

  kd::GreedyModel model;
  model.gru = gru_;
  model.linear_before_reset = cells.linear_before_reset;
  model.layers = layers_;
  model.hidden = hidden_;
  model.input = static_cast<int>(E);
  model.vocab = static_cast<int>(V);
  model.end_token = program.end_token;
  model.embedding = base + embedding;
  model.projection = base + projection;
  model.projection_bias = base + bias;

  const loop_support::DeviceFacts facts = loop_support::device_facts(device_);
  persistent_model_ = model;
  plan_persistent(layers, facts, program.persistent_grid_max_sms);  // fills the cache fields of `layers`

  HostImage table(DType::f32);
  table.add_bytes(layers.data(), layers.size() * sizeof(kd::GreedyLayer));
  layer_table_ = table.upload(backend_, device_);
  persistent_model_.layer = static_cast<const kd::GreedyLayer*>(layer_table_.get());

  // Step kernels: one hidden unit per warp; the projection over a couple of blocks per SM, each a
  // contiguous vocabulary slice; the fill kernels grid-stride.
  step_model_ = model;
  step_model_.layer = persistent_model_.layer;  // their cache fields are unused without a cache
  step_model_.units_per_block = kWarps;
  cell_grid_ = static_cast<unsigned>(ceil_div(H, kWarps));
  const std::int64_t slices = std::clamp<std::int64_t>(ceil_div(V, kWarps), 1, 2 * facts.sm_count);
  step_model_.vocab_per_block = static_cast<int>(ceil_div(V, slices));
  projection_grid_ = static_cast<unsigned>(ceil_div(V, step_model_.vocab_per_block));
  step_model_.partial_blocks = static_cast<int>(projection_grid_);
  fill_grid_ = static_cast<unsigned>(4 * facts.sm_count);
  max_partials_ = std::max(persistent_model_.partial_blocks, step_model_.partial_blocks);
}

// One block per SM (at most max_sms of them), each owning ceil(hidden / blocks) hidden units of
// every layer and an equal slice of the vocabulary. Shared memory holds, in order of preference,
// the recurrent rows (R) of each layer and then the input rows (W), as many units of each as fit.
void CudaGreedyDecoder::plan_persistent(std::vector<kd::GreedyLayer>& layers, const loop_support::DeviceFacts& facts,
                                        int max_sms) {
  const void* persistent = kernel(kd::GreedyKernel::persistent);
  const std::size_t budget = raise_smem_limit(persistent, device_);

  const int grid = std::max(recurrent_loop::persistent_grid_limit(facts.sm_count, 1, max_sms), 1);
  const int units = static_cast<int>(ceil_div(hidden_, grid));
  const std::size_t element = dtype_size(dtype_);
  std::size_t used = 0;
  bool all_cached = true;
  const auto place = [&](std::int64_t n, int& cached_units, int& offset) {
    const std::size_t unit_bytes = static_cast<std::size_t>(gates_ * n) * element;
    const std::size_t at = (used + 15) / 16 * 16;
    const std::size_t room = budget > at ? budget - at : 0;
    cached_units = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(units), room / unit_bytes));
    offset = static_cast<int>(at);
    if (cached_units > 0) used = at + static_cast<std::size_t>(cached_units) * unit_bytes;
    all_cached = all_cached && cached_units == units;
  };
  for (kd::GreedyLayer& layer : layers) place(hidden_, layer.r_units_cached, layer.r_offset);
  for (kd::GreedyLayer& layer : layers) place(layer.input, layer.w_units_cached, layer.w_offset);

  int per_sm = 0;
  LOOM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent, loop_support::kThreads, used));
  if (per_sm < 1)
    throw Error(ErrorCode::unsupported, "decoder '" + name_ + "': the persistent kernel cannot be resident with " +
                                            std::to_string(used) + " bytes of shared memory");
  // The grid barrier needs every block resident at once: at most per_sm blocks per SM; one is used.
  persistent_grid_ = static_cast<unsigned>(grid);
  persistent_shared_ = used;
  weights_on_chip_ = all_cached;
  persistent_model_.units_per_block = units;
  persistent_model_.vocab_per_block = static_cast<int>(ceil_div(vocab_, grid));
  persistent_model_.partial_blocks = grid;
}

kd::GreedyRun CudaGreedyDecoder::carve(ScratchCarver& carver, int batch) const {
  const std::int64_t state = static_cast<std::int64_t>(layers_) * batch * hidden_;
  const std::size_t element = dtype_size(dtype_);
  kd::GreedyRun run;
  run.h = carver.take_bytes(2 * static_cast<std::size_t>(state) * element);
  if (!gru_) run.c = carver.take_bytes(static_cast<std::size_t>(state) * element);
  if (split_gru_) {
    run.reset_h = carver.take<float>(static_cast<std::int64_t>(batch) * hidden_);
    run.kept_gates = carver.take<float>(2 * static_cast<std::int64_t>(batch) * hidden_);
  }
  run.next_token = carver.take<std::int32_t>(batch);
  run.alive = carver.take<std::int32_t>(batch);
  run.partial_logit = carver.take<float>(static_cast<std::int64_t>(max_partials_) * batch);
  run.partial_token = carver.take<std::int32_t>(static_cast<std::int64_t>(max_partials_) * batch);
  return run;
}

void CudaGreedyDecoder::describe_run(kd::GreedyRun& run, const DecodeArgs& args, const volatile std::int32_t*,
                                     DecoderRunStatus* status) const {
  run.batch = args.batch;
  run.steps = args.steps;
  run.first_tokens = static_cast<const std::int32_t*>(args.input);
  run.tokens = static_cast<std::int32_t*>(args.output);
  run.out_lengths = args.out_lengths;
  run.initial_h = args.initial_h;
  run.initial_c = gru_ ? nullptr : args.initial_c;
  run.final_h = args.final_h;
  run.final_c = gru_ ? nullptr : args.final_c;
  run.status = &status->steps_run;
}

// A step: every layer's cell kernel (two parts for a GRU without linear_before_reset), the
// projection, then the advance; finish writes the final state after the loop.
StepPlan<kd::GreedyKernelArgs> CudaGreedyDecoder::step_plan(const kd::GreedyKernelArgs& args) const {
  StepPlan<kd::GreedyKernelArgs> plan;
  plan.init = {kernel(kd::GreedyKernel::init), fill_grid_, args};
  for (int l = 0; l < layers_; ++l) {
    for (int part = 0; part < (split_gru_ ? 2 : 1); ++part) {
      StepLaunch<kd::GreedyKernelArgs> cell{kernel(kd::GreedyKernel::cell), cell_grid_, args};
      cell.args.layer = l;
      cell.args.part = part;
      plan.body.push_back(cell);
    }
  }
  plan.body.push_back({kernel(kd::GreedyKernel::projection), projection_grid_, args});
  plan.body.push_back({kernel(kd::GreedyKernel::advance), 1, args});
  plan.tail = StepLaunch<kd::GreedyKernelArgs>{kernel(kd::GreedyKernel::finish), fill_grid_, args};
  plan.max_iterations = std::max(args.run.steps, 0);
  return plan;
}

}  // namespace

std::unique_ptr<DeviceDecoder> make_cuda_greedy_decoder(const DecoderProgram& program, Backend& device) {
  return std::make_unique<CudaGreedyDecoder>(program, device);
}

}  // namespace loom::backend::cuda::decoders
