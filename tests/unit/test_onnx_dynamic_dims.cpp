// Input dimensions written as -1, or as dim_value 0 together with a dim_param: the importer takes
// them as symbolic (as onnxruntime does), they bind like any symbolic dim, the bound model computes
// what the same model with the dim fixed computes, and an unbound one is an error naming the input,
// the axis and how to bind it.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/executor.hpp"
#include "loom/model.hpp"
#include "loom/onnx.hpp"
#include "onnx_proto_builder.hpp"

using namespace loom;
using namespace loom::testing;

namespace {

// y = Relu(x · W) for x of [N, 4] and a fixed W of [4, 3], without the graph input x.
onnx::ModelProto matmul_relu_without_input() {
  auto proto = make_model(17);
  auto* g = proto.mutable_graph();
  *g->add_initializer() =
      float_tensor("w", {4, 3}, {0.5f, -1.0f, 0.25f, 2.0f, 0.75f, -0.5f, -1.5f, 1.0f, 0.125f, 0.0f, -0.25f, 1.5f});
  add_node(g, "MatMul", {"x", "w"}, {"xw"});
  add_node(g, "Relu", {"xw"}, {"y"});
  add_output(g, "y");
  return proto;
}

// The same with input x of f32, its dims written by `set_dims`.
template <class SetDims>
onnx::ModelProto matmul_relu(SetDims&& set_dims) {
  auto proto = matmul_relu_without_input();
  auto* input = proto.mutable_graph()->add_input();
  input->set_name("x");
  auto* tensor_type = input->mutable_type()->mutable_tensor_type();
  tensor_type->set_elem_type(onnx::TensorProto::FLOAT);
  set_dims(tensor_type->mutable_shape());
  return proto;
}

void add_dims(onnx::TensorShapeProto* shape, std::initializer_list<std::int64_t> values) {
  for (const auto v : values) shape->add_dim()->set_dim_value(v);
}

// The protobuf wire format by hand, for a dimension that carries both dim_value and dim_param
// (one oneof: the protobuf API cannot write both).
std::string varint(std::uint64_t value) {
  std::string out;
  do {
    const auto low = static_cast<char>(value & 0x7F);
    value >>= 7;
    out += static_cast<char>(low | (value ? 0x80 : 0));
  } while (value);
  return out;
}
std::string length_field(int number, const std::string& payload) {
  return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}
std::string varint_field(int number, std::uint64_t value) {
  return varint(static_cast<std::uint64_t>(number) << 3) + varint(value);
}

// Graph input "x" of f32 [batch, 4] whose first dim is `first_dim` (Dimension bytes), appended as
// a second ModelProto.graph field: protobuf merges it into the graph, so x becomes its last input.
std::string with_input_x(const onnx::ModelProto& without_input, const std::string& first_dim) {
  const std::string second_dim = varint_field(1, 4);                                   // dim_value 4
  const std::string shape = length_field(1, first_dim) + length_field(1, second_dim);  // dims
  const std::string tensor_type = varint_field(1, onnx::TensorProto::FLOAT) + length_field(2, shape);
  const std::string value_info = length_field(1, "x") + length_field(2, length_field(1, tensor_type));
  return without_input.SerializeAsString() + length_field(7, length_field(11, value_info));
}

Tensor sample_x() {
  return Tensor::from<float>(Shape{3, 4},
                             {1.0f, -2.0f, 0.5f, 3.0f, -1.0f, 0.25f, 2.0f, -0.75f, 4.0f, 1.5f, -3.0f, 0.0f});
}

// The model's one output for sample_x() on the CPU backend, bound by `optimize`.
Tensor run_on_cpu(const Model& model, const OptimizeOptions& optimize) {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  Executor executor(options);
  LoadOptions load;
  load.name = "m";
  load.optimize = optimize;
  executor.load(model, load);
  Outputs outputs = executor.submit("m", {sample_x()}).get();
  EXPECT_EQ(outputs.size(), 1u);
  return outputs.at(0);
}

void expect_same_tensor(const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  EXPECT_EQ(std::memcmp(actual.data(), expected.data(), expected.bytes()), 0);
}

class OnnxDynamicDims : public OnnxFileTest {
 protected:
  // The reference: the same model with N fixed at 3, run on the CPU.
  Tensor fixed_result() {
    const Model fixed = load_onnx(save(matmul_relu([](auto* s) { add_dims(s, {3, 4}); }), "fixed.onnx"));
    EXPECT_FALSE(has_symbolic_dims(fixed));
    return run_on_cpu(fixed, {});
  }
};

TEST_F(OnnxDynamicDims, NegativeDimValuesAreSymbolicWithGeneratedNames) {
  auto proto = make_model(17);
  auto* g = proto.mutable_graph();
  auto* input = g->add_input();
  input->set_name("x");
  input->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  add_dims(input->mutable_type()->mutable_tensor_type()->mutable_shape(), {-1, 4, -7});
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y");
  const Model m = load_onnx(save(proto));
  EXPECT_EQ(m.inputs[0].shape, (Shape{-1, 4, -1}));
  EXPECT_EQ(m.inputs[0].dim_params, (std::vector<std::string>{"x:0", "", "x:2"}));
  EXPECT_EQ(unnamed_dim_name("x", 2), "x:2");
  EXPECT_TRUE(has_symbolic_dims(m));
}

TEST_F(OnnxDynamicDims, NegativeDimBoundByDimValuesOrInputShapesMatchesTheFixedModel) {
  const Tensor expected = fixed_result();
  const Model dynamic = load_onnx(save(matmul_relu([](auto* s) { add_dims(s, {-1, 4}); })));
  ASSERT_EQ(dynamic.inputs[0].dim_params, (std::vector<std::string>{"x:0", ""}));

  // As loom-bench --dims=x:0=3 binds it.
  OptimizeOptions by_name;
  by_name.dim_values["x:0"] = 3;
  by_name.default_dim_value = 0;
  expect_same_tensor(run_on_cpu(dynamic, by_name), expected);

  // As loom-run binds it: the input file's shape.
  OptimizeOptions by_shape;
  by_shape.input_shapes["x"] = Shape{3, 4};
  by_shape.default_dim_value = 0;
  expect_same_tensor(run_on_cpu(dynamic, by_shape), expected);
}

TEST_F(OnnxDynamicDims, ZeroDimValueWithDimParamIsSymbolicInEitherWireOrder) {
  const Tensor expected = fixed_result();
  const auto without_input = matmul_relu_without_input();
  const std::string batch_param = length_field(2, "batch");
  const std::string zero_value = varint_field(1, 0);
  // dim_value 0 after the dim_param: protobuf keeps the 0, the importer finds the name on the wire.
  // dim_param after dim_value 0: protobuf keeps the name.
  for (const std::string& dim : {batch_param + zero_value, zero_value + batch_param}) {
    write_bytes("zero_param.onnx", with_input_x(without_input, dim));
    const Model m = load_onnx(path("zero_param.onnx"));
    ASSERT_EQ(m.inputs.size(), 1u);
    EXPECT_EQ(m.inputs[0].shape, (Shape{-1, 4}));
    EXPECT_EQ(m.inputs[0].dim_params, (std::vector<std::string>{"batch", ""}));

    OptimizeOptions by_name;
    by_name.dim_values["batch"] = 3;
    by_name.default_dim_value = 0;
    expect_same_tensor(run_on_cpu(m, by_name), expected);
  }
}

TEST_F(OnnxDynamicDims, ZeroDimValueWithoutDimParamStaysAFixedZero) {
  write_bytes("zero.onnx", with_input_x(matmul_relu_without_input(), varint_field(1, 0)));
  const Model m = load_onnx(path("zero.onnx"));
  EXPECT_EQ(m.inputs[0].shape, (Shape{0, 4}));
  EXPECT_TRUE(m.inputs[0].dim_params.empty());
}

TEST_F(OnnxDynamicDims, UnboundDimIsAnErrorNamingInputAxisAndBinding) {
  const Model dynamic = load_onnx(save(matmul_relu([](auto* s) { add_dims(s, {-1, 4}); })));
  OptimizeOptions nothing;
  nothing.default_dim_value = 0;
  const CaughtError error = error_of([&] { run_on_cpu(dynamic, nothing); });
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  for (const char* part :
       {"input 'x'", "axis 0", "'x:0'", "input_shapes[\"x\"]", "dim_values[\"x:0\"]", "--dims=x:0=N"})
    EXPECT_NE(error.message.find(part), std::string::npos) << "'" << part << "' missing from: " << error.message;

  // Without default_dim_value = 0, the library's default of 1 binds it.
  EXPECT_EQ(optimize(dynamic).inputs[0].shape, (Shape{1, 4}));
}

}  // namespace
