// The KServe v2 gRPC messages (proto/grpc_predict_v2.proto) to and from the Service's plain values
// (service.hpp), without a socket: GrpcFrontend calls these, tests/serve/test_grpc_codec.cpp tests
// them directly.
#pragma once

#include <optional>
#include <string>
#include <variant>

#include <grpcpp/support/status.h>

#include "grpc_predict_v2.pb.h"
#include "service.hpp"

namespace loom::serve {

// The gRPC code for each Status (serve-side rule, docs/serve.md "gRPC"): bad_request
// INVALID_ARGUMENT, not_found NOT_FOUND, unavailable UNAVAILABLE, timeout DEADLINE_EXCEEDED,
// too_large RESOURCE_EXHAUSTED, internal INTERNAL, ok OK.
grpc::StatusCode grpc_status_code(Status status) noexcept;
grpc::Status to_grpc_status(const Failure& failure);

// A ModelInferRequest as the Service takes it. Each input's data comes from raw_input_contents
// (one entry per input, in order, little-endian row-major bytes) or else from its typed
// `contents` list; both are checked against the declared shape and datatype (byte count, element
// count, the list that datatype uses, the range of narrower integer types), and a mismatch is a
// bad_request Failure naming the input. Request parameters "priority" and "timeout" as
// request_parameters.hpp reads them (the rule the HTTP front end shares); a non-zero
// "sequence_id", and the shared-memory and classification parameters of inputs and outputs, are
// refused (extensions Loom does not implement); other parameters are ignored. `deadline_ms`, when set,
// is the time the client's gRPC deadline leaves: the request's timeout is the smaller of the two.
std::variant<InferRequest, Failure> decode_infer_request(const inference::ModelInferRequest& request,
                                                         std::optional<double> deadline_ms = std::nullopt);

// The Service's answer as a ModelInferResponse: every output's name, datatype and shape, and its
// bytes in raw_output_contents (in the order of `outputs`).
void encode_infer_response(const InferResponse& response, inference::ModelInferResponse& out);

// What ServerMetadata answers: the same name, version and extensions as the HTTP front end's GET /v2.
void encode_server_metadata(inference::ServerMetadataResponse& out);

// A model's metadata (platform "onnx", as over HTTP); a model that is not ready has no inputs or outputs to show: the
// caller answers UNAVAILABLE with its error (Service::lookup()).
void encode_model_metadata(const ModelEntry& model, inference::ModelMetadataResponse& out);
// Triton's model configuration (ModelConfig): name, platform "onnx", max_batch_size, each input
// and output with its TYPE_ datatype and dims, the batch dim left out when max_batch_size > 0
// (Triton's convention, as HTTP's GET .../config).
void encode_model_config(const ModelEntry& model, inference::ModelConfigResponse& out);

}  // namespace loom::serve
