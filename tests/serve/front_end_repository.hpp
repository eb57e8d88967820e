// The repository both front ends' loopback tests serve (test_http_frontend.cpp,
// test_grpc_frontend.cpp): `doubled`, y = x + x over x FP32 [2, 3], and `broken`, a file that is
// not ONNX. Returns the repository's folder.
#pragma once

#include <string>

#include "unit/onnx_proto_builder.hpp"

namespace loom::serve {

class FrontEndTest : public loom::testing::OnnxFileTest {
 protected:
  std::string write_front_end_repository() const {
    auto model = loom::testing::make_model(17);
    auto* graph = model.mutable_graph();
    loom::testing::add_input(graph, "x", onnx::TensorProto::FLOAT, {"2", "3"});
    loom::testing::add_node(graph, "Add", {"x", "x"}, {"y"});
    loom::testing::add_output(graph, "y");
    save(model, "repo/doubled/1/model.onnx");
    write_bytes("repo/broken/1/model.onnx", "not an ONNX model");
    return path("repo");
  }
};

}  // namespace loom::serve
