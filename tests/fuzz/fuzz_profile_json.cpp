// libFuzzer target for the device profile reader (loom::parse_profile, behind read_profile and the
// executor's find_profile lookup): any bytes must either give a DeviceProfile or throw
// loom::Error. Another exception type, a crash, a hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "loom/error.hpp"
#include "loom/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    const loom::DeviceProfile profile = loom::parse_profile(in, "fuzz.json");
    (void)profile;
  } catch (const loom::Error&) {
    // The expected answer to a malformed file.
  }
  return 0;
}
