// The CUDA encoder-stack decoder: every block's weights uploaded once in the decoder's dtype, then
// per sample one persistent kernel looping over the blocks (grid barriers between layernorm, W1 and
// W2), a graph whose WHILE node repeats the block kernels, or the host loop baseline. The pause
// flag is read after each block; a paused run leaves x in the output for the resume.
#include <algorithm>
#include <array>
#include <memory>
#include <string>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/recurrent_loop_plan.hpp"
#include "backend/cuda/decode/cuda_decoders.hpp"
#include "backend/cuda/decode/loop_support.hpp"
#include "decode_encoder.cuh"

namespace loom::backend::cuda::decoders {
namespace {

namespace kd = loom::kernels::decode;
using loop_support::ceil_div;
using loop_support::DeviceMemory;
using loop_support::HostImage;
using loop_support::kWarps;
using loop_support::ScratchCarver;
using loop_support::StepPlan;

class CudaEncoderDecoder final : public loop_support::LoopDecoder<kd::EncoderRun, kd::EncoderKernelArgs> {
 public:
  CudaEncoderDecoder(const DecoderProgram& program, Backend& backend);

  std::uint64_t weight_bytes() const override { return weight_bytes_; }
  // A step is one block; every block has the same sizes.
  std::uint64_t recurrent_weight_bytes() const override { return block_bytes_; }
  bool weights_on_chip() const override { return false; }

 private:
  kd::EncoderRun carve(ScratchCarver& carver, int batch) const override;
  void describe_run(kd::EncoderRun& run, const DecodeArgs& args, const volatile std::int32_t* pause_flag,
                    DecoderRunStatus* status) const override;
  const void* persistent_kernel() const override { return kernel(kd::EncoderKernel::persistent); }
  StepPlan<kd::EncoderKernelArgs> step_plan(const kd::EncoderKernelArgs& args) const override;
  const void* kernel(kd::EncoderKernel which) const { return kd::encoder_kernel(which, dtype_); }

  int width_, ff_, blocks_;
  DeviceMemory weights_;
  DeviceMemory block_table_;  // kd::EncoderBlockWeights[blocks]
  std::uint64_t weight_bytes_ = 0, block_bytes_ = 0;
  unsigned fill_grid_ = 1, norm_grid_ = 1, expand_grid_ = 1, contract_grid_ = 1;
};

CudaEncoderDecoder::CudaEncoderDecoder(const DecoderProgram& program, Backend& backend)
    : LoopDecoder(program, backend, "encoder"),
      width_(static_cast<int>(program.encoder.width)),
      ff_(static_cast<int>(program.ff)),
      blocks_(static_cast<int>(program.encoder.blocks.size())) {
  if (width_ < 1 || ff_ < 1 || blocks_ < 1)
    throw Error(ErrorCode::invalid_argument, "decoder '" + name_ + "': empty width, ff or block list");
  DeviceGuard guard(device_);

  const std::int64_t W = width_, F = ff_;
  HostImage image(dtype_);
  std::vector<std::array<std::size_t, 6>> offsets;
  for (int k = 0; k < blocks_; ++k) {
    const EncoderBlock& block = program.encoder.blocks[static_cast<std::size_t>(k)];
    const std::string where = "decoder '" + name_ + "' block " + std::to_string(k);
    offsets.push_back({image.add_floats(block.norm_scale, W, where + " norm_scale"),
                       image.add_floats(block.norm_bias, W, where + " norm_bias"),
                       image.add_floats(block.w1, F * W, where + " w1"), image.add_floats(block.b1, F, where + " b1"),
                       image.add_floats(block.w2, W * F, where + " w2"), image.add_floats(block.b2, W, where + " b2")});
  }
  weights_ = image.upload(backend_, device_);
  block_bytes_ = static_cast<std::uint64_t>(3 * W + 2 * F * W + F) * dtype_size(dtype_);
  weight_bytes_ = block_bytes_ * static_cast<std::uint64_t>(blocks_);

  auto* base = static_cast<const std::byte*>(weights_.get());
  std::vector<kd::EncoderBlockWeights> table;
  for (const auto& at : offsets)
    table.push_back({base + at[0], base + at[1], base + at[2], base + at[3], base + at[4], base + at[5]});
  HostImage table_image(DType::f32);
  table_image.add_bytes(table.data(), table.size() * sizeof(kd::EncoderBlockWeights));
  block_table_ = table_image.upload(backend_, device_);

  // The persistent and the step kernels share one model.
  kd::EncoderModel model;
  model.width = width_;
  model.ff = ff_;
  model.blocks = blocks_;
  model.epsilon = program.encoder.epsilon;
  model.block = static_cast<const kd::EncoderBlockWeights*>(block_table_.get());
  persistent_model_ = model;
  step_model_ = model;

  // Phases give one warp per row (batch rows, W1 rows, W2 rows). The persistent grid covers the
  // widest phase, capped at two blocks per SM (fewer blocks make cheaper barriers; warps loop over
  // the rest) and always within what can be resident at once, and within the caller's cap on SMs.
  const loop_support::DeviceFacts facts = loop_support::device_facts(device_);
  const void* persistent = kernel(kd::EncoderKernel::persistent);
  int per_sm = 0;
  LOOM_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, persistent, loop_support::kThreads, 0));
  if (per_sm < 1)
    throw Error(ErrorCode::unsupported, "decoder '" + name_ + "': the persistent encoder kernel cannot be resident");
  const std::int64_t widest = std::max<std::int64_t>({F, W, program.max_batch});
  const std::int64_t resident =
      recurrent_loop::persistent_grid_limit(facts.sm_count, std::min(per_sm, 2), program.persistent_grid_max_sms);
  persistent_grid_ = static_cast<unsigned>(std::clamp<std::int64_t>(ceil_div(widest, kWarps), 1, resident));
  fill_grid_ = static_cast<unsigned>(4 * facts.sm_count);
  norm_grid_ = static_cast<unsigned>(ceil_div(program.max_batch, kWarps));
  expand_grid_ = static_cast<unsigned>(ceil_div(F, kWarps));
  contract_grid_ = static_cast<unsigned>(ceil_div(W, kWarps));
}

kd::EncoderRun CudaEncoderDecoder::carve(ScratchCarver& carver, int batch) const {
  kd::EncoderRun run;
  run.normalized = carver.take<float>(static_cast<std::int64_t>(batch) * width_);
  run.hidden = carver.take<float>(static_cast<std::int64_t>(batch) * ff_);
  return run;
}

void CudaEncoderDecoder::describe_run(kd::EncoderRun& run, const DecodeArgs& args,
                                      const volatile std::int32_t* pause_flag, DecoderRunStatus* status) const {
  run.batch = args.batch;
  run.start = args.start_step;
  run.count = args.steps == 0 ? blocks_ : std::min(args.steps, blocks_);
  run.input = args.input;
  run.output = args.output;
  run.pause = pause_flag;
  run.status = &status->steps_run;
}

// A step is one block: layernorm, W1, W2, then the advance (which checks the pause flag).
StepPlan<kd::EncoderKernelArgs> CudaEncoderDecoder::step_plan(const kd::EncoderKernelArgs& args) const {
  StepPlan<kd::EncoderKernelArgs> plan;
  plan.init = {kernel(kd::EncoderKernel::init), fill_grid_, args};
  plan.body = {{kernel(kd::EncoderKernel::norm), norm_grid_, args},
               {kernel(kd::EncoderKernel::expand), expand_grid_, args},
               {kernel(kd::EncoderKernel::contract), contract_grid_, args},
               {kernel(kd::EncoderKernel::advance), 1, args}};
  plan.max_iterations = std::max(args.run.count - args.run.start, 0);
  return plan;
}

}  // namespace

std::unique_ptr<DeviceDecoder> make_cuda_encoder_decoder(const DecoderProgram& program, Backend& device) {
  return std::make_unique<CudaEncoderDecoder>(program, device);
}

}  // namespace loom::backend::cuda::decoders
