// What the decode tests share: seeded specs, device buffers filled from and read into vectors,
// a greedy model whose tokens are known by construction, and independent references: the
// recurrent and encoder models rebuilt from ONNX ops (LSTM/GRU, LayerNormalization, MatMul, Add,
// Relu) and run by the Executor on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "loom/decode.hpp"
#include "loom/executor.hpp"
#include "loom/model.hpp"
#include "unit/cpu_op_harness.hpp"

namespace loom::decode_testing {

using decode::CellLayer;
using decode::CellStack;
using decode::CellType;
using decode::DecodeEngine;

inline std::int64_t gate_count(CellType type) { return type == CellType::lstm ? 4 : 3; }

// Weights uniform in [-scale, scale); every layer gets its own seeds.
inline CellStack random_cells(CellType type, std::int64_t input, std::int64_t hidden, int layers, std::uint32_t seed,
                              bool linear_before_reset = false, bool bias = true, float scale = 0.5f) {
  CellStack cells;
  cells.type = type;
  cells.input_size = input;
  cells.hidden_size = hidden;
  cells.linear_before_reset = linear_before_reset;
  const std::int64_t gates = gate_count(type) * hidden;
  for (int l = 0; l < layers; ++l) {
    CellLayer layer;
    const std::uint32_t s = seed + 10u * static_cast<std::uint32_t>(l);
    layer.w = testing::random_tensor(Shape{gates, l == 0 ? input : hidden}, s, -scale, scale);
    layer.r = testing::random_tensor(Shape{gates, hidden}, s + 1, -scale, scale);
    if (bias) layer.b = testing::random_tensor(Shape{2 * gates}, s + 2, -scale, scale);
    cells.layers.push_back(std::move(layer));
  }
  return cells;
}

template <class T>
decode::DeviceBuffer to_device(DecodeEngine& engine, const std::vector<T>& values) {
  decode::DeviceBuffer buffer = engine.allocate(values.size() * sizeof(T));
  engine.upload(buffer, values.data(), values.size() * sizeof(T));
  return buffer;
}

inline decode::DeviceBuffer to_device(DecodeEngine& engine, const Tensor& t) {
  decode::DeviceBuffer buffer = engine.allocate(t.bytes());
  engine.upload(buffer, t.data(), t.bytes());
  return buffer;
}

// A buffer whose bytes are all 0xFF (NaN as floats, -1 as int32), so unwritten elements show.
inline decode::DeviceBuffer poisoned(DecodeEngine& engine, std::size_t bytes) {
  decode::DeviceBuffer buffer = engine.allocate(bytes);
  std::vector<unsigned char> poison(bytes, 0xFF);
  engine.upload(buffer, poison.data(), bytes);
  return buffer;
}

template <class T>
std::vector<T> from_device(DecodeEngine& engine, const decode::DeviceBuffer& buffer, std::size_t count) {
  std::vector<T> values(count);
  engine.download(values.data(), buffer, count * sizeof(T));
  return values;
}

inline Tensor floats(const Shape& shape, const std::vector<float>& values) {
  return Tensor::from<float>(shape, values);
}

// Rows [first, first + count) of axis 0 of a tensor, as a new tensor with that axis `count` long.
inline Tensor slice0(const Tensor& t, std::int64_t first, std::int64_t count) {
  std::vector<std::int64_t> dims = t.shape().dims();
  const std::int64_t inner = t.numel() / dims[0];
  dims[0] = count;
  const auto values = t.values<float>();
  return Tensor::from<float>(
      Shape(dims), std::vector<float>(values.begin() + first * inner, values.begin() + (first + count) * inner));
}

inline std::vector<double> doubles(const std::vector<float>& values) { return {values.begin(), values.end()}; }

// Y [T, B, H] of the last layer and the per-layer final states [layers, B, H].
struct RecurrentReference {
  std::vector<float> y, y_h, y_c;
};

inline Outputs run_on_executor(const Model& model, std::vector<Tensor> inputs) {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  Executor executor(options);
  executor.load(model);
  return executor.submit(model.name, std::move(inputs)).get();
}

// The CellStack as ONNX LSTM/GRU nodes, one per layer, each layer's Y (squeezed of its
// directions axis) feeding the next, run by the Executor on the CPU.
inline RecurrentReference executor_recurrent(const CellStack& cells, const Tensor& x,
                                             const std::optional<std::vector<std::int32_t>>& lengths,
                                             const Tensor* initial_h, const Tensor* initial_c) {
  const std::int64_t steps = x.shape()[0], batch = x.shape()[1], hidden = cells.hidden_size;
  const std::int64_t gates = gate_count(cells.type) * hidden;
  const bool lstm = cells.type == CellType::lstm;
  ModelBuilder mb("recurrent_reference");
  std::string layer_input = mb.input("x", DType::f32, x.shape());
  const std::string axes = mb.constant("axes", Tensor::from<std::int64_t>(Shape{1}, {1}));
  const std::string lens =
      lengths ? mb.constant("lengths", Tensor::from<std::int32_t>(Shape{batch}, *lengths)) : std::string();
  std::vector<std::string> finals_h, finals_c;
  for (std::size_t l = 0; l < cells.layers.size(); ++l) {
    const CellLayer& layer = cells.layers[l];
    const std::string tag = std::to_string(l);
    const std::int64_t input = layer.w.shape()[1];
    const std::string w = mb.constant("w" + tag, layer.w.reshaped(Shape{1, gates, input}));
    const std::string r = mb.constant("r" + tag, layer.r.reshaped(Shape{1, gates, hidden}));
    const std::string b = layer.b.bytes() ? mb.constant("b" + tag, layer.b.reshaped(Shape{1, 2 * gates})) : "";
    const auto state = [&](const Tensor* all, const char* name) {
      return all ? mb.constant(name + tag, slice0(*all, static_cast<std::int64_t>(l), 1)) : std::string();
    };
    std::vector<std::string> inputs{layer_input, w, r, b, lens, state(initial_h, "h0_")};
    if (lstm) inputs.push_back(state(initial_c, "c0_"));
    Attributes attrs{{"hidden_size", hidden}};
    if (!lstm) attrs.set("linear_before_reset", std::int64_t{cells.linear_before_reset ? 1 : 0});
    const auto outs = mb.node(lstm ? "LSTM" : "GRU", inputs, attrs, lstm ? 3 : 2, (lstm ? "lstm" : "gru") + tag);
    layer_input = mb.op("Squeeze", {outs[0], axes});
    finals_h.push_back(outs[1]);
    if (lstm) finals_c.push_back(outs[2]);
  }
  mb.output(layer_input);
  for (const auto& h : finals_h) mb.output(h);
  for (const auto& c : finals_c) mb.output(c);
  const Outputs outputs = run_on_executor(mb.build(), {x});

  RecurrentReference ref;
  const auto append = [](std::vector<float>& to, const Tensor& t) {
    const auto v = t.values<float>();
    to.insert(to.end(), v.begin(), v.end());
  };
  append(ref.y, outputs[0]);
  const std::size_t layers = cells.layers.size();
  for (std::size_t l = 0; l < layers; ++l) append(ref.y_h, outputs[1 + l]);
  if (lstm)
    for (std::size_t l = 0; l < layers; ++l) append(ref.y_c, outputs[1 + layers + l]);
  EXPECT_EQ(ref.y.size(), static_cast<std::size_t>(steps * batch * hidden));
  return ref;
}

// x after every block of `spec` up to `count`, as ONNX ops: LayerNormalization, MatMul with the
// transposed weights, Add, Relu, Add, and the residual Add.
inline std::vector<float> executor_encoder(const decode::EncoderStackSpec& spec, const Tensor& x, int count) {
  if (count == 0) {
    const auto v = x.values<float>();
    return {v.begin(), v.end()};
  }
  ModelBuilder mb("encoder_reference");
  std::string value = mb.input("x", DType::f32, x.shape());
  const auto transposed = [](const Tensor& w) {
    const std::int64_t rows = w.shape()[0], cols = w.shape()[1];
    Tensor t(DType::f32, Shape{cols, rows});
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j) t.values<float>()[j * rows + i] = w.values<float>()[i * cols + j];
    return t;
  };
  for (int k = 0; k < count; ++k) {
    const decode::EncoderBlock& block = spec.blocks[static_cast<std::size_t>(k)];
    const std::string tag = std::to_string(k);
    const std::string scale = mb.constant("scale" + tag, block.norm_scale);
    const std::string shift = mb.constant("shift" + tag, block.norm_bias);
    const std::string normalized = mb.op("LayerNormalization", {value, scale, shift},
                                         Attributes{{"axis", std::int64_t{-1}}, {"epsilon", spec.epsilon}});
    const std::string w1 = mb.constant("w1t" + tag, transposed(block.w1));
    const std::string b1 = mb.constant("b1" + tag, block.b1);
    const std::string hidden = mb.op("Relu", {mb.op("Add", {mb.op("MatMul", {normalized, w1}), b1})});
    const std::string w2 = mb.constant("w2t" + tag, transposed(block.w2));
    const std::string b2 = mb.constant("b2" + tag, block.b2);
    value = mb.op("Add", {value, mb.op("Add", {mb.op("MatMul", {hidden, w2}), b2})});
  }
  mb.output(value);
  const Outputs outputs = run_on_executor(mb.build(), {x});
  const auto v = outputs[0].values<float>();
  return {v.begin(), v.end()};
}

// A seeded encoder stack with every tensor present.
inline decode::EncoderStackSpec random_encoder(std::int64_t width, std::int64_t ff, int blocks, std::uint32_t seed) {
  decode::EncoderStackSpec spec;
  spec.width = width;
  spec.epsilon = 1e-5f;
  for (int k = 0; k < blocks; ++k) {
    const std::uint32_t s = seed + 10u * static_cast<std::uint32_t>(k);
    decode::EncoderBlock block;
    block.norm_scale = testing::random_tensor(Shape{width}, s, 0.5f, 1.5f);
    block.norm_bias = testing::random_tensor(Shape{width}, s + 1, -0.2f, 0.2f);
    block.w1 = testing::random_tensor(Shape{ff, width}, s + 2, -0.3f, 0.3f);
    block.b1 = testing::random_tensor(Shape{ff}, s + 3, -0.1f, 0.1f);
    block.w2 = testing::random_tensor(Shape{width, ff}, s + 4, -0.3f, 0.3f);
    block.b2 = testing::random_tensor(Shape{width}, s + 5, -0.1f, 0.1f);
    spec.blocks.push_back(std::move(block));
  }
  return spec;
}

// The expected [steps, batch] tokens from per-row sequences, -1 after each.
inline std::vector<std::int32_t> token_grid(const std::vector<std::vector<std::int32_t>>& rows, int steps) {
  const int batch = static_cast<int>(rows.size());
  std::vector<std::int32_t> grid(static_cast<std::size_t>(steps * batch), -1);
  for (int b = 0; b < batch; ++b)
    for (std::size_t t = 0; t < rows[b].size(); ++t) grid[t * batch + b] = rows[b][t];
  return grid;
}

// Vocabulary of 6, one-hot embeddings, one LSTM layer whose h peaks at the current token, and a
// projection that maps token u to u + 1 (mod 6): from token u the decoder emits u+1, u+2, ...
// until the end token. The logit margins are wide, so f16 storage gives the same tokens.
inline decode::GreedySpec counting_model(std::int32_t end_token) {
  constexpr std::int64_t V = 6;
  decode::GreedySpec spec;
  spec.cells.type = CellType::lstm;
  spec.cells.input_size = V;
  spec.cells.hidden_size = V;
  Tensor embedding(DType::f32, Shape{V, V});
  for (std::int64_t v = 0; v < V; ++v) embedding.values<float>()[v * V + v] = 1.0f;
  CellLayer layer;
  layer.w = Tensor(DType::f32, Shape{4 * V, V});
  layer.r = Tensor(DType::f32, Shape{4 * V, V});
  layer.b = Tensor(DType::f32, Shape{8 * V});
  auto w = layer.w.values<float>();
  auto b = layer.b.values<float>();
  for (std::int64_t j = 0; j < V; ++j) {
    w[(3 * V + j) * V + j] = 3.0f;  // candidate: tanh(3) at the token, 0 elsewhere
    b[j] = 10.0f;                   // input gate open
    b[V + j] = 10.0f;               // output gate open
    b[2 * V + j] = -10.0f;          // forget gate shut: the state follows the token alone
  }
  spec.cells.layers.push_back(layer);
  Tensor projection(DType::f32, Shape{V, V});
  for (std::int64_t u = 0; u < V; ++u) projection.values<float>()[((u + 1) % V) * V + u] = 1.0f;
  spec.embedding = embedding;
  spec.projection = projection;
  spec.end_token = end_token;
  return spec;
}

}  // namespace loom::decode_testing
