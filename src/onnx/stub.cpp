// Placeholder until the importer lands (replaced by importer.cpp and tensor_io.cpp).
#include "loom/onnx.hpp"

namespace loom {
namespace {
[[noreturn]] void not_yet() { throw Error(ErrorCode::unsupported, "ONNX import is not built yet"); }
}  // namespace
Model load_onnx(const std::string&) { not_yet(); }
Model load_onnx_from_memory(const void*, std::size_t, const std::string&, const std::string&) { not_yet(); }
Tensor read_tensor_pb(const std::string&, std::string*) { not_yet(); }
void write_tensor_pb(const std::string&, const Tensor&, const std::string&) { not_yet(); }
Tensor read_npy(const std::string&) { not_yet(); }
Tensor read_tensor_file(const std::string&) { not_yet(); }
}  // namespace loom
