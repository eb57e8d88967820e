// The CUDA decoder factory and pause-flag memory (mapped pinned host memory the kernels poll).
#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "decode/cuda/cuda_decoders.hpp"

namespace loom::decode::detail {

std::unique_ptr<DeviceDecoder> make_cuda_decoder(const Program& program, backend::Backend& device) {
  switch (program.kind) {
    case Program::Kind::recurrent:
      return make_cuda_recurrent_decoder(program, device);
    case Program::Kind::greedy:
      return make_cuda_greedy_decoder(program, device);
    case Program::Kind::encoder:
      return make_cuda_encoder_decoder(program, device);
  }
  throw Error(ErrorCode::internal, "decoder '" + program.name + "': unknown kind");
}

FlagMemory allocate_cuda_flag(backend::Backend&) {
  void* host = nullptr;
  LOOM_CUDA_CHECK(cudaHostAlloc(&host, sizeof(std::int32_t), cudaHostAllocMapped));
  *static_cast<std::int32_t*>(host) = 0;
  void* device = nullptr;
  LOOM_CUDA_CHECK(cudaHostGetDevicePointer(&device, host, 0));
  return {static_cast<std::int32_t*>(host), static_cast<const volatile std::int32_t*>(device)};
}

void free_cuda_flag(FlagMemory flag) noexcept {
  backend::cuda::release_outside_captures([host = flag.host] { LOOM_CUDA_CHECK_NOTHROW(cudaFreeHost(host)); });
}

}  // namespace loom::decode::detail
