// KServe v2 gRPC messages to and from the Service's values (grpc_codec.hpp).
#include "grpc_codec.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "loom/error.hpp"
#include "loom/executor.hpp"
#include "request_parameters.hpp"

namespace loom::serve {
namespace {

using inference::InferParameter;
using inference::InferTensorContents;
using inference::ModelInferRequest;

Failure bad_request(std::string message) { return Failure{Status::bad_request, std::move(message)}; }

std::string quoted(const std::string& name) { return "'" + name + "'"; }

// The declared shape as a Shape, or a Failure: no negative dims, element and byte counts that fit.
std::variant<Shape, Failure> checked_shape(const ModelInferRequest::InferInputTensor& input, DType dtype) {
  std::vector<std::int64_t> dims(input.shape().begin(), input.shape().end());
  const auto limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / dtype_size(dtype);
  std::uint64_t elements = 1;
  for (std::int64_t dim : dims) {
    if (dim < 0)
      return bad_request("input " + quoted(input.name()) + ": shape has a negative dimension (" + std::to_string(dim) +
                         ")");
    if (dim != 0 && elements > limit / static_cast<std::uint64_t>(dim))
      return bad_request("input " + quoted(input.name()) + ": shape " + Shape(dims).to_string() + " is too large");
    elements *= static_cast<std::uint64_t>(dim);
  }
  return Shape(std::move(dims));
}

// The name of the typed list a datatype's values travel in; nullptr for FP16 and BF16 (none).
const char* contents_field(DType dtype) noexcept {
  switch (dtype) {
    case DType::boolean:
      return "bool_contents";
    case DType::i8:
    case DType::i16:
    case DType::i32:
      return "int_contents";
    case DType::i64:
      return "int64_contents";
    case DType::u8:
    case DType::u16:
    case DType::u32:
      return "uint_contents";
    case DType::u64:
      return "uint64_contents";
    case DType::f32:
      return "fp32_contents";
    case DType::f64:
      return "fp64_contents";
    case DType::f16:
    case DType::bf16:
      return nullptr;
  }
  return nullptr;
}

// The entries of one typed list, by its name (contents_field), and of all lists together.
int list_size(const InferTensorContents& contents, const char* field) {
  return contents.GetReflection()->FieldSize(contents, InferTensorContents::descriptor()->FindFieldByName(field));
}
int contents_entries(const InferTensorContents& contents) {
  int entries = 0;
  const auto* descriptor = InferTensorContents::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i)
    entries += contents.GetReflection()->FieldSize(contents, descriptor->field(i));
  return entries;
}

// Copies `values` into `tensor` as T, each checked to fit T (int_contents and uint_contents carry
// the narrower integer types in 32 bits).
template <class T, class List>
std::optional<Failure> fill(Tensor& tensor, const List& values, const std::string& name) {
  auto out = tensor.values<T>();
  for (std::size_t i = 0; i < out.size(); ++i) {
    const auto value = values.Get(static_cast<int>(i));
    if constexpr (std::is_integral_v<T> && !std::is_same_v<decltype(value), bool>) {
      if (value < static_cast<decltype(value)>(std::numeric_limits<T>::min()) ||
          value > static_cast<decltype(value)>(std::numeric_limits<T>::max()))
        return bad_request("input " + quoted(name) + ": value " + std::to_string(value) + " at element " +
                           std::to_string(i) + " does not fit " + std::string(kserve_datatype(tensor.dtype())));
    }
    out[i] = static_cast<T>(value);
  }
  return std::nullopt;
}

std::optional<Failure> decode_contents(const InferTensorContents& contents, Tensor& tensor, const std::string& name) {
  const DType dtype = tensor.dtype();
  const char* field = contents_field(dtype);
  const std::string datatype(kserve_datatype(dtype));
  if (field == nullptr)
    return bad_request("input " + quoted(name) + ": " + datatype +
                       " has no typed contents list; send its bytes in raw_input_contents");
  const int given = list_size(contents, field);
  const std::int64_t expected = tensor.numel();
  if (given != expected || contents_entries(contents) != given) {
    std::string message = "input " + quoted(name) + ": " + std::to_string(given) + " values in " + field +
                          " for shape " + tensor.shape().to_string() + " (" + std::to_string(expected) +
                          " elements of " + datatype + ")";
    if (contents_entries(contents) != given) message += "; values of another type's list were sent";
    return bad_request(std::move(message));
  }
  switch (dtype) {
    case DType::boolean: {
      auto out = tensor.values<std::uint8_t>();
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = contents.bool_contents(static_cast<int>(i)) ? 1 : 0;
      return std::nullopt;
    }
    case DType::i8:
      return fill<std::int8_t>(tensor, contents.int_contents(), name);
    case DType::i16:
      return fill<std::int16_t>(tensor, contents.int_contents(), name);
    case DType::i32:
      return fill<std::int32_t>(tensor, contents.int_contents(), name);
    case DType::i64:
      return fill<std::int64_t>(tensor, contents.int64_contents(), name);
    case DType::u8: {
      // u8 shares its storage type with bool: checked and stored by hand.
      auto out = tensor.values<std::uint8_t>();
      for (std::size_t i = 0; i < out.size(); ++i) {
        const std::uint32_t value = contents.uint_contents(static_cast<int>(i));
        if (value > 255)
          return bad_request("input " + quoted(name) + ": value " + std::to_string(value) + " at element " +
                             std::to_string(i) + " does not fit UINT8");
        out[i] = static_cast<std::uint8_t>(value);
      }
      return std::nullopt;
    }
    case DType::u16:
      return fill<std::uint16_t>(tensor, contents.uint_contents(), name);
    case DType::u32:
      return fill<std::uint32_t>(tensor, contents.uint_contents(), name);
    case DType::u64:
      return fill<std::uint64_t>(tensor, contents.uint64_contents(), name);
    case DType::f32:
      return fill<float>(tensor, contents.fp32_contents(), name);
    case DType::f64:
      return fill<double>(tensor, contents.fp64_contents(), name);
    default:
      return bad_request("input " + quoted(name) + ": " + datatype + " has no typed contents list");
  }
}

// "priority" and "timeout" by the rule both front ends share (request_parameters.hpp); other
// parameters (sequence_*, client-defined ones) do not change how Loom runs the request.
std::optional<Failure> apply_parameter(const std::string& key, const InferParameter& value, InferRequest& out) {
  try {
    if (key == "priority") {
      switch (value.parameter_choice_case()) {
        case InferParameter::kStringParam:
          out.priority = priority_from_parameter(std::string_view(value.string_param()));
          return std::nullopt;
        case InferParameter::kInt64Param:
          out.priority = priority_from_parameter(value.int64_param());
          return std::nullopt;
        case InferParameter::kUint64Param:
          out.priority = priority_from_parameter(static_cast<std::int64_t>(
              std::min<std::uint64_t>(value.uint64_param(), std::numeric_limits<std::int64_t>::max())));
          return std::nullopt;
        default:
          return bad_request("parameter 'priority' must be a string or an integer level");
      }
    }
    if (key == "sequence_id") {
      bool asks = true;  // a bool or double id is not "none"
      if (value.parameter_choice_case() == InferParameter::kInt64Param)
        asks = asks_sequence_batching(value.int64_param());
      else if (value.parameter_choice_case() == InferParameter::kUint64Param)
        asks = value.uint64_param() != 0;
      else if (value.parameter_choice_case() == InferParameter::kStringParam)
        asks = asks_sequence_batching(std::string_view(value.string_param()));
      if (asks) return bad_request("parameter 'sequence_id': sequence batching is unsupported");
      return std::nullopt;
    }
    if (key == "timeout") {
      switch (value.parameter_choice_case()) {
        case InferParameter::kInt64Param:
          out.timeout_ms = timeout_ms_from_parameter(static_cast<double>(value.int64_param()));
          return std::nullopt;
        case InferParameter::kUint64Param:
          out.timeout_ms = timeout_ms_from_parameter(static_cast<double>(value.uint64_param()));
          return std::nullopt;
        case InferParameter::kDoubleParam:
          out.timeout_ms = timeout_ms_from_parameter(value.double_param());
          return std::nullopt;
        default:
          return bad_request("parameter 'timeout' must be a number of microseconds");
      }
    }
  } catch (const Error& error) {
    return bad_request(error.what());
  }
  return std::nullopt;
}

// Parameters of extensions Loom does not implement, on an input or a requested output: refused, so
// that a client relying on them hears so instead of getting an answer computed from something else.
template <class Parameters>
std::optional<Failure> refuse_extensions(const Parameters& parameters, const std::string& where) {
  for (const auto& [key, value] : parameters)
    if (const char* name = shared_memory_parameter(key))
      return bad_request(where + ": parameter '" + name +
                         "': the shared-memory extension is unsupported; send the data in the message");
  // A class count is an integer (tritonclient sends int64); any other kind of value is refused, as
  // over HTTP, rather than read as 0.
  if (auto it = parameters.find("classification"); it != parameters.end()) {
    const InferParameter& value = it->second;
    const bool asks = value.parameter_choice_case() == InferParameter::kInt64Param
                          ? asks_classification(value.int64_param())
                      : value.parameter_choice_case() == InferParameter::kUint64Param ? value.uint64_param() != 0
                                                                                      : true;
    if (asks) return bad_request(where + ": parameter 'classification': the classification extension is unsupported");
  }
  return std::nullopt;
}

}  // namespace

grpc::StatusCode grpc_status_code(Status status) noexcept {
  switch (status) {
    case Status::ok:
      return grpc::StatusCode::OK;
    case Status::bad_request:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case Status::not_found:
      return grpc::StatusCode::NOT_FOUND;
    case Status::unavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case Status::timeout:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case Status::too_large:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case Status::internal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

grpc::Status to_grpc_status(const Failure& failure) {
  return grpc::Status(grpc_status_code(failure.status), failure.message);
}

std::variant<InferRequest, Failure> decode_infer_request(const ModelInferRequest& request,
                                                         std::optional<double> deadline_ms) {
  InferRequest out;
  out.model = request.model_name();
  out.version = request.model_version();
  out.id = request.id();
  if (out.model.empty()) return bad_request("the request names no model (model_name is empty)");

  // Map iteration order is unspecified; the parameters are independent of one another.
  for (const auto& [key, value] : request.parameters())
    if (auto failure = apply_parameter(key, value, out)) return *failure;
  if (deadline_ms) {
    if (*deadline_ms <= 0) return Failure{Status::timeout, "the client's deadline passed before the request started"};
    out.timeout_ms = out.timeout_ms > 0 ? std::min(out.timeout_ms, *deadline_ms) : *deadline_ms;
  }

  const int raw_count = request.raw_input_contents_size();
  if (raw_count != 0 && raw_count != request.inputs_size())
    return bad_request("raw_input_contents has " + std::to_string(raw_count) + " entries for " +
                       std::to_string(request.inputs_size()) + " inputs (one per input, in order)");
  std::set<std::string> seen;
  out.inputs.reserve(static_cast<std::size_t>(request.inputs_size()));
  for (int i = 0; i < request.inputs_size(); ++i) {
    const auto& input = request.inputs(i);
    if (!seen.insert(input.name()).second) return bad_request("input " + quoted(input.name()) + " is given twice");
    const auto dtype = dtype_from_kserve(input.datatype());
    if (!dtype)
      return bad_request("input " + quoted(input.name()) + ": datatype '" + input.datatype() +
                         "' is not one Loom serves");
    auto shape = checked_shape(input, *dtype);
    if (auto* failure = std::get_if<Failure>(&shape)) return std::move(*failure);
    if (auto failure = refuse_extensions(input.parameters(), "input " + quoted(input.name()))) return *failure;
    const bool has_contents = input.has_contents() && contents_entries(input.contents()) > 0;
    // Each element takes at least one byte of raw_input_contents or one typed value: a shape
    // holding more than the message carries is refused before its tensor (zero-filled) is
    // allocated, so that a few bytes cannot claim the server's memory.
    const auto elements = static_cast<std::uint64_t>(std::get<Shape>(shape).numel());
    if (raw_count == 0 && !has_contents && elements != 0)
      return bad_request("input " + quoted(input.name()) +
                         " carries no data (neither raw_input_contents nor contents)");
    const auto carried = raw_count != 0 ? static_cast<std::uint64_t>(request.raw_input_contents(i).size())
                                        : static_cast<std::uint64_t>(contents_entries(input.contents()));
    if (elements > carried)
      return bad_request("input " + quoted(input.name()) + ": shape " + std::get<Shape>(shape).to_string() + " holds " +
                         std::to_string(elements) + " elements, more than the " + std::to_string(carried) +
                         (raw_count != 0 ? " bytes of its raw_input_contents" : " values of its contents") +
                         " can carry");
    Tensor tensor(*dtype, std::get<Shape>(std::move(shape)));
    if (raw_count != 0) {
      if (has_contents)
        return bad_request("input " + quoted(input.name()) + " has both raw_input_contents and typed contents");
      const std::string& raw = request.raw_input_contents(i);
      if (raw.size() != tensor.bytes())
        return bad_request("input " + quoted(input.name()) + ": " + std::to_string(raw.size()) +
                           " bytes in raw_input_contents for shape " + tensor.shape().to_string() + " of " +
                           input.datatype() + " (" + std::to_string(tensor.bytes()) + " bytes)");
      if (!raw.empty()) std::memcpy(tensor.data(), raw.data(), raw.size());
      if (const auto invalid = invalid_bool_byte(tensor))
        return bad_request("input " + quoted(input.name()) + ": " + *invalid + " (raw_input_contents)");
    } else if (has_contents) {
      if (auto failure = decode_contents(input.contents(), tensor, input.name())) return *failure;
    }
    out.inputs.push_back(InferInput{input.name(), std::move(tensor)});
  }
  for (const auto& output : request.outputs()) {
    if (auto failure = refuse_extensions(output.parameters(), "output " + quoted(output.name()))) return *failure;
    out.outputs.push_back(RequestedOutput{output.name(), false});
  }
  return out;
}

void encode_infer_response(const InferResponse& response, inference::ModelInferResponse& out) {
  out.set_model_name(response.model);
  out.set_model_version(response.version);
  out.set_id(response.id);
  for (const auto& output : response.outputs) {
    auto* tensor = out.add_outputs();
    tensor->set_name(output.name);
    tensor->set_datatype(std::string(kserve_datatype(output.tensor.dtype())));
    for (std::int64_t dim : output.tensor.shape()) tensor->add_shape(dim);
    out.add_raw_output_contents(static_cast<const char*>(output.tensor.data()), output.tensor.bytes());
  }
}

void encode_server_metadata(inference::ServerMetadataResponse& out) {
  out.set_name(std::string(kServerName));
  out.set_version(loom::version());
}

void encode_model_metadata(const ModelEntry& model, inference::ModelMetadataResponse& out) {
  out.set_name(model.name);
  out.add_versions(model.version);
  out.set_platform(std::string(kModelPlatform));
  auto add = [](const TensorMetadata& from, inference::ModelMetadataResponse::TensorMetadata* to) {
    to->set_name(from.name);
    to->set_datatype(from.datatype);
    for (std::int64_t dim : from.shape) to->add_shape(dim);
  };
  for (const auto& input : model.inputs) add(input, out.add_inputs());
  for (const auto& output : model.outputs) add(output, out.add_outputs());
}

void encode_model_config(const ModelEntry& model, inference::ModelConfigResponse& out) {
  auto* config = out.mutable_config();
  config->set_name(model.name);
  config->set_platform(std::string(kModelPlatform));
  config->set_max_batch_size(static_cast<std::int32_t>(model.config.max_batch_size));
  auto fill = [&model](const TensorMetadata& from, auto* to) {
    to->set_name(from.name);
    inference::DataType type = inference::TYPE_INVALID;
    inference::DataType_Parse("TYPE_" + from.datatype, &type);
    to->set_data_type(type);
    for (std::int64_t dim : config_dims(model, from)) to->add_dims(dim);
  };
  for (const auto& input : model.inputs) fill(input, config->add_input());
  for (const auto& output : model.outputs) fill(output, config->add_output());
}

}  // namespace loom::serve
