// Small ONNX files written with the protobuf API, for the importer tests: models are built field
// by field here (never through Loom's own writer), so the tests check the importer against the
// format itself.
#pragma once

#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include "graph/ops.hpp"
#include "loom/error.hpp"

namespace loom::testing {

// A fresh folder per test, removed afterwards.
class OnnxFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("loom_onnx_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  std::string save(const onnx::ModelProto& model, const std::string& file = "model.onnx") const {
    const std::string p = path(file);
    std::filesystem::create_directories((dir_ / file).parent_path());
    std::ofstream out(p, std::ios::binary);
    EXPECT_TRUE(model.SerializeToOstream(&out));
    return p;
  }

  void write_bytes(const std::string& file, const std::string& bytes) const {
    std::filesystem::create_directories((dir_ / file).parent_path());
    std::ofstream out(path(file), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  std::filesystem::path dir_;
};

// Skips the test while an op it needs is not registered yet (ops land in separate changes).
#define LOOM_REQUIRE_OPS(...)                \
  for (const char* op_name_ : {__VA_ARGS__}) \
    if (!::loom::graph::is_supported_op(op_name_)) GTEST_SKIP() << "op " << op_name_ << " is not registered yet"

// The loom::Error that `f` throws (code and message); a test failure when it throws none.
struct CaughtError {
  ErrorCode code = ErrorCode::internal;
  std::string message;
};
template <class F>
CaughtError error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no loom::Error thrown";
  return {};
}

inline onnx::ModelProto make_model(std::int64_t opset, const std::string& graph_name = "g") {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("loom-tests");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model.mutable_graph()->set_name(graph_name);
  return model;
}

// dims: "3" a fixed size, "batch" a named symbolic dimension, "?" a dimension with neither.
inline void add_input(onnx::GraphProto* g, const std::string& name, int elem_type,
                      const std::vector<std::string>& dims) {
  auto* input = g->add_input();
  input->set_name(name);
  auto* tensor_type = input->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(elem_type);
  auto* shape = tensor_type->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (d == "?") continue;
    if (std::isdigit(static_cast<unsigned char>(d[0])))
      dim->set_dim_value(std::stoll(d));
    else
      dim->set_dim_param(d);
  }
}

inline void add_output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* node = g->add_node();
  node->set_op_type(op);
  node->set_name(name);
  for (const auto& i : inputs) node->add_input(i);
  for (const auto& o : outputs) node->add_output(o);
  return node;
}

inline void set_int(onnx::NodeProto* n, const std::string& name, std::int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void set_float(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}
inline void set_ints(onnx::NodeProto* n, const std::string& name, const std::vector<std::int64_t>& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a->add_ints(x);
}

// Float tensor with its values in float_data (the typed field).
inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<std::int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto v : values) t.add_float_data(v);
  return t;
}

// Tensor with its bytes in raw_data, `values` laid out as T.
template <class T>
onnx::TensorProto raw_tensor(const std::string& name, int data_type, const std::vector<std::int64_t>& dims,
                             const std::vector<T>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(data_type);
  for (auto d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T)));
  return t;
}

}  // namespace loom::testing
