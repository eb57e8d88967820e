// The CUDA decoders, one file per kind (recurrent: cuda_recurrent.cpp; greedy: cuda_greedy.cpp;
// encoder: cuda_encoder.cpp), and what they share. cuda_decoder.cpp registers the factory that
// picks by DecoderProgram::kind.
#pragma once

#include <memory>

#include "backend/decoder.hpp"

namespace loom::backend::cuda::decoders {

// The public decode types the loops speak (loom/decode_types.hpp).
using decode::CellLayer;
using decode::CellStack;
using decode::CellType;
using decode::DecodeArgs;
using decode::DecodeMethod;
using decode::EncoderBlock;

std::unique_ptr<DeviceDecoder> make_cuda_recurrent_decoder(const DecoderProgram& program, Backend& device);
std::unique_ptr<DeviceDecoder> make_cuda_greedy_decoder(const DecoderProgram& program, Backend& device);
std::unique_ptr<DeviceDecoder> make_cuda_encoder_decoder(const DecoderProgram& program, Backend& device);

}  // namespace loom::backend::cuda::decoders
