// The CUDA decoders, one file per kind (recurrent: cuda_recurrent.cpp; greedy: cuda_greedy.cpp;
// encoder: cuda_encoder.cpp), and what they share. make_cuda_decoder() picks by Program::kind.
#pragma once

#include <memory>

#include "decode/device_decoder.hpp"

namespace loom::decode::detail {

std::unique_ptr<DeviceDecoder> make_cuda_recurrent_decoder(const Program& program, backend::Backend& device);
std::unique_ptr<DeviceDecoder> make_cuda_greedy_decoder(const Program& program, backend::Backend& device);
std::unique_ptr<DeviceDecoder> make_cuda_encoder_decoder(const Program& program, backend::Backend& device);

}  // namespace loom::decode::detail
