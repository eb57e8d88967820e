// ONNX files in and out: models (load_onnx) and tensors (TensorProto .pb files as in the ONNX
// test data, and NumPy .npy files).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom {

// Reads an ONNX model: default-domain opsets 1 to 17, initializers (raw or typed data, external
// data files resolved against the model's folder, never outside it), Constant nodes (they become
// initializers), symbolic input dimensions (ValueInfo::dim_params: a dim_param, a dimension with
// no value, a negative dim_value as onnxruntime takes it, or a dim_value 0 given with a dim_param;
// unnamed ones are called unnamed_dim_name()). Ops of older opsets are rewritten to their opset-17
// form (e.g. Squeeze's axes attribute becomes a constant input).
// The model's metadata holds "source" (the path, so later shape errors name the file) and
// "onnx:opset". Throws Error(invalid_argument) for a file that cannot be read,
// Error(invalid_model) for a malformed, truncated or inconsistent file (a value nothing defines,
// data that does not fit its dims) and Error(unsupported) for an op, dtype, domain or opset Loom
// does not run, each naming the file and, where there is one, the node and op or the tensor.
Model load_onnx(const std::string& path);
// The name load_onnx() gives a symbolic input dimension that has no dim_param (a dim_value of -1
// or any negative value, or neither field): "<input>:<axis>", e.g. "x:0" for the first axis of
// input "x". It binds like a named one: OptimizeOptions::dim_values["x:0"], or loom-run and
// loom-bench --dims=x:0=8.
std::string unnamed_dim_name(const std::string& input, std::size_t axis);
// As load_onnx() on bytes already in memory; `name` stands for the file in messages, `base_dir`
// is where external data files are looked for ("" refuses external data).
Model load_onnx_from_memory(const void* data, std::size_t size, const std::string& name,
                            const std::string& base_dir = "");

// An ONNX TensorProto file (input_0.pb ...). `name` (optional) receives the tensor's name.
// Throws Error(invalid_argument) for an unreadable or malformed file, Error(unsupported) for a
// dtype Loom lacks; messages name the file.
Tensor read_tensor_pb(const std::string& path, std::string* name = nullptr);
// Writes dims, data type, raw_data and (when not empty) the name. Throws Error(invalid_argument).
void write_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name = "");
// A NumPy .npy file (format 1.0 to 3.0, little-endian, C order; <f4, <f2, <i8, <i4, |b1). Throws
// Error(unsupported) for another dtype or Fortran order, Error(invalid_argument) for a malformed file.
Tensor read_npy(const std::string& path);
// NumPy when the file starts with the .npy magic string or is named *.npy, otherwise TensorProto;
// throws as those readers do.
Tensor read_tensor_file(const std::string& path);

}  // namespace loom
