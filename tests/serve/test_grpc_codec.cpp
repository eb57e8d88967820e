// loom-serve's gRPC codec (apps/serve/grpc_codec.hpp) without a socket: KServe v2 messages built by
// hand, decoded into the Service's values and back, against values and messages worked out here.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "grpc_codec.hpp"

namespace loom::serve {
namespace {

using inference::ModelInferRequest;

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

ModelInferRequest::InferInputTensor* add_input(ModelInferRequest& request, const std::string& name,
                                               const std::string& datatype, std::vector<std::int64_t> shape) {
  auto* input = request.add_inputs();
  input->set_name(name);
  input->set_datatype(datatype);
  for (auto dim : shape) input->add_shape(dim);
  return input;
}

ModelInferRequest base_request() {
  ModelInferRequest request;
  request.set_model_name("yolo");
  request.set_model_version("3");
  request.set_id("req-7");
  return request;
}

Failure expect_failure(const std::variant<InferRequest, Failure>& decoded) {
  EXPECT_TRUE(std::holds_alternative<Failure>(decoded));
  return std::holds_alternative<Failure>(decoded) ? std::get<Failure>(decoded) : Failure{Status::ok, ""};
}

InferRequest expect_request(std::variant<InferRequest, Failure> decoded) {
  if (auto* failure = std::get_if<Failure>(&decoded)) ADD_FAILURE() << "unexpected failure: " << failure->message;
  return std::holds_alternative<InferRequest>(decoded) ? std::get<InferRequest>(std::move(decoded)) : InferRequest{};
}

// The field numbers the KServe v2 protocol (and tritonclient.grpc on the wire) uses; a renumbered
// field would still compile and round-trip here but not interoperate.
TEST(GrpcCodec, FieldNumbersAreTheProtocols) {
  auto number = [](const google::protobuf::Descriptor* message, const char* field) {
    const auto* descriptor = message->FindFieldByName(field);
    return descriptor ? descriptor->number() : -1;
  };
  const auto* request = ModelInferRequest::descriptor();
  EXPECT_EQ(request->full_name(), "inference.ModelInferRequest");
  EXPECT_EQ(number(request, "model_name"), 1);
  EXPECT_EQ(number(request, "id"), 3);
  EXPECT_EQ(number(request, "parameters"), 4);
  EXPECT_EQ(number(request, "inputs"), 5);
  EXPECT_EQ(number(request, "outputs"), 6);
  EXPECT_EQ(number(request, "raw_input_contents"), 7);
  EXPECT_EQ(number(ModelInferRequest::InferInputTensor::descriptor(), "contents"), 5);
  EXPECT_EQ(number(inference::ModelInferResponse::descriptor(), "raw_output_contents"), 6);
  EXPECT_EQ(number(inference::InferTensorContents::descriptor(), "fp32_contents"), 6);
  EXPECT_EQ(number(inference::InferTensorContents::descriptor(), "uint64_contents"), 5);
  EXPECT_EQ(number(inference::InferParameter::descriptor(), "uint64_param"), 5);
  EXPECT_EQ(number(inference::ModelMetadataResponse::descriptor(), "outputs"), 5);
  EXPECT_EQ(number(inference::ModelConfig::descriptor(), "max_batch_size"), 4);
  EXPECT_EQ(number(inference::ModelOutput::descriptor(), "dims"), 3);
  EXPECT_EQ(inference::TYPE_FP32, 11);
  EXPECT_EQ(inference::TYPE_BF16, 14);
}

TEST(GrpcCodec, StatusCodesFollowTheMapping) {
  EXPECT_EQ(grpc_status_code(Status::ok), grpc::StatusCode::OK);
  EXPECT_EQ(grpc_status_code(Status::bad_request), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(grpc_status_code(Status::not_found), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(grpc_status_code(Status::unavailable), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(grpc_status_code(Status::timeout), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(grpc_status_code(Status::too_large), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(grpc_status_code(Status::internal), grpc::StatusCode::INTERNAL);
  const auto status = to_grpc_status(Failure{Status::not_found, "unknown model 'x'"});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), "unknown model 'x'");
}

TEST(GrpcCodec, RawInputsBecomeTensorsInOrder) {
  auto request = base_request();
  const std::vector<float> image = {0.5f, -1.25f, 3.0f, 7.75f, -0.0f, 1e-3f};
  const std::vector<std::int64_t> ids = {101, -2, 1LL << 40};
  add_input(request, "images", "FP32", {1, 2, 3});
  add_input(request, "input_ids", "INT64", {1, 3});
  request.add_raw_input_contents(raw_bytes(image));
  request.add_raw_input_contents(raw_bytes(ids));
  request.add_outputs()->set_name("output0");

  const InferRequest decoded = expect_request(decode_infer_request(request));
  EXPECT_EQ(decoded.model, "yolo");
  EXPECT_EQ(decoded.version, "3");
  EXPECT_EQ(decoded.id, "req-7");
  ASSERT_EQ(decoded.inputs.size(), 2u);
  EXPECT_EQ(decoded.inputs[0].name, "images");
  EXPECT_EQ(decoded.inputs[0].tensor.dtype(), DType::f32);
  EXPECT_EQ(decoded.inputs[0].tensor.shape(), (Shape{1, 2, 3}));
  auto floats = decoded.inputs[0].tensor.values<float>();
  EXPECT_EQ(std::vector<float>(floats.begin(), floats.end()), image);
  EXPECT_EQ(decoded.inputs[1].tensor.dtype(), DType::i64);
  auto longs = decoded.inputs[1].tensor.values<std::int64_t>();
  EXPECT_EQ(std::vector<std::int64_t>(longs.begin(), longs.end()), ids);
  ASSERT_EQ(decoded.outputs.size(), 1u);
  EXPECT_EQ(decoded.outputs[0].name, "output0");
  EXPECT_FALSE(decoded.priority.has_value());
  EXPECT_EQ(decoded.timeout_ms, 0);
}

TEST(GrpcCodec, RawByteCountMustMatchShapeAndDatatype) {
  auto request = base_request();
  add_input(request, "images", "FP32", {2, 3});
  request.add_raw_input_contents(std::string(20, '\0'));  // 6 floats are 24 bytes
  const Failure failure = expect_failure(decode_infer_request(request));
  EXPECT_EQ(failure.status, Status::bad_request);
  EXPECT_NE(failure.message.find("'images'"), std::string::npos) << failure.message;
  EXPECT_NE(failure.message.find("20 bytes"), std::string::npos) << failure.message;
  EXPECT_NE(failure.message.find("24 bytes"), std::string::npos) << failure.message;
}

TEST(GrpcCodec, RawBoolBytesMustBeZeroOrOne) {
  // As over HTTP's binary data: a BOOL byte other than 0 or 1 is no boolean.
  auto request = base_request();
  add_input(request, "mask", "BOOL", {3});
  request.add_raw_input_contents(std::string("\x01\x00\x07", 3));
  const Failure failure = expect_failure(decode_infer_request(request));
  EXPECT_EQ(failure.status, Status::bad_request);
  EXPECT_NE(failure.message.find("'mask'"), std::string::npos) << failure.message;
  EXPECT_NE(failure.message.find("BOOL element 2 is byte 7"), std::string::npos) << failure.message;

  auto good = base_request();
  add_input(good, "mask", "BOOL", {3});
  good.add_raw_input_contents(std::string("\x01\x00\x01", 3));
  const InferRequest decoded = expect_request(decode_infer_request(good));
  ASSERT_EQ(decoded.inputs.size(), 1u);
  const auto bits = decoded.inputs[0].tensor.values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(bits.begin(), bits.end()), (std::vector<std::uint8_t>{1, 0, 1}));
}

TEST(GrpcCodec, OneRawEntryPerInput) {
  auto request = base_request();
  add_input(request, "a", "INT32", {1});
  add_input(request, "b", "INT32", {1});
  request.add_raw_input_contents(raw_bytes(std::vector<std::int32_t>{1}));
  const Failure failure = expect_failure(decode_infer_request(request));
  EXPECT_EQ(failure.status, Status::bad_request);
  EXPECT_NE(failure.message.find("1 entries for 2 inputs"), std::string::npos) << failure.message;
}

TEST(GrpcCodec, TypedContentsDecodePerDatatype) {
  auto request = base_request();
  auto* i8 = add_input(request, "small", "INT8", {3});
  for (int v : {-128, 0, 127}) i8->mutable_contents()->add_int_contents(v);
  auto* u16 = add_input(request, "u16", "UINT16", {2});
  for (unsigned v : {0u, 65535u}) u16->mutable_contents()->add_uint_contents(v);
  auto* flags = add_input(request, "mask", "BOOL", {2, 2});
  for (bool v : {true, false, false, true}) flags->mutable_contents()->add_bool_contents(v);
  auto* f64 = add_input(request, "scale", "FP64", {});
  f64->mutable_contents()->add_fp64_contents(0.125);
  auto* u8 = add_input(request, "pixels", "UINT8", {2});
  for (unsigned v : {7u, 255u}) u8->mutable_contents()->add_uint_contents(v);

  const InferRequest decoded = expect_request(decode_infer_request(request));
  ASSERT_EQ(decoded.inputs.size(), 5u);
  auto small = decoded.inputs[0].tensor.values<std::int8_t>();
  EXPECT_EQ(std::vector<std::int8_t>(small.begin(), small.end()), (std::vector<std::int8_t>{-128, 0, 127}));
  auto wide = decoded.inputs[1].tensor.values<std::uint16_t>();
  EXPECT_EQ(std::vector<std::uint16_t>(wide.begin(), wide.end()), (std::vector<std::uint16_t>{0, 65535}));
  EXPECT_EQ(decoded.inputs[2].tensor.dtype(), DType::boolean);
  auto mask = decoded.inputs[2].tensor.values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(mask.begin(), mask.end()), (std::vector<std::uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(decoded.inputs[3].tensor.shape().rank(), 0u);
  EXPECT_EQ(decoded.inputs[3].tensor.values<double>()[0], 0.125);
  EXPECT_EQ(decoded.inputs[4].tensor.dtype(), DType::u8);
  auto pixels = decoded.inputs[4].tensor.values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(pixels.begin(), pixels.end()), (std::vector<std::uint8_t>{7, 255}));
}

TEST(GrpcCodec, TypedContentsOutOfRangeOrInTheWrongListAreRefused) {
  {
    auto request = base_request();
    auto* input = add_input(request, "small", "INT8", {2});
    input->mutable_contents()->add_int_contents(1);
    input->mutable_contents()->add_int_contents(200);
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_EQ(failure.status, Status::bad_request);
    EXPECT_NE(failure.message.find("'small'"), std::string::npos) << failure.message;
    EXPECT_NE(failure.message.find("200"), std::string::npos) << failure.message;
  }
  {
    auto request = base_request();
    auto* input = add_input(request, "pixels", "UINT8", {1});
    input->mutable_contents()->add_uint_contents(256);
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("UINT8"), std::string::npos);
  }
  {
    auto request = base_request();  // float values for an INT64 input
    auto* input = add_input(request, "input_ids", "INT64", {2});
    input->mutable_contents()->add_fp32_contents(1);
    input->mutable_contents()->add_fp32_contents(2);
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_NE(failure.message.find("'input_ids'"), std::string::npos) << failure.message;
    EXPECT_NE(failure.message.find("int64_contents"), std::string::npos) << failure.message;
  }
  {
    auto request = base_request();  // 3 values for 4 elements
    auto* input = add_input(request, "x", "FP32", {2, 2});
    for (float v : {1.f, 2.f, 3.f}) input->mutable_contents()->add_fp32_contents(v);
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_NE(failure.message.find("3 values"), std::string::npos) << failure.message;
    EXPECT_NE(failure.message.find("4 elements"), std::string::npos) << failure.message;
  }
  {
    auto request = base_request();  // FP16 has no typed list
    auto* input = add_input(request, "half", "FP16", {1});
    input->mutable_contents()->add_fp32_contents(1);
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("raw_input_contents"), std::string::npos);
  }
}

TEST(GrpcCodec, BadDeclarationsNameTheInput) {
  {
    auto request = base_request();
    add_input(request, "text", "BYTES", {1});
    request.add_raw_input_contents("abcd");
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_EQ(failure.status, Status::bad_request);
    EXPECT_NE(failure.message.find("'text'"), std::string::npos);
    EXPECT_NE(failure.message.find("BYTES"), std::string::npos);
  }
  {
    auto request = base_request();
    add_input(request, "x", "FP32", {2, -1});
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("negative"), std::string::npos);
  }
  {
    auto request = base_request();
    add_input(request, "x", "FP32", {1LL << 40, 1LL << 40});
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("too large"), std::string::npos);
  }
  {
    // A shape whose byte count fits int64 but no memory: refused from the data the message
    // carries, before a tensor of that size is allocated (a few bytes must not exhaust the
    // server's memory), with typed contents, raw contents or none.
    for (int carried = 0; carried < 3; ++carried) {
      auto request = base_request();
      auto* input = add_input(request, "huge", "FP32", {1LL << 30, 1LL << 30});
      if (carried == 1) input->mutable_contents()->add_fp32_contents(1);
      if (carried == 2) request.add_raw_input_contents(raw_bytes(std::vector<float>{1, 2}));
      std::optional<Failure> failure;
      EXPECT_NO_THROW(failure = expect_failure(decode_infer_request(request)));
      ASSERT_TRUE(failure);
      EXPECT_EQ(failure->status, Status::bad_request);
      EXPECT_NE(failure->message.find("'huge'"), std::string::npos) << failure->message;
    }
  }
  {
    auto request = base_request();
    add_input(request, "x", "FP32", {1})->mutable_contents()->add_fp32_contents(1);
    add_input(request, "x", "FP32", {1})->mutable_contents()->add_fp32_contents(2);
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("twice"), std::string::npos);
  }
  {
    auto request = base_request();
    add_input(request, "x", "FP32", {3});  // no data at all
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("no data"), std::string::npos);
  }
  {
    auto request = base_request();
    request.clear_model_name();
    EXPECT_EQ(expect_failure(decode_infer_request(request)).status, Status::bad_request);
  }
}

TEST(GrpcCodec, PriorityAndTimeoutParameters) {
  auto with = [](const char* key, auto set) {
    auto request = base_request();
    set((*request.mutable_parameters())[key]);
    return request;
  };
  auto urgent = with("priority", [](inference::InferParameter& p) { p.set_uint64_param(1); });
  EXPECT_EQ(expect_request(decode_infer_request(urgent)).priority, Priority::urgent);
  auto level3 = with("priority", [](inference::InferParameter& p) { p.set_int64_param(3); });
  EXPECT_EQ(expect_request(decode_infer_request(level3)).priority, Priority::background);
  auto named = with("priority", [](inference::InferParameter& p) { p.set_string_param("background"); });
  EXPECT_EQ(expect_request(decode_infer_request(named)).priority, Priority::background);
  auto bogus = with("priority", [](inference::InferParameter& p) { p.set_string_param("asap"); });
  const Failure failure = expect_failure(decode_infer_request(bogus));
  EXPECT_EQ(failure.status, Status::bad_request);
  EXPECT_NE(failure.message.find("priority"), std::string::npos) << failure.message;

  // Triton's clients send the timeout in microseconds.
  auto timeout = with("timeout", [](inference::InferParameter& p) { p.set_int64_param(2500); });
  EXPECT_DOUBLE_EQ(expect_request(decode_infer_request(timeout)).timeout_ms, 2.5);
  // The client's gRPC deadline caps it, whichever is shorter.
  EXPECT_DOUBLE_EQ(expect_request(decode_infer_request(timeout, 1.0)).timeout_ms, 1.0);
  EXPECT_DOUBLE_EQ(expect_request(decode_infer_request(timeout, 40.0)).timeout_ms, 2.5);
  EXPECT_DOUBLE_EQ(expect_request(decode_infer_request(base_request(), 40.0)).timeout_ms, 40.0);
  EXPECT_EQ(expect_failure(decode_infer_request(base_request(), -3.0)).status, Status::timeout);
  auto negative = with("timeout", [](inference::InferParameter& p) { p.set_int64_param(-5); });
  EXPECT_EQ(expect_failure(decode_infer_request(negative)).status, Status::bad_request);
  auto text = with("timeout", [](inference::InferParameter& p) { p.set_string_param("soon"); });
  EXPECT_EQ(expect_failure(decode_infer_request(text)).status, Status::bad_request);
  // Parameters Loom does not use change nothing.
  auto other = with("sequence_start", [](inference::InferParameter& p) { p.set_bool_param(true); });
  const InferRequest plain = expect_request(decode_infer_request(other));
  EXPECT_FALSE(plain.priority.has_value());
  EXPECT_EQ(plain.timeout_ms, 0);
}

TEST(GrpcCodec, UnimplementedExtensionsAreRefused) {
  {
    auto request = base_request();
    (*request.mutable_parameters())["sequence_id"].set_int64_param(42);
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_EQ(failure.status, Status::bad_request);
    EXPECT_NE(failure.message.find("sequence"), std::string::npos) << failure.message;
  }
  {
    auto request = base_request();  // sequence_id 0 is "no sequence", as tritonclient sends it
    (*request.mutable_parameters())["sequence_id"].set_int64_param(0);
    expect_request(decode_infer_request(request));
  }
  {
    auto request = base_request();
    auto* input = add_input(request, "x", "FP32", {1});
    (*input->mutable_parameters())["shared_memory_region"].set_string_param("region0");
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_NE(failure.message.find("'x'"), std::string::npos) << failure.message;
    EXPECT_NE(failure.message.find("shared-memory"), std::string::npos) << failure.message;
  }
  {
    auto request = base_request();
    auto* output = request.add_outputs();
    output->set_name("scores");
    (*output->mutable_parameters())["classification"].set_int64_param(3);
    const Failure failure = expect_failure(decode_infer_request(request));
    EXPECT_NE(failure.message.find("'scores'"), std::string::npos) << failure.message;
    EXPECT_NE(failure.message.find("classification"), std::string::npos) << failure.message;
  }
  // A class count sent as another kind of value is refused too (it read as 0: the raw output came
  // back where the client asked for classes); 0 in either integer kind is "no classification".
  for (int kind = 0; kind < 3; ++kind) {
    auto request = base_request();
    auto* output = request.add_outputs();
    output->set_name("scores");
    auto& parameter = (*output->mutable_parameters())["classification"];
    if (kind == 0) parameter.set_string_param("3");
    if (kind == 1) parameter.set_uint64_param(3);
    if (kind == 2) parameter.set_double_param(3);
    EXPECT_NE(expect_failure(decode_infer_request(request)).message.find("classification"), std::string::npos) << kind;
  }
  {
    auto request = base_request();
    auto* output = request.add_outputs();
    output->set_name("scores");
    (*output->mutable_parameters())["classification"].set_uint64_param(0);
    EXPECT_EQ(expect_request(decode_infer_request(request)).outputs.size(), 1u);
  }
}

TEST(GrpcCodec, ResponseCarriesOutputsAsRawBytes) {
  InferResponse response;
  response.model = "minilm";
  response.version = "1";
  response.id = "abc";
  const std::vector<float> hidden = {1.5f, -2.0f, 0.25f, 8.0f};
  const std::vector<std::int64_t> labels = {3, -9};
  response.outputs.push_back({"last_hidden_state", Tensor::from<float>(Shape{1, 2, 2}, hidden), false});
  response.outputs.push_back({"labels", Tensor::from<std::int64_t>(Shape{2}, labels), false});

  inference::ModelInferResponse out;
  encode_infer_response(response, out);
  EXPECT_EQ(out.model_name(), "minilm");
  EXPECT_EQ(out.model_version(), "1");
  EXPECT_EQ(out.id(), "abc");
  ASSERT_EQ(out.outputs_size(), 2);
  ASSERT_EQ(out.raw_output_contents_size(), 2);
  EXPECT_EQ(out.outputs(0).name(), "last_hidden_state");
  EXPECT_EQ(out.outputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<std::int64_t>(out.outputs(0).shape().begin(), out.outputs(0).shape().end()),
            (std::vector<std::int64_t>{1, 2, 2}));
  EXPECT_EQ(out.raw_output_contents(0), raw_bytes(hidden));
  EXPECT_EQ(out.outputs(1).datatype(), "INT64");
  EXPECT_EQ(out.raw_output_contents(1), raw_bytes(labels));

  // What a client receives after the wire: the same bytes.
  inference::ModelInferResponse received;
  ASSERT_TRUE(received.ParseFromString(out.SerializeAsString()));
  EXPECT_EQ(received.raw_output_contents(1), raw_bytes(labels));
}

TEST(GrpcCodec, ModelMetadataAndConfig) {
  ModelEntry model;
  model.name = "minilm";
  model.version = "2";
  model.ready = true;
  model.inputs = {{"input_ids", "INT64", {-1, -1}}, {"attention_mask", "INT64", {-1, -1}}};
  model.outputs = {{"last_hidden_state", "FP32", {-1, -1, 384}}};
  inference::ModelMetadataResponse out;
  encode_model_metadata(model, out);
  EXPECT_EQ(out.name(), "minilm");
  ASSERT_EQ(out.versions_size(), 1);
  EXPECT_EQ(out.versions(0), "2");
  EXPECT_EQ(out.platform(), "onnx");
  ASSERT_EQ(out.inputs_size(), 2);
  EXPECT_EQ(out.inputs(1).name(), "attention_mask");
  EXPECT_EQ(out.inputs(1).datatype(), "INT64");
  ASSERT_EQ(out.outputs_size(), 1);
  EXPECT_EQ(std::vector<std::int64_t>(out.outputs(0).shape().begin(), out.outputs(0).shape().end()),
            (std::vector<std::int64_t>{-1, -1, 384}));

  // The configuration in Triton's form: the batch dim left out when the model batches.
  model.config.max_batch_size = 8;
  model.inputs[0].shape = {-1, 16};
  inference::ModelConfigResponse config;
  encode_model_config(model, config);
  EXPECT_EQ(config.config().name(), "minilm");
  EXPECT_EQ(config.config().platform(), "onnx");
  EXPECT_EQ(config.config().max_batch_size(), 8);
  ASSERT_EQ(config.config().input_size(), 2);
  EXPECT_EQ(config.config().input(0).data_type(), inference::TYPE_INT64);
  EXPECT_EQ(std::vector<std::int64_t>(config.config().input(0).dims().begin(), config.config().input(0).dims().end()),
            (std::vector<std::int64_t>{16}));
  ASSERT_EQ(config.config().output_size(), 1);
  EXPECT_EQ(config.config().output(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(std::vector<std::int64_t>(config.config().output(0).dims().begin(), config.config().output(0).dims().end()),
            (std::vector<std::int64_t>{-1, 384}));
  model.config.max_batch_size = 0;  // no batching: every dim shown
  inference::ModelConfigResponse unbatched;
  encode_model_config(model, unbatched);
  EXPECT_EQ(unbatched.config().input(0).dims_size(), 2);
}

}  // namespace
}  // namespace loom::serve
