// The tensor-file readers on bytes already in memory: read_tensor_pb() and read_npy() read the
// file and call these; the fuzzers (tests/fuzz) call them directly.
#pragma once

#include <string>
#include <string_view>

#include "loom/tensor.hpp"

namespace loom::onnx_import {

// A TensorProto file's bytes. `source` stands for the file in messages; external data is looked
// up relative to `base_dir` ("" refuses it); `tensor_name` (optional) receives the stored name.
// Throws as read_tensor_pb() does.
Tensor tensor_pb_from_bytes(std::string_view bytes, const std::string& source, const std::string& base_dir,
                            std::string* tensor_name = nullptr);

// A .npy file's bytes; `source` stands for the file in messages. Throws as read_npy() does.
Tensor npy_from_bytes(std::string_view bytes, const std::string& source);

}  // namespace loom::onnx_import
