// Shape inference and the builder, against shapes worked out by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "graph/ops.hpp"
#include "test_support.hpp"
#include "loom/model.hpp"
#include "loom/workloads.hpp"

using namespace loom;
using loom::test_support::code_of;

TEST(ShapeInference, ConvPoolGemmChain) {
  ModelBuilder b("m");
  auto x = b.input("x", DType::f32, Shape{2, 3, 17, 17});
  auto c = b.conv2d(x, 3, 8, 3, 2, 1);  // (17 + 2 - 3) / 2 + 1 = 9
  auto p = b.op("MaxPool", {c},
                {{"kernel_shape", std::vector<std::int64_t>{2, 2}},
                 {"strides", std::vector<std::int64_t>{2, 2}},
                 {"ceil_mode", std::int64_t{1}}});  // ceil((9 - 2) / 2) + 1 = 5
  auto g = b.op("GlobalAveragePool", {p});
  auto f = b.op("Flatten", {g});
  b.output(f);
  auto values = infer_shapes(b.build());
  EXPECT_EQ(values.at(c).shape, (Shape{2, 8, 9, 9}));
  EXPECT_EQ(values.at(p).shape, (Shape{2, 8, 5, 5}));
  EXPECT_EQ(values.at(g).shape, (Shape{2, 8, 1, 1}));
  EXPECT_EQ(values.at(f).shape, (Shape{2, 8}));
}

TEST(ShapeInference, BroadcastMatMulReshapeGather) {
  ModelBuilder b("m");
  auto a = b.input("a", DType::f32, Shape{4, 1, 5, 6});
  auto w = b.random_weight("w", Shape{3, 6, 7}, 1.0f);
  auto mm = b.op("MatMul", {a, w});  // batch (4,1) x (3) -> (4,3)
  auto r = b.reshape(mm, {0, -1});   // [4, 105]
  auto table = b.random_weight("table", Shape{10, 4}, 1.0f);
  auto ids = b.input("ids", DType::i32, Shape{2, 3});
  auto g = b.op("Gather", {table, ids}, {{"axis", std::int64_t{1}}});  // [10, 2, 3]
  b.output(r);
  b.output(g);
  auto values = infer_shapes(b.build());
  EXPECT_EQ(values.at(mm).shape, (Shape{4, 3, 5, 7}));
  EXPECT_EQ(values.at(r).shape, (Shape{4, 105}));
  EXPECT_EQ(values.at(g).shape, (Shape{10, 2, 3}));
  EXPECT_EQ(graph::broadcast_shapes(Shape{3, 1}, Shape{4}), (Shape{3, 4}));
}

TEST(ShapeInference, LstmOutputs) {
  ModelBuilder b("m");
  auto x = b.input("x", DType::f32, Shape{5, 2, 3});
  auto w = b.random_weight("W", Shape{2, 16, 3}, 1.0f);
  auto r = b.random_weight("R", Shape{2, 16, 4}, 1.0f);
  auto outs =
      b.node("LSTM", {x, w, r}, {{"hidden_size", std::int64_t{4}}, {"direction", std::string("bidirectional")}}, 3);
  b.output(outs[0]);
  auto values = infer_shapes(b.build());
  EXPECT_EQ(values.at(outs[0]).shape, (Shape{5, 2, 2, 4}));
  EXPECT_EQ(values.at(outs[1]).shape, (Shape{2, 2, 4}));
}

TEST(ShapeInference, ErrorsNameNodeAndOp) {
  ModelBuilder b("bad");
  auto x = b.input("x", DType::f32, Shape{2, 3});
  auto w = b.random_weight("w", Shape{4, 5}, 1.0f);
  b.node("MatMul", {x, w}, {}, 1, "proj");
  b.output("proj");
  try {
    b.build();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::shape_mismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("model 'bad'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("node 'proj' (MatMul)"), std::string::npos) << msg;
  }
}

TEST(ShapeInference, RejectsBadGraphs) {
  EXPECT_EQ(code_of([] {
              ModelBuilder b("m");
              auto x = b.input("x", DType::f32, Shape{1});
              b.output(b.op("Frobnicate", {x}));
              b.build();
            }),
            ErrorCode::unsupported);
  EXPECT_EQ(code_of([] {
              ModelBuilder b("m");
              b.input("x", DType::f32, Shape{1});
              b.output(b.op("Relu", {"nope"}));
              b.build();
            }),
            ErrorCode::invalid_model);
  EXPECT_EQ(code_of([] {
              ModelBuilder b("m");
              auto x = b.input("x", DType::f32, Shape{1, 3, 8, 8});
              auto w = b.random_weight("w", Shape{4, 3, 3, 3}, 1.0f);
              b.output(b.op("Conv", {x, w}, {{"auto_pad", std::string("MIRROR")}}));
              b.build();
            }),
            ErrorCode::unsupported);
  EXPECT_EQ(code_of([] {
              ModelBuilder b("m");
              auto x = b.input("x", DType::i64, Shape{2});
              b.output(b.op("Sigmoid", {x}));  // float only (Relu also takes integers)
              b.build();
            }),
            ErrorCode::dtype_mismatch);
  EXPECT_EQ(code_of([] {
              ModelBuilder b("m");
              b.input("x", DType::f32, Shape{2});
              b.output("never");
              b.build();
            }),
            ErrorCode::invalid_model);
}

TEST(Builder, SameSeedSameWeights) {
  auto a = workloads::resnet_cnn(1, workloads::Size::small, 7);
  auto b = workloads::resnet_cnn(1, workloads::Size::small, 7);
  auto c = workloads::resnet_cnn(1, workloads::Size::small, 8);
  const auto& wa = a.initializers.begin()->second;
  const auto& wb = b.initializers.at(a.initializers.begin()->first);
  const auto& wc = c.initializers.at(a.initializers.begin()->first);
  ASSERT_EQ(wa.bytes(), wb.bytes());
  EXPECT_EQ(std::memcmp(wa.data(), wb.data(), wa.bytes()), 0);
  EXPECT_NE(std::memcmp(wa.data(), wc.data(), wa.bytes()), 0);
}

TEST(Workloads, ShapesOfTheDefaultModels) {
  for (auto size : {workloads::Size::small, workloads::Size::large}) {
    auto models = workloads::default_workload(2, size);
    ASSERT_EQ(models.size(), 3u);
    EXPECT_EQ(infer_shapes(models[0]).at(models[0].outputs[0]).shape, (Shape{2, 1000}));
    const auto& bert = models[1];
    const auto seq = bert.inputs[0].shape[1];
    const auto bert_out = infer_shapes(bert).at(bert.outputs[0]).shape;
    EXPECT_EQ(bert_out[0], 2);
    EXPECT_EQ(bert_out[1], seq);
    EXPECT_EQ(infer_shapes(models[2]).at(models[2].outputs[0]).shape[0], 2);
  }
  EXPECT_THROW(workloads::default_model("vgg", 1, workloads::Size::small), Error);
  EXPECT_THROW(workloads::resnet_cnn(0), Error);
}

TEST(Workloads, RandomInputsRespectRanges) {
  auto bert = workloads::bert_encoder(2);
  auto inputs = random_inputs(bert, 5);
  ASSERT_EQ(inputs.size(), 1u);
  for (auto id : inputs[0].values<std::int64_t>()) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 1000);
  }
}
