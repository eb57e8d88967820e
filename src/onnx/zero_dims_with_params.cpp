// find_zero_dims_with_params(): a walk over the protobuf wire format from ModelProto down to each
// graph input's TensorShapeProto.Dimension, skipping every other field (initializers included)
// without copying it.
#include "onnx/zero_dims_with_params.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

namespace loom::onnx_import {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Field numbers of onnx.proto on the path to a graph input's dimensions.
constexpr std::array<int, 2> kPathToInputs = {7, 11};     // ModelProto.graph, GraphProto.input
constexpr std::array<int, 4> kPathToDims = {2, 1, 2, 1};  // ValueInfoProto.type, TypeProto.tensor_type,
                                                          // TypeProto.Tensor.shape, TensorShapeProto.dim
constexpr int kDimValue = 1;                              // TensorShapeProto.Dimension.dim_value
constexpr int kDimParam = 2;                              // TensorShapeProto.Dimension.dim_param

bool is_field(std::uint32_t tag, int number, WireFormatLite::WireType type) {
  return WireFormatLite::GetTagFieldNumber(tag) == number && WireFormatLite::GetTagWireType(tag) == type;
}

bool is_message(std::uint32_t tag, int number) {
  return is_field(tag, number, WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
}

// Calls on_field(tag) for each field up to the stream's current limit; on_field reads or skips
// the field's value and returns false when the bytes do not hold one.
template <class OnField>
bool each_field(CodedInputStream& in, OnField&& on_field) {
  while (true) {
    const std::uint32_t tag = in.ReadTag();
    if (tag == 0) return in.ConsumedEntireMessage();
    if (!on_field(tag)) return false;
  }
}

// Reads a length-delimited value as a nested message: `body` sees the stream limited to it.
template <class Body>
bool nested(CodedInputStream& in, Body&& body) {
  std::uint32_t length = 0;
  if (!in.ReadVarint32(&length) || length > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) return false;
  const auto limit = in.PushLimit(static_cast<int>(length));
  const bool ok = body();
  in.PopLimit(limit);
  return ok;
}

// Follows `path`, field numbers of nested messages, from the message the stream is in, calling
// on_leaf() on each message at its end (positioned on the message's length). A field that appears
// twice is followed twice, which is what protobuf's merge gives for repeated and message fields.
bool follow(CodedInputStream& in, std::span<const int> path, const std::function<bool()>& on_leaf) {
  return each_field(in, [&](std::uint32_t tag) {
    if (!is_message(tag, path.front())) return WireFormatLite::SkipField(&in, tag);
    if (path.size() == 1) return on_leaf();
    return nested(in, [&] { return follow(in, path.subspan(1), on_leaf); });
  });
}

}  // namespace

ZeroDimParams find_zero_dims_with_params(const void* data, std::size_t size) {
  ZeroDimParams found;
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) return found;
  CodedInputStream in(static_cast<const std::uint8_t*>(data), static_cast<int>(size));
  in.SetTotalBytesLimit(std::numeric_limits<int>::max());

  int input = -1, axis = -1;
  const auto on_dim = [&] {
    ++axis;
    bool value_last = false;  // the oneof ends as dim_value
    std::uint64_t value = 1;
    std::string param;
    const bool ok = nested(in, [&] {
      return each_field(in, [&](std::uint32_t tag) {
        if (is_field(tag, kDimValue, WireFormatLite::WIRETYPE_VARINT)) {
          value_last = true;
          return in.ReadVarint64(&value);
        }
        if (is_message(tag, kDimParam)) {
          value_last = false;
          return WireFormatLite::ReadString(&in, &param);
        }
        return WireFormatLite::SkipField(&in, tag);
      });
    });
    if (ok && value_last && value == 0 && !param.empty()) found[{input, axis}] = param;
    return ok;
  };
  const auto on_input = [&] {
    ++input;
    axis = -1;
    return nested(in, [&] { return follow(in, kPathToDims, on_dim); });
  };
  follow(in, kPathToInputs, on_input);
  return found;
}

}  // namespace loom::onnx_import
