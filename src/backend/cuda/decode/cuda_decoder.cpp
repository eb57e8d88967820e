// The CUDA decoders' factory, registered under the CUDA backend's name. Pause flags come from the
// backend (CudaBackend::create_pause_flag: mapped pinned host memory the kernels poll).
#include "backend/cuda/decode/cuda_decoders.hpp"
#include "loom/error.hpp"

namespace loom::backend::cuda::decoders {
namespace {

std::unique_ptr<DeviceDecoder> make_cuda_decoder(const DecoderProgram& program, Backend& device) {
  switch (program.kind) {
    case DecoderProgram::Kind::recurrent:
      return make_cuda_recurrent_decoder(program, device);
    case DecoderProgram::Kind::greedy:
      return make_cuda_greedy_decoder(program, device);
    case DecoderProgram::Kind::encoder:
      return make_cuda_encoder_decoder(program, device);
  }
  throw Error(ErrorCode::internal, "decoder '" + program.name + "': unknown kind");
}

[[maybe_unused]] const bool registered = register_decoder_factory("cuda", make_cuda_decoder);

}  // namespace
}  // namespace loom::backend::cuda::decoders
