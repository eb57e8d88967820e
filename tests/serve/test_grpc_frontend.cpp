// loom-serve's gRPC front end (apps/serve/grpc_frontend.hpp) over loopback with gRPC's own C++
// client: a repository with a small model written here (y = x + x) and a broken one, each call's
// answer and status checked against values worked out by hand.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "grpc_frontend.hpp"
#include "grpc_predict_v2.grpc.pb.h"
#include "front_end_repository.hpp"
#include "unit/onnx_proto_builder.hpp"

namespace loom::serve {
namespace {

using inference::GRPCInferenceService;

constexpr std::size_t kMaxRequestBytes = 4096;

class GrpcFrontendTest : public FrontEndTest {
 protected:
  void SetUp() override {
    FrontEndTest::SetUp();
    ServiceOptions options;
    options.repository = write_front_end_repository();
    options.device = "cpu";
    options.max_request_bytes = kMaxRequestBytes;
    service_ = std::make_unique<Service>(options);
    GrpcFrontendOptions frontend_options;
    frontend_options.max_request_bytes = kMaxRequestBytes;
    frontend_ = std::make_unique<GrpcFrontend>(*service_, "127.0.0.1", 0, frontend_options);
    stub_ = GRPCInferenceService::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    frontend_.reset();
    service_.reset();
    OnnxFileTest::TearDown();
  }

  std::string target() const { return "127.0.0.1:" + std::to_string(frontend_->port()); }

  // Every call is bounded: a front end that never answers fails the test instead of hanging it.
  static void bound(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  static inference::ModelInferRequest doubled_request(const std::vector<float>& x) {
    inference::ModelInferRequest request;
    request.set_model_name("doubled");
    auto* input = request.add_inputs();
    input->set_name("x");
    input->set_datatype("FP32");
    input->add_shape(2);
    input->add_shape(3);
    request.add_raw_input_contents(std::string(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)));
    return request;
  }

  grpc::Status infer(const inference::ModelInferRequest& request, inference::ModelInferResponse& response) {
    grpc::ClientContext context;
    bound(context);
    return stub_->ModelInfer(&context, request, &response);
  }

  static std::vector<float> floats(const std::string& raw) {
    std::vector<float> out(raw.size() / sizeof(float));
    std::memcpy(out.data(), raw.data(), out.size() * sizeof(float));
    return out;
  }

  std::unique_ptr<Service> service_;
  std::unique_ptr<GrpcFrontend> frontend_;
  std::unique_ptr<GRPCInferenceService::Stub> stub_;
};

TEST_F(GrpcFrontendTest, HealthAndMetadata) {
  EXPECT_GT(frontend_->port(), 0);
  {
    grpc::ClientContext context;
    bound(context);
    inference::ServerLiveResponse live;
    ASSERT_TRUE(stub_->ServerLive(&context, {}, &live).ok());
    EXPECT_TRUE(live.live());
  }
  {
    grpc::ClientContext context;
    bound(context);
    inference::ServerReadyResponse ready;
    ASSERT_TRUE(stub_->ServerReady(&context, {}, &ready).ok());
    EXPECT_FALSE(ready.ready()) << "a broken model keeps the server from being ready";
  }
  for (const auto& [name, expected] : {std::pair{"doubled", true}, {"broken", false}, {"absent", false}}) {
    grpc::ClientContext context;
    bound(context);
    inference::ModelReadyRequest request;
    request.set_name(name);
    inference::ModelReadyResponse ready;
    ASSERT_TRUE(stub_->ModelReady(&context, request, &ready).ok());
    EXPECT_EQ(ready.ready(), expected) << name;
  }
  {
    grpc::ClientContext context;
    bound(context);
    inference::ModelMetadataRequest request;
    request.set_name("doubled");
    inference::ModelMetadataResponse meta;
    ASSERT_TRUE(stub_->ModelMetadata(&context, request, &meta).ok());
    ASSERT_EQ(meta.inputs_size(), 1);
    EXPECT_EQ(meta.inputs(0).name(), "x");
    EXPECT_EQ(meta.inputs(0).datatype(), "FP32");
    EXPECT_EQ(std::vector<std::int64_t>(meta.inputs(0).shape().begin(), meta.inputs(0).shape().end()),
              (std::vector<std::int64_t>{2, 3}));
    ASSERT_EQ(meta.outputs_size(), 1);
    EXPECT_EQ(meta.outputs(0).name(), "y");
  }
  {
    grpc::ClientContext context;
    bound(context);
    inference::ModelMetadataRequest request;
    request.set_name("broken");
    inference::ModelMetadataResponse meta;
    const auto status = stub_->ModelMetadata(&context, request, &meta);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(status.error_message().find("broken"), std::string::npos) << status.error_message();
  }
  {
    grpc::ClientContext context;
    bound(context);
    inference::ModelMetadataRequest request;
    request.set_name("absent");
    inference::ModelMetadataResponse meta;
    EXPECT_EQ(stub_->ModelMetadata(&context, request, &meta).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(GrpcFrontendTest, InferAnswersWithRawOutputs) {
  inference::ModelInferResponse response;
  auto request = doubled_request({1.5f, -2.f, 0.f, 3.25f, 100.f, -0.5f});
  request.set_id("first");
  const auto status = infer(request, response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.model_name(), "doubled");
  EXPECT_EQ(response.id(), "first");
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).datatype(), "FP32");
  ASSERT_EQ(response.raw_output_contents_size(), 1);
  EXPECT_EQ(floats(response.raw_output_contents(0)), (std::vector<float>{3.f, -4.f, 0.f, 6.5f, 200.f, -1.f}));

  // The same values as the typed fp32_contents list.
  inference::ModelInferRequest typed;
  typed.set_model_name("doubled");
  auto* input = typed.add_inputs();
  input->set_name("x");
  input->set_datatype("FP32");
  input->add_shape(2);
  input->add_shape(3);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) input->mutable_contents()->add_fp32_contents(v);
  inference::ModelInferResponse typed_response;
  ASSERT_TRUE(infer(typed, typed_response).ok());
  EXPECT_EQ(floats(typed_response.raw_output_contents(0)), (std::vector<float>{2.f, 4.f, 6.f, 8.f, 10.f, 12.f}));
}

TEST_F(GrpcFrontendTest, BadRequestsGetTheirStatusAndTheServerServesOn) {
  inference::ModelInferResponse response;
  auto unknown = doubled_request({1, 2, 3, 4, 5, 6});
  unknown.set_model_name("absent");
  EXPECT_EQ(infer(unknown, response).error_code(), grpc::StatusCode::NOT_FOUND);

  auto broken = doubled_request({1, 2, 3, 4, 5, 6});
  broken.set_model_name("broken");
  const auto unavailable = infer(broken, response);
  EXPECT_EQ(unavailable.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(unavailable.error_message().find("not ready"), std::string::npos) << unavailable.error_message();

  auto short_bytes = doubled_request({1, 2, 3, 4, 5, 6});
  short_bytes.set_raw_input_contents(0, std::string(8, '\0'));
  const auto invalid = infer(short_bytes, response);
  EXPECT_EQ(invalid.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(invalid.error_message().find("'x'"), std::string::npos) << invalid.error_message();

  auto wrong_type = doubled_request({1, 2, 3, 4, 5, 6});
  wrong_type.mutable_inputs(0)->set_datatype("INT32");  // 24 bytes are 6 INT32 too: the Service refuses it
  EXPECT_EQ(infer(wrong_type, response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // 8000 bytes of input in one message, over the 4096-byte limit.
  auto oversized = doubled_request({1, 2, 3, 4, 5, 6});
  oversized.mutable_inputs(0)->set_shape(1, 1000);
  oversized.set_raw_input_contents(0, std::string(2 * 1000 * sizeof(float), '\0'));
  EXPECT_EQ(infer(oversized, response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  inference::ModelInferResponse good;
  ASSERT_TRUE(infer(doubled_request({1, 1, 1, 1, 1, 1}), good).ok());
  EXPECT_EQ(floats(good.raw_output_contents(0)), (std::vector<float>(6, 2.f)));
}

TEST_F(GrpcFrontendTest, ConcurrentClientsEachGetTheirOwnAnswer) {
  constexpr int kClients = 6, kCalls = 10;
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&, c] {
      auto stub = GRPCInferenceService::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
      for (int i = 0; i < kCalls; ++i) {
        const float base = static_cast<float>(c * 100 + i);
        std::vector<float> x = {base, base + 1, base + 2, base + 3, base + 4, base + 5};
        grpc::ClientContext context;
        bound(context);
        inference::ModelInferResponse response;
        if (!stub->ModelInfer(&context, doubled_request(x), &response).ok()) continue;
        std::vector<float> expected;
        for (float v : x) expected.push_back(2 * v);
        if (response.raw_output_contents_size() == 1 && floats(response.raw_output_contents(0)) == expected) ++right;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(right.load(), kClients * kCalls);
}

TEST_F(GrpcFrontendTest, PortInUseIsAnErrorNamingAddressAndPort) {
  const int port = frontend_->port();
  try {
    GrpcFrontend second(*service_, "127.0.0.1", port);
    ADD_FAILURE() << "a second front end listened on port " << port << " too";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos) << error.what();
  }
  EXPECT_THROW(GrpcFrontend(*service_, "127.0.0.1", 70000), Error);
}

TEST_F(GrpcFrontendTest, StopEndsServingAndIsIdempotent) {
  inference::ModelInferResponse response;
  ASSERT_TRUE(infer(doubled_request({1, 2, 3, 4, 5, 6}), response).ok());
  auto bad = doubled_request({1, 2, 3, 4, 5, 6});
  bad.set_model_name("absent");
  EXPECT_FALSE(infer(bad, response).ok());
  frontend_->stop();
  frontend_->stop();
  // Both calls were accepted and answered (an error is an answer); none arrived while stopping.
  EXPECT_EQ(frontend_->calls().answered, 2u);
  EXPECT_EQ(frontend_->calls().refused, 0u);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  inference::ServerLiveResponse live;
  EXPECT_FALSE(stub_->ServerLive(&context, {}, &live).ok());
}

}  // namespace
}  // namespace loom::serve
