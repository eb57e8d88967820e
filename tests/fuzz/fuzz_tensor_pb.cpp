// libFuzzer target for the TensorProto file reader (read_tensor_pb, loom-run's input_<i>.pb): any
// bytes must either give a Tensor or throw loom::Error. Another exception type, a crash, a hang or
// a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx/tensor_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    // No base folder: external data is refused, so the fuzzer never reads files.
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::string name;
    const loom::Tensor tensor = loom::onnx_import::tensor_pb_from_bytes(bytes, "fuzz.pb", "", &name);
    (void)tensor;
  } catch (const loom::Error&) {
    // The expected answer to a malformed or unsupported file.
  }
  return 0;
}
