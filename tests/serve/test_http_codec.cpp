// loom-serve's KServe v2 REST codec without sockets (apps/serve/http_codec.hpp): JSON and binary
// tensors decoded to the values written, answers encoded as the protocol reads them back, and each
// malformed request refused with an error naming what and where.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "http_codec.hpp"
#include "loom/error.hpp"
#include "loom/executor.hpp"
#include "request_parameters.hpp"

namespace loom::serve {
namespace {

using nlohmann::json;

DecodedInfer decode(const std::string& body, std::optional<std::size_t> header_length = std::nullopt) {
  return decode_infer_request(body, header_length, "m", "");
}

// The error decoding `body` throws: invalid_argument, its message holding every part of `expected`.
void expect_refused(const std::string& body, std::optional<std::size_t> header_length,
                    std::vector<std::string> expected) {
  try {
    decode(body, header_length);
    ADD_FAILURE() << "accepted: " << body.substr(0, 200);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    for (const auto& part : expected) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

std::string one_input(const std::string& input) { return R"({"inputs": [)" + input + "]}"; }

template <class T>
std::string raw_bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

TEST(HttpCodec, StatusesFollowTheProtocolMapping) {
  EXPECT_EQ(http_status(Status::ok), 200);
  EXPECT_EQ(http_status(Status::bad_request), 400);
  EXPECT_EQ(http_status(Status::not_found), 404);
  EXPECT_EQ(http_status(Status::unavailable), 503);
  EXPECT_EQ(http_status(Status::timeout), 504);
  EXPECT_EQ(http_status(Status::too_large), 413);
  EXPECT_EQ(http_status(Status::internal), 500);
}

TEST(HttpCodec, ErrorBodyIsAnObjectWithTheMessage) {
  const json body = json::parse(http_error_body("input 'x': \"quoted\"\nline"));
  ASSERT_TRUE(body.is_object());
  EXPECT_EQ(body.size(), 1u);
  EXPECT_EQ(body["error"], "input 'x': \"quoted\"\nline");
}

TEST(HttpCodec, DecodesFlatAndNestedJsonDataRowMajor) {
  const auto flat = decode(one_input(R"({"name": "x", "shape": [2, 3], "datatype": "FP32",
                                         "data": [1, 2.5, -3, 4, 5, 6e-3]})"));
  const auto nested = decode(one_input(R"({"name": "x", "shape": [2, 3], "datatype": "FP32",
                                           "data": [[1, 2.5, -3], [4, 5, 6e-3]]})"));
  for (const auto* decoded : {&flat, &nested}) {
    ASSERT_EQ(decoded->request.inputs.size(), 1u);
    const auto& input = decoded->request.inputs[0];
    EXPECT_EQ(input.name, "x");
    EXPECT_EQ(input.tensor.dtype(), DType::f32);
    EXPECT_EQ(input.tensor.shape(), Shape({2, 3}));
    const auto values = input.tensor.values<float>();
    const std::vector<float> expected{1.f, 2.5f, -3.f, 4.f, 5.f, 6e-3f};
    EXPECT_EQ(std::vector<float>(values.begin(), values.end()), expected);
  }
  EXPECT_EQ(flat.request.model, "m");
  EXPECT_TRUE(flat.request.outputs.empty());
  EXPECT_FALSE(flat.binary_data_output);
}

TEST(HttpCodec, DecodesIntegersBooleansAndHalfFloats) {
  const auto decoded = decode(R"({"id": "r7", "inputs": [
      {"name": "ids", "shape": [3], "datatype": "INT64", "data": [-9223372036854775808, 0, 9223372036854775807]},
      {"name": "mask", "shape": [2, 2], "datatype": "BOOL", "data": [[true, false], [false, true]]},
      {"name": "u", "shape": [2], "datatype": "UINT8", "data": [0, 255]},
      {"name": "h", "shape": [2], "datatype": "FP16", "data": [0.5, -2]}]})");
  EXPECT_EQ(decoded.request.id, "r7");
  ASSERT_EQ(decoded.request.inputs.size(), 4u);
  const auto ids = decoded.request.inputs[0].tensor.values<std::int64_t>();
  EXPECT_EQ(ids[0], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(ids[1], 0);
  EXPECT_EQ(ids[2], std::numeric_limits<std::int64_t>::max());
  const auto& mask = decoded.request.inputs[1].tensor;
  EXPECT_EQ(mask.dtype(), DType::boolean);
  const auto bits = mask.values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(bits.begin(), bits.end()), (std::vector<std::uint8_t>{1, 0, 0, 1}));
  EXPECT_EQ(decoded.request.inputs[2].tensor.dtype(), DType::u8);
  EXPECT_EQ(decoded.request.inputs[2].tensor.values<std::uint8_t>()[1], 255);
  const auto half = decoded.request.inputs[3].tensor.values<f16_t>();
  EXPECT_EQ(f16_to_float(half[0]), 0.5f);
  EXPECT_EQ(f16_to_float(half[1]), -2.f);
}

TEST(HttpCodec, DecodesBinaryInputsAfterTheJsonInInputOrder) {
  const std::vector<float> x{1.5f, -2.f, 3.25f, 1e-7f};
  const std::vector<std::int32_t> n{7, -8};
  const std::string header = R"({"inputs": [
      {"name": "x", "shape": [2, 2], "datatype": "FP32", "parameters": {"binary_data_size": 16}},
      {"name": "j", "shape": [1], "datatype": "INT32", "data": [42]},
      {"name": "n", "shape": [2], "datatype": "INT32", "parameters": {"binary_data_size": 8}}],
    "outputs": [{"name": "y", "parameters": {"binary_data": true}}, {"name": "z"}]})";
  const auto decoded = decode(header + raw_bytes(x) + raw_bytes(n), header.size());
  ASSERT_EQ(decoded.request.inputs.size(), 3u);
  const auto xs = decoded.request.inputs[0].tensor.values<float>();
  EXPECT_EQ(std::vector<float>(xs.begin(), xs.end()), x);
  EXPECT_EQ(decoded.request.inputs[1].tensor.values<std::int32_t>()[0], 42);
  const auto ns = decoded.request.inputs[2].tensor.values<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(ns.begin(), ns.end()), n);
  ASSERT_EQ(decoded.request.outputs.size(), 2u);
  EXPECT_EQ(decoded.request.outputs[0].name, "y");
  EXPECT_TRUE(decoded.request.outputs[0].binary);
  EXPECT_EQ(decoded.request.outputs[1].name, "z");
  EXPECT_FALSE(decoded.request.outputs[1].binary);
}

TEST(HttpCodec, RequestParametersSetPriorityTimeoutAndBinaryDefault) {
  const auto decoded = decode(R"({"parameters": {"priority": 1, "timeout": 2500, "binary_data_output": true,
                                                 "custom": "ignored"},
      "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [0]}],
      "outputs": [{"name": "y"}, {"name": "z", "parameters": {"binary_data": false}}]})");
  EXPECT_EQ(decoded.request.priority, Priority::urgent);
  EXPECT_DOUBLE_EQ(decoded.request.timeout_ms, 2.5);
  EXPECT_TRUE(decoded.binary_data_output);
  ASSERT_EQ(decoded.request.outputs.size(), 2u);
  EXPECT_TRUE(decoded.request.outputs[0].binary);   // the request's default
  EXPECT_FALSE(decoded.request.outputs[1].binary);  // its own flag wins
  EXPECT_EQ(decode(R"({"parameters": {"priority": "background"},
                      "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [0]}]})")
                .request.priority,
            Priority::background);
  EXPECT_EQ(priority_from_parameter(std::int64_t{0}), std::nullopt);
  EXPECT_EQ(priority_from_parameter(std::int64_t{2}), Priority::normal);
  EXPECT_EQ(priority_from_parameter(std::int64_t{5}), Priority::background);
  EXPECT_STREQ(shared_memory_parameter("shared_memory_offset"), "shared_memory_offset");
  EXPECT_EQ(shared_memory_parameter("binary_data_size"), nullptr);
  EXPECT_FALSE(asks_sequence_batching(std::int64_t{0}));
  EXPECT_TRUE(asks_sequence_batching(std::int64_t{7}));
  EXPECT_FALSE(asks_sequence_batching(std::string_view("")));
  EXPECT_TRUE(asks_sequence_batching(std::string_view("s1")));
  EXPECT_FALSE(asks_classification(0));
  EXPECT_TRUE(asks_classification(3));
}

TEST(HttpCodec, RefusesMalformedJsonNamingTheByte) {
  expect_refused(R"({"inputs": [)", std::nullopt, {"malformed JSON at byte offset 12"});  // its end
  expect_refused(R"({"id": x})", std::nullopt, {"malformed JSON at byte offset 7"});
  expect_refused("", std::nullopt, {"malformed JSON at byte offset 0"});
  expect_refused("[1, 2]", std::nullopt, {"expected a JSON object"});
}

TEST(HttpCodec, RefusesMissingAndMistypedFields) {
  expect_refused("{}", std::nullopt, {"'inputs' is missing"});
  expect_refused(R"({"inputs": []})", std::nullopt, {"request.inputs", "non-empty"});
  expect_refused(R"({"inputs": {}})", std::nullopt, {"request.inputs", "object"});
  expect_refused(R"({"id": 5, "inputs": [{}]})", std::nullopt, {"request.id", "string"});
  expect_refused(one_input(R"({"shape": [1], "datatype": "FP32", "data": [1]})"), std::nullopt,
                 {"request.inputs[0]", "'name' is missing"});
  expect_refused(one_input(R"({"name": "x", "datatype": "FP32", "data": [1]})"), std::nullopt,
                 {"inputs[0] ('x')", "'shape' is missing"});
  expect_refused(one_input(R"({"name": "x", "shape": [1], "data": [1]})"), std::nullopt, {"'datatype' is missing"});
  expect_refused(one_input(R"({"name": "x", "shape": [1], "datatype": "FP32"})"), std::nullopt, {"'data' is missing"});
  expect_refused(one_input(R"({"name": "x", "shape": [1], "datatype": "FP32", "data": 1})"), std::nullopt,
                 {"('x').data", "expected an array"});
  expect_refused(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]},
                                {"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"inputs[1]", "given twice"});
  expect_refused(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
                     "outputs": [{"name": "y"}, {"name": "y"}]})",
                 std::nullopt, {"outputs[1]", "requested twice"});
}

TEST(HttpCodec, RefusesDatatypesShapesAndValuesThatDoNotFit) {
  expect_refused(one_input(R"({"name": "s", "shape": [1], "datatype": "BYTES", "data": ["a"]})"), std::nullopt,
                 {"('s').datatype", "BYTES is unsupported"});
  expect_refused(one_input(R"({"name": "x", "shape": [1], "datatype": "FP33", "data": [1]})"), std::nullopt,
                 {"'FP33' is not a datatype"});
  expect_refused(one_input(R"({"name": "x", "shape": [2, -1], "datatype": "FP32", "data": [1]})"), std::nullopt,
                 {"('x').shape[1]", "-1"});
  expect_refused(one_input(R"({"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3]})"), std::nullopt,
                 {"('x').data", "3 values for shape [2x2] (4 values)"});
  expect_refused(one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2, 3]})"), std::nullopt,
                 {"3 values for shape [2]"});
  expect_refused(one_input(R"({"name": "i", "shape": [2], "datatype": "INT64", "data": [1, 2.5]})"), std::nullopt,
                 {"('i').data[1]", "expected an integer for INT64", "2.5"});
  expect_refused(one_input(R"({"name": "i", "shape": [1], "datatype": "INT8", "data": [300]})"), std::nullopt,
                 {"('i').data[0]", "300 is out of the range of INT8"});
  expect_refused(one_input(R"({"name": "u", "shape": [1], "datatype": "UINT16", "data": [-1]})"), std::nullopt,
                 {"-1 is out of the range of UINT16"});
  expect_refused(one_input(R"({"name": "b", "shape": [1], "datatype": "BOOL", "data": [1]})"), std::nullopt,
                 {"('b').data[0]", "true or false"});
  // A float beyond the datatype's finite range (the conversion would be undefined for FP32, and
  // infinity for FP16 and BF16) is refused as an integer out of range is; the largest finite ones
  // are kept exactly.
  expect_refused(one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "data": [1, -1e39]})"), std::nullopt,
                 {"('x').data[1]", "-1e+39 is out of the range of FP32"});
  expect_refused(one_input(R"({"name": "h", "shape": [1], "datatype": "FP16", "data": [70000]})"), std::nullopt,
                 {"('h').data[0]", "70000 is out of the range of FP16"});
  expect_refused(one_input(R"({"name": "g", "shape": [1], "datatype": "BF16", "data": [1e39]})"), std::nullopt,
                 {"('g').data[0]", "out of the range of BF16"});
  {
    const auto kept = decode(R"({"inputs": [
        {"name": "x", "shape": [1], "datatype": "FP32", "data": [3.4028234663852886e38]},
        {"name": "h", "shape": [2], "datatype": "FP16", "data": [65504, -65504]},
        {"name": "d", "shape": [1], "datatype": "FP64", "data": [1e300]}]})");
    EXPECT_EQ(kept.request.inputs[0].tensor.values<float>()[0], std::numeric_limits<float>::max());
    EXPECT_EQ(f16_to_float(kept.request.inputs[1].tensor.values<f16_t>()[0]), 65504.0f);
    EXPECT_EQ(f16_to_float(kept.request.inputs[1].tensor.values<f16_t>()[1]), -65504.0f);
    EXPECT_EQ(kept.request.inputs[2].tensor.values<double>()[0], 1e300);
  }
  expect_refused(one_input(R"({"name": "x", "shape": [1], "datatype": "FP32", "data": ["1"]})"), std::nullopt,
                 {"('x').data[0]", "expected a number, got string"});
  expect_refused(one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "data": [1, [2]]})"), std::nullopt,
                 {"('x').data: nested 2 deep, deeper than the shape [2]"});
  // A shape holding more values than the body could carry is refused before anything is allocated.
  expect_refused(one_input(R"({"name": "x", "shape": [100000, 100000, 100000], "datatype": "FP32", "data": []})"),
                 std::nullopt, {"('x').shape: [100000x100000x100000] holds more values than a body of"});
}

TEST(HttpCodec, RefusesBinarySizesThatDoNotAddUp) {
  const std::string header =
      one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}})");
  const std::string data = raw_bytes(std::vector<float>{1.f, 2.f});
  // Without the header length the whole body is JSON, binary bytes included.
  expect_refused(header + data, std::nullopt, {"NUL byte at byte offset " + std::to_string(header.size())});
  expect_refused(header + "\x7f\x7f", std::nullopt, {"malformed JSON at byte offset " + std::to_string(header.size())});
  expect_refused(header, header.size(), {"8 bytes, but only 0 remain"});
  expect_refused(header + data + "extra", header.size(), {"5 bytes after the JSON"});
  expect_refused(header + data, header.size() + 100, {"Inference-Header-Content-Length", "more than the body"});
  const std::string wrong =
      one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 4}})");
  expect_refused(wrong + data.substr(0, 4), wrong.size(),
                 {"('x').parameters.binary_data_size", "4 bytes for FP32 [2]", "takes 8"});
  const std::string both = one_input(
      R"({"name": "x", "shape": [2], "datatype": "FP32", "data": [1, 2], "parameters": {"binary_data_size": 8}})");
  expect_refused(both + data, both.size(), {"both 'data' and parameters.binary_data_size"});
  const std::string no_header =
      one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}})");
  expect_refused(no_header, std::nullopt, {"needs the Inference-Header-Content-Length"});
  const std::string negative =
      one_input(R"({"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": -8}})");
  expect_refused(negative, negative.size(), {"binary_data_size: expected a byte count"});
  const std::string flags =
      one_input(R"({"name": "b", "shape": [2], "datatype": "BOOL", "parameters": {"binary_data_size": 2}})");
  expect_refused(flags + std::string("\x01\x07", 2), flags.size(), {"BOOL element 1 is byte 7"});
}

TEST(HttpCodec, RefusesExtensionsLoomDoesNotImplement) {
  expect_refused(one_input(R"({"name": "x", "shape": [1], "datatype": "FP32",
                              "parameters": {"shared_memory_region": "r"}})"),
                 std::nullopt, {"shared_memory_region", "unsupported"});
  // Their "off" values are accepted.
  EXPECT_NO_THROW(decode(R"({"parameters": {"sequence_id": 0}, "inputs": [{"name": "x", "shape": [1],
      "datatype": "FP32", "data": [1]}], "outputs": [{"name": "y", "parameters": {"classification": 0}}]})"));
  expect_refused(R"({"parameters": {"sequence_id": "s1"},
                     "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"sequence_id", "unsupported"});
  expect_refused(R"({"parameters": {"sequence_id": 3},
                     "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"sequence_id", "unsupported"});
  expect_refused(R"({"inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}],
                     "outputs": [{"name": "y", "parameters": {"classification": 3}}]})",
                 std::nullopt, {"outputs[0].parameters.classification", "unsupported"});
  expect_refused(R"({"parameters": {"priority": -1},
                     "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"'priority'", "negative"});
  expect_refused(R"({"parameters": {"priority": "soon"},
                     "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"'soon' is not a priority"});
  expect_refused(R"({"parameters": {"timeout": -5},
                     "inputs": [{"name": "x", "shape": [1], "datatype": "FP32", "data": [1]}]})",
                 std::nullopt, {"'timeout'"});
}

TEST(HttpCodec, EncodesJsonAndBinaryOutputsAsTheProtocolReadsThem) {
  InferResponse response;
  response.model = "m";
  response.version = "3";
  response.id = "r1";
  response.outputs.push_back({"scores", Tensor::from<float>({2, 2}, {0.25f, -1.f, 3.5f, 1e-8f}), false});
  response.outputs.push_back({"ids", Tensor::from<std::int64_t>({3}, {5, -6, 7}), true});
  response.outputs.push_back({"flags", Tensor::from<std::uint8_t>({2}, {1, 0}), false});
  const auto encoded = encode_infer_response(response, false);
  ASSERT_TRUE(encoded.header_length.has_value());
  const json header = json::parse(encoded.body.substr(0, *encoded.header_length));
  EXPECT_EQ(header["model_name"], "m");
  EXPECT_EQ(header["model_version"], "3");
  EXPECT_EQ(header["id"], "r1");
  ASSERT_EQ(header["outputs"].size(), 3u);
  const json& scores = header["outputs"][0];
  EXPECT_EQ(scores["name"], "scores");
  EXPECT_EQ(scores["datatype"], "FP32");
  EXPECT_EQ(scores["shape"], json::array({2, 2}));
  ASSERT_EQ(scores["data"].size(), 4u);
  EXPECT_EQ(scores["data"][0].get<float>(), 0.25f);
  EXPECT_EQ(scores["data"][3].get<float>(), 1e-8f);  // a float's value survives the JSON number
  const json& ids = header["outputs"][1];
  EXPECT_EQ(ids["datatype"], "INT64");
  EXPECT_FALSE(ids.contains("data"));
  EXPECT_EQ(ids["parameters"]["binary_data_size"], 24);
  EXPECT_EQ(header["outputs"][2]["datatype"], "BOOL");
  EXPECT_EQ(header["outputs"][2]["data"], json::array({true, false}));
  ASSERT_EQ(encoded.body.size(), *encoded.header_length + 24);
  std::vector<std::int64_t> back(3);
  std::memcpy(back.data(), encoded.body.data() + *encoded.header_length, 24);
  EXPECT_EQ(back, (std::vector<std::int64_t>{5, -6, 7}));
}

TEST(HttpCodec, EncodesEveryOutputBinaryOnRequestAndNonFiniteAsNull) {
  InferResponse response;
  response.model = "m";
  response.outputs.push_back({"a", Tensor::from<float>({2}, {1.f, 2.f}), false});
  response.outputs.push_back({"b", Tensor::from<float>({1}, {3.f}), false});
  const auto binary = encode_infer_response(response, true);
  ASSERT_TRUE(binary.header_length.has_value());
  EXPECT_EQ(binary.body.size(), *binary.header_length + 12);
  std::vector<float> back(3);
  std::memcpy(back.data(), binary.body.data() + *binary.header_length, 12);
  EXPECT_EQ(back, (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_FALSE(json::parse(binary.body.substr(0, *binary.header_length)).contains("id"));

  InferResponse odd;
  odd.outputs.push_back({"a", Tensor::from<float>({2}, {std::nanf(""), 1.f}), false});
  const auto text = encode_infer_response(odd, false);
  EXPECT_FALSE(text.header_length.has_value());
  EXPECT_EQ(json::parse(text.body)["outputs"][0]["data"], json::parse("[null, 1.0]"));
}

// A request decoded and its tensors encoded back as outputs give the values sent, JSON or binary.
TEST(HttpCodec, ValuesRoundTripThroughDecodeAndEncode) {
  const std::vector<float> x{0.1f, -123.456f, 3.4e38f, -1e-30f, 7.f, 0.f};
  json request;
  request["inputs"] = json::array({{{"name", "x"}, {"shape", {3, 2}}, {"datatype", "FP32"}, {"data", x}},
                                   {{"name", "k"}, {"shape", {2}}, {"datatype", "INT16"}, {"data", {-32768, 32767}}}});
  const auto decoded = decode(request.dump());
  for (bool binary : {false, true}) {
    InferResponse response;
    for (const auto& input : decoded.request.inputs) response.outputs.push_back({input.name, input.tensor, binary});
    const auto encoded = encode_infer_response(response, false);
    const std::size_t json_bytes = encoded.header_length.value_or(encoded.body.size());
    const json header = json::parse(encoded.body.substr(0, json_bytes));
    std::vector<float> xs(6);
    std::vector<std::int16_t> ks(2);
    if (binary) {
      ASSERT_EQ(encoded.body.size(), json_bytes + 24 + 4);
      std::memcpy(xs.data(), encoded.body.data() + json_bytes, 24);
      std::memcpy(ks.data(), encoded.body.data() + json_bytes + 24, 4);
    } else {
      xs = header["outputs"][0]["data"].get<std::vector<float>>();
      ks = header["outputs"][1]["data"].get<std::vector<std::int16_t>>();
    }
    EXPECT_EQ(xs, x) << (binary ? "binary" : "JSON");
    EXPECT_EQ(ks, (std::vector<std::int16_t>{-32768, 32767}));
    EXPECT_EQ(header["outputs"][1]["datatype"], "INT16");
    EXPECT_EQ(header["outputs"][0]["shape"], json::array({3, 2}));
  }
}

TEST(HttpCodec, EncodesMetadataAndTheRepositoryIndex) {
  ModelEntry ready;
  ready.name = "yolo";
  ready.version = "2";
  ready.ready = true;
  ready.inputs = {{"images", "FP32", {1, 3, -1, -1}}};
  ready.outputs = {{"boxes", "FP32", {1, 84, -1}}};
  const json metadata = json::parse(encode_model_metadata(ready));
  EXPECT_EQ(metadata["name"], "yolo");
  EXPECT_EQ(metadata["versions"], json::array({"2"}));
  EXPECT_EQ(metadata["platform"], "onnx");
  EXPECT_EQ(metadata["inputs"][0]["name"], "images");
  EXPECT_EQ(metadata["inputs"][0]["shape"], json::array({1, 3, -1, -1}));
  EXPECT_EQ(metadata["outputs"][0]["datatype"], "FP32");

  const json unbatched = json::parse(encode_model_config(ready));
  EXPECT_EQ(unbatched["max_batch_size"], 0);
  EXPECT_EQ(unbatched["input"][0]["data_type"], "TYPE_FP32");
  EXPECT_EQ(unbatched["input"][0]["dims"], json::array({1, 3, -1, -1}));
  ModelEntry batched = ready;
  batched.config.max_batch_size = 8;
  batched.inputs = {{"x", "INT64", {-1, 4}}};
  batched.outputs = {{"y", "BOOL", {-1, 4, 2}}};
  const json config = json::parse(encode_model_config(batched));
  EXPECT_EQ(config["name"], "yolo");
  EXPECT_EQ(config["max_batch_size"], 8);
  EXPECT_EQ(config["input"][0]["name"], "x");
  EXPECT_EQ(config["input"][0]["data_type"], "TYPE_INT64");
  EXPECT_EQ(config["input"][0]["dims"], json::array({4}));  // Triton's dims leave the batch dim out
  EXPECT_EQ(config["output"][0]["data_type"], "TYPE_BOOL");
  EXPECT_EQ(config["output"][0]["dims"], json::array({4, 2}));

  const json server = json::parse(encode_server_metadata());
  EXPECT_EQ(server["name"], "loom");
  EXPECT_EQ(server["version"], version());
  EXPECT_NE(std::find(server["extensions"].begin(), server["extensions"].end(), "binary_tensor_data"),
            server["extensions"].end());

  ModelEntry broken;
  broken.name = "broken";
  broken.version = "1";
  broken.error = "not an ONNX model";
  const json index = json::parse(encode_repository_index({ready, broken}));
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[0]["state"], "READY");
  EXPECT_EQ(index[1]["name"], "broken");
  EXPECT_EQ(index[1]["state"], "UNAVAILABLE");
  EXPECT_EQ(index[1]["reason"], "not an ONNX model");
}

}  // namespace
}  // namespace loom::serve
