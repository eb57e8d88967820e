// Graph-input dimensions written with both a dim_value of 0 and a dim_param. The two share a
// protobuf oneof, so the parsed ModelProto keeps only the field that came last on the wire; this
// reads the wire format itself to find the name that a trailing dim_value 0 hid.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>

namespace loom::onnx_import {

// (index in GraphProto.input, axis) -> the dim_param of a dimension whose last value field is
// dim_value 0 and which also carries a non-empty dim_param.
using ZeroDimParams = std::map<std::pair<int, int>, std::string>;

// Scans the serialized ModelProto `data` (already parsed successfully) for such dimensions.
// Never throws: bytes it cannot follow end the scan with what was found so far.
ZeroDimParams find_zero_dims_with_params(const void* data, std::size_t size);

}  // namespace loom::onnx_import
