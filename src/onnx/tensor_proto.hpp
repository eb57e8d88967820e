// ONNX TensorProto <-> loom::Tensor, shared by the model importer (initializers, Constant nodes,
// TENSOR attributes) and the .pb tensor files; plus the protobuf parsing both use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include "loom/tensor.hpp"

namespace loom::onnx_import {

// The TensorProto.DataType value of `dtype` (the other way: dtype_from_onnx_code(), loom/tensor.hpp).
std::int32_t onnx_data_type(DType dtype) noexcept;
// "DOUBLE", "UINT8"... or "data type 42" for a value onnx.proto does not define.
std::string onnx_type_name(std::int32_t data_type);

// Converts `proto` (raw_data, typed fields or external data) into a Tensor. External data files
// are looked up relative to `base_dir`; an empty base_dir refuses external data. Throws
// Error(unsupported) for a dtype Loom lacks, Error(invalid_model) when the data does not match
// the dims or the external data is missing or outside base_dir. Messages name the tensor but
// not the file: the caller adds it.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir);
// Fills `proto` with the dims, data type and raw_data of `tensor`.
void tensor_to_proto(const Tensor& tensor, onnx::TensorProto* proto);

// Parses `size` bytes into `message` with protobuf's 64 MB default limit raised to 2 GB, so
// large models load; false when the bytes are not a complete message.
bool parse_message(const void* data, std::size_t size, google::protobuf::MessageLite* message);

// The folder holding `path` ("." for a bare file name): where its external data is looked for.
std::string folder_of(const std::string& path);

// The whole file; throws Error(invalid_argument) naming `path` when it cannot be read.
std::string read_file(const std::string& path);

}  // namespace loom::onnx_import
