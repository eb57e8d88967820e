// Shape inference of MatMul (numpy 1-D promotion, batch broadcasting) and Gemm (C broadcast),
// checked against shapes worked out by hand from the ONNX/numpy rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/ops.hpp"
#include "loom/error.hpp"
#include "loom/model.hpp"

using namespace loom;

namespace {

Shape infer_one(const std::string& op, Attributes attrs, const std::vector<Shape>& shapes) {
  Node node;
  node.op_type = op;
  node.attrs = std::move(attrs);
  node.outputs = {"y"};
  std::vector<ValueInfo> values;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    values.push_back({"in" + std::to_string(i), DType::f32, shapes[i], {}});
  std::vector<const ValueInfo*> inputs;
  for (const ValueInfo& v : values) inputs.push_back(&v);
  const std::vector<const Tensor*> constants(inputs.size(), nullptr);
  return graph::infer_node(node, inputs, constants).at(0).shape;
}

}  // namespace

TEST(ShapeInference, MatMulVectorsAndBroadcast) {
  EXPECT_EQ(infer_one("MatMul", {}, {Shape{4}, Shape{4, 3}}), (Shape{3}));
  EXPECT_EQ(infer_one("MatMul", {}, {Shape{2, 4}, Shape{4}}), (Shape{2}));
  EXPECT_EQ(infer_one("MatMul", {}, {Shape{4}, Shape{4}}), (Shape{}));
  EXPECT_EQ(infer_one("MatMul", {}, {Shape{4}, Shape{2, 3, 4, 5}}), (Shape{2, 3, 5}));
  EXPECT_EQ(infer_one("MatMul", {}, {Shape{2, 1, 4, 5}, Shape{3, 5, 6}}), (Shape{2, 3, 4, 6}));
  EXPECT_THROW(infer_one("MatMul", {}, {Shape{4}, Shape{3}}), Error);
  EXPECT_THROW(infer_one("MatMul", {}, {Shape{2, 4, 5}, Shape{3, 5, 6}}), Error);
}

TEST(ShapeInference, GemmTransposesAndC) {
  EXPECT_EQ(infer_one("Gemm", {{"transA", std::int64_t{1}}, {"transB", std::int64_t{1}}},
                      {Shape{3, 2}, Shape{5, 3}, Shape{}}),
            (Shape{2, 5}));
  EXPECT_EQ(infer_one("Gemm", {}, {Shape{2, 3}, Shape{3, 5}, Shape{2, 1}}), (Shape{2, 5}));
  EXPECT_THROW(infer_one("Gemm", {}, {Shape{2, 3}, Shape{3, 5}, Shape{3, 5}}), Error);
}
