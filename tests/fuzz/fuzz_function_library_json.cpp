// libFuzzer target for the function library reader (loom::parse_function_library, behind
// read_function_library and the executor's lookup at start): any bytes must either give a
// FunctionLibrary or throw loom::Error. Another exception type, a crash, a hang or a sanitizer
// report is a bug.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "loom/error.hpp"
#include "loom/placement.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    const loom::FunctionLibrary library = loom::parse_function_library(in, "fuzz.json");
    (void)library;
  } catch (const loom::Error&) {
    // The expected answer to a malformed file.
  }
  return 0;
}
