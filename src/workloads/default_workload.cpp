// The default workload's three models, built with ModelBuilder and seeded weights.
#include <cmath>

#include "loom/workloads.hpp"

namespace loom::workloads {

Size size_from_name(const std::string& name) {
  if (name == "small") return Size::small;
  if (name == "large") return Size::large;
  throw Error(ErrorCode::invalid_argument, "unknown workload size '" + name + "' (expected small or large)");
}

const char* size_name(Size size) noexcept { return size == Size::small ? "small" : "large"; }

namespace {
void check_batch(std::int64_t batch) {
  if (batch < 1) throw Error(ErrorCode::invalid_argument, "batch must be at least 1, got " + std::to_string(batch));
}

std::string basic_block(ModelBuilder& b, const std::string& x, std::int64_t in_ch, std::int64_t out_ch,
                        std::int64_t stride) {
  auto y = b.relu(b.batch_norm(b.conv2d(x, in_ch, out_ch, 3, stride, 1, false), out_ch));
  y = b.batch_norm(b.conv2d(y, out_ch, out_ch, 3, 1, 1, false), out_ch);
  std::string shortcut = x;
  if (stride != 1 || in_ch != out_ch) shortcut = b.batch_norm(b.conv2d(x, in_ch, out_ch, 1, stride, 0, false), out_ch);
  return b.relu(b.add(y, shortcut));
}
}  // namespace

Model resnet_cnn(std::int64_t batch, Size size, std::uint64_t seed) {
  check_batch(batch);
  ModelBuilder b("resnet", seed);
  const bool large = size == Size::large;
  // large: ResNet-18 at 224x224 (1.8 GFLOP per image); small: a 4-stage net at 32x32 for CPUs.
  const std::int64_t resolution = large ? 224 : 32;
  const std::vector<std::int64_t> widths =
      large ? std::vector<std::int64_t>{64, 128, 256, 512} : std::vector<std::int64_t>{16, 32, 64, 128};
  const int blocks_per_stage = large ? 2 : 1;
  auto x = b.input("image", DType::f32, Shape{batch, 3, resolution, resolution});
  if (large) {
    x = b.relu(b.batch_norm(b.conv2d(x, 3, widths[0], 7, 2, 3, false), widths[0]));
    x = b.op("MaxPool", {x},
             {{"kernel_shape", std::vector<std::int64_t>{3, 3}},
              {"strides", std::vector<std::int64_t>{2, 2}},
              {"pads", std::vector<std::int64_t>{1, 1, 1, 1}}});
  } else {
    x = b.relu(b.batch_norm(b.conv2d(x, 3, widths[0], 3, 1, 1, false), widths[0]));
  }
  std::int64_t channels = widths[0];
  for (std::size_t stage = 0; stage < widths.size(); ++stage)
    for (int block = 0; block < blocks_per_stage; ++block) {
      const std::int64_t stride = (stage > 0 && block == 0) ? 2 : 1;
      x = basic_block(b, x, channels, widths[stage], stride);
      channels = widths[stage];
    }
  x = b.op("Flatten", {b.op("GlobalAveragePool", {x})}, {{"axis", std::int64_t{1}}});
  const float bound = 1.0f / std::sqrt(static_cast<float>(channels));
  const auto w = b.random_weight("fc.weight", Shape{1000, channels}, bound);
  const auto bias = b.random_weight("fc.bias", Shape{1000}, bound);
  b.output(b.op("Gemm", {x, w, bias}, {{"transB", std::int64_t{1}}}));
  return b.build();
}

Model bert_encoder(std::int64_t batch, Size size, std::uint64_t seed) {
  check_batch(batch);
  ModelBuilder b("bert", seed);
  const bool large = size == Size::large;
  // large: BERT-base widths with 4 layers at sequence 128; small: a narrow 2-layer encoder.
  const std::int64_t vocab = large ? 30522 : 1000, seq = large ? 128 : 32, hidden = large ? 768 : 128;
  const std::int64_t heads = large ? 12 : 4, ffn = 4 * hidden, layers = large ? 4 : 2;
  const std::int64_t head_dim = hidden / heads;
  auto ids = b.input("ids", DType::i64, Shape{batch, seq});
  b.metadata("input_range:ids", "0," + std::to_string(vocab));
  const auto tok = b.random_weight("embeddings.token", Shape{vocab, hidden}, 0.5f);
  const auto pos = b.random_weight("embeddings.position", Shape{seq, hidden}, 0.5f);
  auto x = b.layer_norm(b.add(b.op("Gather", {tok, ids}), pos), hidden);
  const auto scale =
      b.constant("attention.scale", Tensor::from<float>(Shape{}, {1.0f / std::sqrt(static_cast<float>(head_dim))}));
  for (std::int64_t layer = 0; layer < layers; ++layer) {
    auto heads_of = [&](const std::string& v, const std::vector<std::int64_t>& perm) {
      return b.transpose(b.reshape(v, {batch, seq, heads, head_dim}), perm);
    };
    const auto q = heads_of(b.linear(x, hidden, hidden), {0, 2, 1, 3});  // [B, h, S, d]
    const auto k = heads_of(b.linear(x, hidden, hidden), {0, 2, 3, 1});  // [B, h, d, S]
    const auto v = heads_of(b.linear(x, hidden, hidden), {0, 2, 1, 3});  // [B, h, S, d]
    const auto probs = b.op("Softmax", {b.op("Mul", {b.op("MatMul", {q, k}), scale})}, {{"axis", std::int64_t{-1}}});
    auto context = b.reshape(b.transpose(b.op("MatMul", {probs, v}), {0, 2, 1, 3}), {batch, seq, hidden});
    x = b.layer_norm(b.add(b.linear(context, hidden, hidden), x), hidden);
    const auto inner = b.gelu(b.linear(x, hidden, ffn));
    x = b.layer_norm(b.add(b.linear(inner, ffn, hidden), x), hidden);
  }
  b.output(x);
  return b.build();
}

Model lstm_seq(std::int64_t batch, Size size, std::uint64_t seed) {
  check_batch(batch);
  ModelBuilder b("lstm", seed);
  const bool large = size == Size::large;
  // large: hidden 1024, two layers: every time step streams ~58 MB of recurrent weights.
  const std::int64_t vocab = large ? 10000 : 1000, seq = large ? 64 : 32, embed = large ? 512 : 128;
  const std::int64_t hidden = large ? 1024 : 256;
  auto ids = b.input("ids", DType::i64, Shape{batch, seq});
  b.metadata("input_range:ids", "0," + std::to_string(vocab));
  const auto table = b.random_weight("embedding", Shape{vocab, embed}, 0.5f);
  auto x = b.transpose(b.op("Gather", {table, ids}), {1, 0, 2});  // [T, B, E]
  std::string last_h;
  std::int64_t input = embed;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string name = "lstm" + std::to_string(layer);
    const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
    const auto w = b.random_weight(name + ".W", Shape{1, 4 * hidden, input}, bound);
    const auto r = b.random_weight(name + ".R", Shape{1, 4 * hidden, hidden}, bound);
    const auto bias = b.random_weight(name + ".B", Shape{1, 8 * hidden}, bound);
    const auto outs = b.node("LSTM", {x, w, r, bias}, {{"hidden_size", hidden}}, 3, name);
    x = b.reshape(outs[0], {seq, batch, hidden});  // Y [T, 1, B, H] -> [T, B, H]
    last_h = outs[1];
    input = hidden;
  }
  const auto h = b.reshape(last_h, {batch, hidden});
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  const auto w = b.random_weight("classifier.weight", Shape{hidden, vocab}, bound);
  const auto bias = b.random_weight("classifier.bias", Shape{vocab}, bound);
  b.output(b.op("Gemm", {h, w, bias}));
  return b.build();
}

std::vector<Model> default_workload(std::int64_t batch, Size size) {
  return {resnet_cnn(batch, size), bert_encoder(batch, size), lstm_seq(batch, size)};
}

Model default_model(const std::string& name, std::int64_t batch, Size size) {
  if (name == "resnet") return resnet_cnn(batch, size);
  if (name == "bert") return bert_encoder(batch, size);
  if (name == "lstm") return lstm_seq(batch, size);
  throw Error(ErrorCode::unknown_model, "no built-in model named '" + name + "' (known: resnet, bert, lstm)");
}

}  // namespace loom::workloads
