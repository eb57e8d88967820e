// The KServe v2 REST body codec (http_codec.hpp): JSON through nlohmann::json, binary tensors as
// the raw little-endian bytes of Loom's host tensors.
#include "http_codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "loom/error.hpp"
#include "loom/executor.hpp"
#include "request_parameters.hpp"

namespace loom::serve {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& message) { throw Error(ErrorCode::invalid_argument, message); }

std::string json_type(const json& value) { return value.type_name(); }

const json* field(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_field(const json& object, const char* key, const std::string& where, bool required) {
  const json* value = field(object, key);
  if (!value) {
    if (required) bad(where + ": the field '" + key + "' is missing");
    return {};
  }
  if (!value->is_string()) bad(where + "." + key + ": expected a string, got " + json_type(*value));
  return value->get<std::string>();
}

// Fills element `index` of `tensor` (storage type T) from a JSON number or boolean.
template <class T>
void put_value(Tensor& tensor, std::size_t index, const json& value, const std::string& input) {
  // The element's name is built only for an error: the data may hold millions of values.
  const auto where = [&] { return input + ".data[" + std::to_string(index) + "]"; };
  T* out = static_cast<T*>(tensor.data()) + index;
  const DType dtype = tensor.dtype();
  if constexpr (std::is_same_v<T, std::uint8_t>) {
    if (dtype == DType::boolean) {
      if (!value.is_boolean()) bad(where() + ": expected true or false for BOOL, got " + json_type(value));
      *out = value.get<bool>() ? 1 : 0;
      return;
    }
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, f16_t> ||
                std::is_same_v<T, bf16_t>) {
    if (!value.is_number()) bad(where() + ": expected a number, got " + json_type(value));
    const double v = value.get<double>();
    // A finite JSON number the datatype cannot hold is refused (for FP32 the conversion would be
    // undefined behaviour, for FP16 and BF16 an infinity the client did not send).
    if constexpr (!std::is_same_v<T, double>) {
      bool fits = std::abs(v) <= static_cast<double>(std::numeric_limits<float>::max());
      if constexpr (!std::is_same_v<T, float>) fits = fits && std::isfinite(widen(narrow<T>(v)));
      if (!fits) bad(where() + ": " + value.dump() + " is out of the range of " + std::string(kserve_datatype(dtype)));
    }
    *out = narrow<T>(v);
  } else {
    if (!value.is_number_integer())
      bad(where() + ": expected an integer for " + std::string(kserve_datatype(dtype)) + ", got " +
          (value.is_number_float() ? "the number " + value.dump() : json_type(value)));
    bool fits = false;
    if (value.is_number_unsigned()) {
      const auto v = value.get<std::uint64_t>();
      fits = v <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
      if (fits) *out = static_cast<T>(v);
    } else {
      const auto v = value.get<std::int64_t>();
      if constexpr (std::is_signed_v<T>)
        fits = v >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
               v <= static_cast<std::int64_t>(std::numeric_limits<T>::max());
      else
        fits = v >= 0 && static_cast<std::uint64_t>(v) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max());
      if (fits) *out = static_cast<T>(v);
    }
    if (!fits) bad(where() + ": " + value.dump() + " is out of the range of " + std::string(kserve_datatype(dtype)));
  }
}

// Walks flat or nested row-major data, writing each leaf in order; `count` counts the leaves.
// Nesting deeper than the shape's rank is refused before it could exhaust the stack.
template <class T>
void put_data(Tensor& tensor, const json& data, std::size_t& count, const std::string& where, std::size_t depth) {
  if (data.is_array()) {
    if (depth > std::max<std::size_t>(tensor.shape().rank(), 1))
      bad(where + ".data: nested " + std::to_string(depth) + " deep, deeper than the shape [" +
          tensor.shape().to_string() + "]");
    for (std::size_t i = 0; i < data.size(); ++i) put_data<T>(tensor, data[i], count, where, depth + 1);
    return;
  }
  const auto capacity = static_cast<std::size_t>(tensor.numel());
  if (count < capacity) put_value<T>(tensor, count, data, where);
  ++count;
}

template <class T>
void fill_from_json(Tensor& tensor, const json& data, const std::string& where) {
  if (!data.is_array()) bad(where + ".data: expected an array, got " + json_type(data));
  std::size_t count = 0;
  put_data<T>(tensor, data, count, where, 1);
  if (count != static_cast<std::size_t>(tensor.numel()))
    bad(where + ".data: " + std::to_string(count) + " values for shape [" + tensor.shape().to_string() + "] (" +
        std::to_string(tensor.numel()) + " values)");
}

void fill_from_json(Tensor& tensor, const json& data, const std::string& where) {
  switch (tensor.dtype()) {
    case DType::f32:
      return fill_from_json<float>(tensor, data, where);
    case DType::f16:
      return fill_from_json<f16_t>(tensor, data, where);
    case DType::bf16:
      return fill_from_json<bf16_t>(tensor, data, where);
    case DType::f64:
      return fill_from_json<double>(tensor, data, where);
    case DType::i64:
      return fill_from_json<std::int64_t>(tensor, data, where);
    case DType::i32:
      return fill_from_json<std::int32_t>(tensor, data, where);
    case DType::i16:
      return fill_from_json<std::int16_t>(tensor, data, where);
    case DType::i8:
      return fill_from_json<std::int8_t>(tensor, data, where);
    case DType::u64:
      return fill_from_json<std::uint64_t>(tensor, data, where);
    case DType::u32:
      return fill_from_json<std::uint32_t>(tensor, data, where);
    case DType::u16:
      return fill_from_json<std::uint16_t>(tensor, data, where);
    case DType::u8:
    case DType::boolean:
      return fill_from_json<std::uint8_t>(tensor, data, where);
  }
  bad(where + ": no JSON decoding for this datatype");
}

template <class T>
json to_json_values(const Tensor& tensor) {
  json values = json::array();
  const T* data = static_cast<const T*>(tensor.data());
  const auto n = static_cast<std::size_t>(tensor.numel());
  values.get_ref<json::array_t&>().reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, std::uint8_t>) {
      if (tensor.dtype() == DType::boolean) {
        values.push_back(data[i] != 0);
        continue;
      }
    }
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, f16_t> ||
                  std::is_same_v<T, bf16_t>) {
      const double v = static_cast<double>(widen(data[i]));
      if (std::isfinite(v))
        values.push_back(v);
      else
        values.push_back(nullptr);
    } else {
      values.push_back(data[i]);
    }
  }
  return values;
}

json to_json_values(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DType::f32:
      return to_json_values<float>(tensor);
    case DType::f16:
      return to_json_values<f16_t>(tensor);
    case DType::bf16:
      return to_json_values<bf16_t>(tensor);
    case DType::f64:
      return to_json_values<double>(tensor);
    case DType::i64:
      return to_json_values<std::int64_t>(tensor);
    case DType::i32:
      return to_json_values<std::int32_t>(tensor);
    case DType::i16:
      return to_json_values<std::int16_t>(tensor);
    case DType::i8:
      return to_json_values<std::int8_t>(tensor);
    case DType::u64:
      return to_json_values<std::uint64_t>(tensor);
    case DType::u32:
      return to_json_values<std::uint32_t>(tensor);
    case DType::u16:
      return to_json_values<std::uint16_t>(tensor);
    case DType::u8:
    case DType::boolean:
      return to_json_values<std::uint8_t>(tensor);
  }
  throw Error(ErrorCode::internal,
              "encode_infer_response: no JSON encoding for dtype " + std::string(dtype_name(tensor.dtype())));
}

std::vector<std::int64_t> decode_shape(const json& input, const std::string& where) {
  const json* shape = field(input, "shape");
  if (!shape) bad(where + ": the field 'shape' is missing");
  if (!shape->is_array()) bad(where + ".shape: expected an array of dims, got " + json_type(*shape));
  std::vector<std::int64_t> dims;
  for (std::size_t i = 0; i < shape->size(); ++i) {
    const json& dim = (*shape)[i];
    if (!dim.is_number_integer() ||
        (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<std::int64_t>() < 0))
      bad(where + ".shape[" + std::to_string(i) + "]: expected a dim of 0 or more, got " + dim.dump());
    if (dim.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
      bad(where + ".shape[" + std::to_string(i) + "]: " + dim.dump() + " is too large a dim");
    dims.push_back(dim.get<std::int64_t>());
  }
  return dims;
}

DType decode_datatype(const json& input, const std::string& where) {
  const std::string datatype = string_field(input, "datatype", where, true);
  if (datatype == "BYTES")
    bad(where + ".datatype: BYTES is unsupported (Loom's tensors hold numbers and booleans only)");
  const auto dtype = dtype_from_kserve(datatype);
  if (!dtype) bad(where + ".datatype: '" + datatype + "' is not a datatype of the protocol (FP32, INT64, BOOL, ...)");
  return *dtype;
}

// Rejects the parameters of extensions Loom does not implement, so that a client relying on them
// hears so instead of getting an answer computed from something else.
void refuse_shared_memory(const json& parameters, const std::string& where) {
  for (auto it = parameters.begin(); it != parameters.end(); ++it)
    if (const char* key = shared_memory_parameter(it.key()))
      bad(where + ".parameters." + key + ": the shared-memory extension is unsupported; send the data in the body");
}

void decode_request_parameters(const json& parameters, DecodedInfer& decoded) {
  const std::string where = "request.parameters";
  if (!parameters.is_object()) bad(where + ": expected an object, got " + json_type(parameters));
  for (auto it = parameters.begin(); it != parameters.end(); ++it) {
    const std::string& key = it.key();
    const json& value = it.value();
    if (key == "priority") {
      if (value.is_number_integer())
        decoded.request.priority = priority_from_parameter(value.get<std::int64_t>());
      else if (value.is_string())
        decoded.request.priority = priority_from_parameter(value.get<std::string>());
      else
        bad(where + ".priority: expected an integer or a name, got " + json_type(value));
    } else if (key == "timeout") {
      if (!value.is_number()) bad(where + ".timeout: expected microseconds, got " + json_type(value));
      decoded.request.timeout_ms = timeout_ms_from_parameter(value.get<double>());
    } else if (key == "binary_data_output") {
      if (!value.is_boolean()) bad(where + ".binary_data_output: expected true or false, got " + json_type(value));
      decoded.binary_data_output = value.get<bool>();
    } else if (key == "sequence_id") {
      const bool asks = value.is_number_integer() ? asks_sequence_batching(value.get<std::int64_t>())
                        : value.is_string()       ? asks_sequence_batching(value.get<std::string>())
                                                  : true;
      if (asks) bad(where + ".sequence_id: sequence batching is unsupported");
    }
    // Other parameters (sequence_start/end without an id, a client's own) are not Loom's: ignored,
    // as the protocol lets a server do.
  }
}

std::vector<RequestedOutput> decode_outputs(const json& outputs, bool binary_default) {
  if (!outputs.is_array()) bad("request.outputs: expected an array, got " + json_type(outputs));
  std::vector<RequestedOutput> requested;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string where = "request.outputs[" + std::to_string(i) + "]";
    const json& output = outputs[i];
    if (!output.is_object()) bad(where + ": expected an object, got " + json_type(output));
    RequestedOutput out;
    out.name = string_field(output, "name", where, true);
    out.binary = binary_default;
    if (const json* parameters = field(output, "parameters")) {
      if (!parameters->is_object()) bad(where + ".parameters: expected an object, got " + json_type(*parameters));
      refuse_shared_memory(*parameters, where);
      if (const json* binary = field(*parameters, "binary_data")) {
        if (!binary->is_boolean())
          bad(where + ".parameters.binary_data: expected true or false, got " + json_type(*binary));
        out.binary = binary->get<bool>();
      }
      if (const json* classification = field(*parameters, "classification"))
        if (!classification->is_number_integer() || asks_classification(classification->get<std::int64_t>()))
          bad(where + ".parameters.classification: the classification extension is unsupported");
    }
    for (const auto& earlier : requested)
      if (earlier.name == out.name) bad(where + ": the output '" + out.name + "' is requested twice");
    requested.push_back(std::move(out));
  }
  return requested;
}

}  // namespace

int http_status(Status status) noexcept {
  switch (status) {
    case Status::ok:
      return 200;
    case Status::bad_request:
      return 400;
    case Status::not_found:
      return 404;
    case Status::unavailable:
      return 503;
    case Status::timeout:
      return 504;
    case Status::too_large:
      return 413;
    case Status::internal:
      return 500;
  }
  return 500;
}

std::string http_error_body(std::string_view message) {
  // Replacement of invalid UTF-8 keeps a message quoting a client's bytes encodable.
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

DecodedInfer decode_infer_request(std::string_view body, std::optional<std::size_t> header_length, std::string model,
                                  std::string version) {
  std::string_view header = body;
  if (header_length) {
    if (*header_length > body.size())
      bad("Inference-Header-Content-Length: " + std::to_string(*header_length) + " is more than the body's " +
          std::to_string(body.size()) + " bytes");
    header = body.substr(0, *header_length);
  }
  // nlohmann's parser takes a NUL byte for the end of its input, and JSON text holds none: binary
  // bytes sent without the header that says where the JSON ends.
  if (const auto nul = header.find('\0'); nul != std::string_view::npos)
    bad("request body: a NUL byte at byte offset " + std::to_string(nul) +
        " of the JSON (binary tensor data needs the Inference-Header-Content-Length header)");
  json root;
  try {
    root = json::parse(header.begin(), header.end());
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's text starts "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
    const auto at = what.find("parse error");
    // e.byte counts from 1; the offset of the byte the parser stopped at counts from 0.
    bad("request body: malformed JSON at byte offset " + std::to_string(e.byte > 0 ? e.byte - 1 : 0) + " (" +
        (at == std::string::npos ? what : what.substr(at)) + ")");
  }
  if (!root.is_object()) bad("request body: expected a JSON object, got " + json_type(root));

  DecodedInfer decoded;
  InferRequest& request = decoded.request;
  request.model = std::move(model);
  request.version = std::move(version);
  if (const json* id = field(root, "id")) {
    if (!id->is_string()) bad("request.id: expected a string, got " + json_type(*id));
    request.id = id->get<std::string>();
  }
  if (const json* parameters = field(root, "parameters")) decode_request_parameters(*parameters, decoded);

  const json* inputs = field(root, "inputs");
  if (!inputs) bad("request: the field 'inputs' is missing");
  if (!inputs->is_array() || inputs->empty())
    bad("request.inputs: expected a non-empty array of inputs, got " +
        (inputs->is_array() ? std::string("[]") : json_type(*inputs)));

  // The binary part: each binary input's bytes, in input order, right after the JSON.
  std::size_t binary_offset = header.size();
  const std::size_t binary_end = body.size();
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    const json& input = (*inputs)[i];
    std::string where = "request.inputs[" + std::to_string(i) + "]";
    if (!input.is_object()) bad(where + ": expected an object, got " + json_type(input));
    InferInput decoded_input;
    decoded_input.name = string_field(input, "name", where, true);
    where += " ('" + decoded_input.name + "')";
    for (const auto& earlier : request.inputs)
      if (earlier.name == decoded_input.name) bad(where + ": the input '" + decoded_input.name + "' is given twice");
    const DType dtype = decode_datatype(input, where);
    const Shape shape(decode_shape(input, where));
    // Each value takes at least one byte of the body, as JSON or as binary data: a shape holding
    // more is refused before its tensor is allocated.
    std::size_t elements = 1;
    for (const std::int64_t dim : shape) {
      if (dim != 0 && elements > body.size() / static_cast<std::size_t>(dim)) {
        elements = body.size() + 1;
        break;
      }
      elements *= static_cast<std::size_t>(dim);
    }
    if (elements > body.size())
      bad(where + ".shape: [" + shape.to_string() + "] holds more values than a body of " +
          std::to_string(body.size()) + " bytes can carry");
    Tensor tensor(dtype, shape);

    std::optional<std::size_t> binary_size;
    if (const json* parameters = field(input, "parameters")) {
      if (!parameters->is_object()) bad(where + ".parameters: expected an object, got " + json_type(*parameters));
      refuse_shared_memory(*parameters, where);
      if (const json* size = field(*parameters, "binary_data_size")) {
        if (!size->is_number_unsigned())
          bad(where + ".parameters.binary_data_size: expected a byte count, got " + size->dump());
        binary_size = size->get<std::uint64_t>();
      }
    }
    const json* data = field(input, "data");
    if (binary_size) {
      if (data) bad(where + ": both 'data' and parameters.binary_data_size are given; send one");
      if (!header_length)
        bad(where + ".parameters.binary_data_size: binary data needs the Inference-Header-Content-Length header");
      if (*binary_size != tensor.bytes())
        bad(where + ".parameters.binary_data_size: " + std::to_string(*binary_size) + " bytes for " +
            std::string(kserve_datatype(dtype)) + " [" + tensor.shape().to_string() + "], which takes " +
            std::to_string(tensor.bytes()));
      if (*binary_size > binary_end - binary_offset)
        bad(where + ".parameters.binary_data_size: " + std::to_string(*binary_size) + " bytes, but only " +
            std::to_string(binary_end - binary_offset) + " remain in the body after the JSON and earlier inputs");
      if (*binary_size > 0) std::memcpy(tensor.data(), body.data() + binary_offset, *binary_size);
      binary_offset += *binary_size;
      if (const auto invalid = invalid_bool_byte(tensor)) bad(where + ": " + *invalid);
    } else {
      if (!data) bad(where + ": the field 'data' is missing (or parameters.binary_data_size for binary data)");
      fill_from_json(tensor, *data, where);
    }
    decoded_input.tensor = std::move(tensor);
    request.inputs.push_back(std::move(decoded_input));
  }
  if (binary_offset != binary_end)
    bad("request body: " + std::to_string(binary_end - binary_offset) +
        " bytes after the JSON and the binary inputs that no input's binary_data_size accounts for");

  if (const json* outputs = field(root, "outputs"))
    request.outputs = decode_outputs(*outputs, decoded.binary_data_output);
  return decoded;
}

EncodedInfer encode_infer_response(const InferResponse& response, bool all_binary) {
  json root;
  root["model_name"] = response.model;
  root["model_version"] = response.version;
  if (!response.id.empty()) root["id"] = response.id;
  json outputs = json::array();
  std::vector<const Tensor*> binary;
  for (const auto& output : response.outputs) {
    json out;
    out["name"] = output.name;
    out["datatype"] = std::string(kserve_datatype(output.tensor.dtype()));
    out["shape"] = output.tensor.shape().dims();
    if (output.binary || all_binary) {
      out["parameters"] = {{"binary_data_size", output.tensor.bytes()}};
      binary.push_back(&output.tensor);
    } else {
      out["data"] = to_json_values(output.tensor);
    }
    outputs.push_back(std::move(out));
  }
  root["outputs"] = std::move(outputs);
  EncodedInfer encoded;
  encoded.body = root.dump(-1, ' ', false, json::error_handler_t::replace);
  if (!binary.empty()) {
    encoded.header_length = encoded.body.size();
    std::size_t total = encoded.body.size();
    for (const Tensor* tensor : binary) total += tensor->bytes();
    encoded.body.reserve(total);
    for (const Tensor* tensor : binary) encoded.body.append(static_cast<const char*>(tensor->data()), tensor->bytes());
  }
  return encoded;
}

namespace {
json tensors_metadata(const std::vector<TensorMetadata>& tensors) {
  json list = json::array();
  for (const auto& tensor : tensors)
    list.push_back({{"name", tensor.name}, {"datatype", tensor.datatype}, {"shape", tensor.shape}});
  return list;
}
}  // namespace

std::string encode_model_metadata(const ModelEntry& model) {
  json root;
  root["name"] = model.name;
  root["versions"] = json::array({model.version});
  root["platform"] = kModelPlatform;
  root["inputs"] = tensors_metadata(model.inputs);
  root["outputs"] = tensors_metadata(model.outputs);
  return root.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_model_config(const ModelEntry& model) {
  const auto tensors = [&model](const std::vector<TensorMetadata>& list) {
    json entries = json::array();
    for (const auto& tensor : list)
      entries.push_back(
          {{"name", tensor.name}, {"data_type", "TYPE_" + tensor.datatype}, {"dims", config_dims(model, tensor)}});
    return entries;
  };
  json root;
  root["name"] = model.name;
  root["platform"] = kModelPlatform;
  root["max_batch_size"] = model.config.max_batch_size;
  root["input"] = tensors(model.inputs);
  root["output"] = tensors(model.outputs);
  return root.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_server_metadata() {
  json root;
  root["name"] = kServerName;
  root["version"] = version();
  root["extensions"] = json::array({"binary_tensor_data"});
  return root.dump();
}

std::string encode_repository_index(const std::vector<ModelEntry>& models) {
  json list = json::array();
  for (const auto& model : models) {
    json entry{{"name", model.name}, {"version", model.version}, {"state", model.ready ? "READY" : "UNAVAILABLE"}};
    entry["reason"] = model.ready ? "" : model.error;
    list.push_back(std::move(entry));
  }
  return list.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace loom::serve
