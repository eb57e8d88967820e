// ONNX files in and out: models (load_onnx) and tensors (TensorProto .pb files as in the ONNX
// test data, and NumPy .npy files).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom {

// Reads an ONNX model: default-domain opsets 11 to 17, initializers (raw or typed data, external
// data files resolved against the model's folder), Constant nodes, symbolic input dimensions
// (ValueInfo::dim_params). Ops of older opsets are rewritten to their opset-17 form (e.g.
// Squeeze's axes attribute becomes a constant input). Throws Error(invalid_model) for a
// malformed, truncated or inconsistent file and Error(unsupported) for an op, dtype or opset
// Loom does not run, each naming the file and, where there is one, the node and op.
Model load_onnx(const std::string& path);
// As load_onnx() on bytes already in memory; `name` stands for the file in messages, `base_dir`
// is where external data files are looked for ("" refuses external data).
Model load_onnx_from_memory(const void* data, std::size_t size, const std::string& name,
                            const std::string& base_dir = "");

// An ONNX TensorProto file (input_0.pb ...). `name` (optional) receives the tensor's name.
Tensor read_tensor_pb(const std::string& path, std::string* name = nullptr);
void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name = "");
// A NumPy .npy file (little-endian, C order; f4, f2, i8, i4, b1).
Tensor read_npy(const std::string& path);
// .npy by extension, otherwise TensorProto.
Tensor read_tensor_file(const std::string& path);

}  // namespace loom
