// Picks the backend's implementation of a decoder and of pause-flag memory.
#include "decode/device_decoder.hpp"

namespace loom::decode::detail {

std::unique_ptr<DeviceDecoder> make_device_decoder(const Program& program, backend::Backend& device) {
#ifdef LOOM_HAVE_CUDA
  if (device.kind() == backend::Kind::cuda) return make_cuda_decoder(program, device);
#endif
  if (device.kind() != backend::Kind::cpu)
    throw Error(ErrorCode::unsupported,
                "decoder '" + program.name + "': no decoder for the " + device.name() + " backend in this build");
  return make_cpu_decoder(program, device);
}

FlagMemory allocate_flag([[maybe_unused]] backend::Backend& device) {
#ifdef LOOM_HAVE_CUDA
  if (device.kind() == backend::Kind::cuda) return allocate_cuda_flag(device);
#endif
  auto* host = new std::int32_t(0);
  return {host, host};
}

void free_flag([[maybe_unused]] backend::Backend& device, FlagMemory flag) noexcept {
#ifdef LOOM_HAVE_CUDA
  if (device.kind() == backend::Kind::cuda) return free_cuda_flag(flag);
#endif
  delete flag.host;
}

}  // namespace loom::decode::detail
