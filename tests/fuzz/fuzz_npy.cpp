// libFuzzer target for the NumPy .npy reader (read_npy, loom-run's input_<i>.npy): any bytes must
// either give a Tensor or throw loom::Error. Another exception type, a crash, a hang or a
// sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx/tensor_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const loom::Tensor tensor = loom::onnx_import::npy_from_bytes(bytes, "fuzz.npy");
    (void)tensor;
  } catch (const loom::Error&) {
    // The expected answer to a malformed or unsupported file.
  }
  return 0;
}
