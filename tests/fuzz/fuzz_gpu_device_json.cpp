// libFuzzer target for the GPU description reader (loom::sim::parse_gpu_device, profiles/gpu/*.json):
// any bytes must either give a GpuDevice or throw loom::Error. Another exception type, a crash, a
// hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "loom/error.hpp"
#include "loom/sim.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    const loom::sim::GpuDevice device = loom::sim::parse_gpu_device(in, "fuzz.json");
    (void)device;
  } catch (const loom::Error&) {
    // The expected answer to a malformed file.
  }
  return 0;
}
