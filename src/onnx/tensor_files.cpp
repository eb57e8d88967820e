// Tensor files: ONNX TensorProto .pb files (the ONNX test data's input_0.pb, output_0.pb) and the
// dispatch by content between them and NumPy .npy files (npy.cpp).
#include <filesystem>
#include <fstream>

#include "loom/onnx.hpp"
#include "onnx/tensor_files.hpp"
#include "onnx/tensor_proto.hpp"

namespace loom {
namespace onnx_import {

Tensor tensor_pb_from_bytes(std::string_view bytes, const std::string& source, const std::string& base_dir,
                            std::string* tensor_name) {
  onnx::TensorProto proto;
  if (!parse_message(bytes.data(), bytes.size(), &proto))
    throw Error(ErrorCode::invalid_argument, source + ": not a valid ONNX TensorProto file (malformed or truncated)");
  try {
    Tensor tensor = tensor_from_proto(proto, base_dir);
    if (tensor_name) *tensor_name = proto.name();
    return tensor;
  } catch (const Error& e) {
    throw Error(e.code(), source + ": " + e.what());
  }
}

}  // namespace onnx_import

Tensor read_tensor_pb(const std::string& path, std::string* name) {
  const std::string bytes = onnx_import::read_file(path);
  return onnx_import::tensor_pb_from_bytes(bytes, path, onnx_import::folder_of(path), name);
}

void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  onnx::TensorProto proto;
  onnx_import::tensor_to_proto(tensor, &proto);
  if (!name.empty()) proto.set_name(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out || !proto.SerializeToOstream(&out) || !out.flush())
    throw Error(ErrorCode::invalid_argument, path + ": cannot be written");
}

Tensor read_tensor_file(const std::string& path) {
  const std::string bytes = onnx_import::read_file(path);
  // A TensorProto file does not start with the magic string (its first byte would open a protobuf
  // group, a wire type no TensorProto writer emits), so the content decides; the extension keeps a
  // broken .npy reported as a broken .npy.
  const bool npy = bytes.compare(0, 6, "\x93NUMPY") == 0 || std::filesystem::path(path).extension() == ".npy";
  if (npy) return onnx_import::npy_from_bytes(bytes, path);
  return onnx_import::tensor_pb_from_bytes(bytes, path, onnx_import::folder_of(path));
}

}  // namespace loom
