// libFuzzer target for the ONNX importer: any bytes must either load or throw loom::Error. Another
// exception type, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "loom/onnx.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    // No base folder: external data is refused, so the fuzzer never reads files.
    const loom::Model model = loom::load_onnx_from_memory(data, size, "fuzz.onnx");
    (void)model;
  } catch (const loom::Error&) {
    // The expected answer to a malformed or unsupported file.
  }
  return 0;
}
