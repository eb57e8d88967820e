// The KServe v2 REST body codec of loom-serve's HTTP front end: infer requests (JSON tensors and
// the binary tensor extension) decoded into Service values, answers and errors encoded back.
// Plain functions over bytes, without sockets, so that tests reach every case (docs/serve.md "HTTP").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "service.hpp"

namespace loom::serve {

// The HTTP status of each Status (the mapping service.hpp states).
int http_status(Status status) noexcept;

// An error body as the protocol writes it: {"error": "<message>"}.
std::string http_error_body(std::string_view message);

// An infer request as decoded from its body.
struct DecodedInfer {
  InferRequest request;
  // Request parameter "binary_data_output": outputs the request does not list go back as raw bytes
  // (tritonclient sets it when it asks for no output by name). Listed outputs carry their own flag
  // in request.outputs, this one being their default.
  bool binary_data_output = false;
};

// Decodes POST /v2/models/<model>[/versions/<version>]/infer. `header_length` is the request's
// Inference-Header-Content-Length (the binary tensor extension): the JSON is then the body's first
// `header_length` bytes and the inputs whose parameters carry binary_data_size follow as raw bytes,
// in input order; without it the whole body is JSON. JSON data may be flat or nested row-major.
// Throws Error(invalid_argument) naming what is wrong and where: malformed JSON (with its byte
// offset), a missing or mistyped field, an unknown or unsupported datatype (BYTES), a negative dim,
// data whose count differs from the shape's product, a value out of the datatype's range, binary
// sizes that do not add up to the bytes after the JSON, shared-memory or sequence parameters.
DecodedInfer decode_infer_request(std::string_view body, std::optional<std::size_t> header_length, std::string model,
                                  std::string version);

// An encoded infer answer: the body, and when some outputs are binary the length of its JSON part
// (sent as the Inference-Header-Content-Length header), the raw bytes following in output order.
struct EncodedInfer {
  std::string body;
  std::optional<std::size_t> header_length;
};

// Encodes the answer {model_name, model_version, id, outputs: [{name, datatype, shape, data |
// parameters.binary_data_size}]}. An output goes back as raw bytes when its `binary` flag is set, or
// when `all_binary` (the request listed no outputs and asked binary_data_output). JSON data is flat;
// a float that is NaN or infinite has no JSON number and is written as null (use binary outputs).
EncodedInfer encode_infer_response(const InferResponse& response, bool all_binary);

// Model metadata as GET /v2/models/<model>[/versions/<version>] answers it: name, versions,
// platform "onnx", inputs and outputs with name, datatype and shape (-1: a dim left open).
std::string encode_model_metadata(const ModelEntry& model);

// Triton's model configuration, GET /v2/models/<model>[/versions/<version>]/config, as
// tritonclient's get_model_config and perf_analyzer read it: {name, platform "onnx",
// max_batch_size, input/output: [{name, data_type "TYPE_<datatype>", dims}]}, dims without the batch
// dim when max_batch_size > 0 (Triton's convention), a dim left open as -1.
std::string encode_model_config(const ModelEntry& model);

// Server metadata, GET /v2: name "loom", version loom::version(), the extensions implemented.
std::string encode_server_metadata();

// The repository index, POST /v2/repository/index: [{name, version, state, reason}], state
// "READY" or "UNAVAILABLE" (reason: the model's error).
std::string encode_repository_index(const std::vector<ModelEntry>& models);

}  // namespace loom::serve
