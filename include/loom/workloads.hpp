// The built-in default workload: three models built in code with seeded random weights, standing
// for compute-bound (CNN), mixed (encoder) and memory-bound (LSTM) work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/model.hpp"

namespace loom::workloads {

// small suits a CPU run (milliseconds per request); large loads a GPU.
enum class Size { small, large };
Size size_from_name(const std::string& name);  // "small" | "large"; throws Error(invalid_argument)
const char* size_name(Size size) noexcept;

// ResNet-style CNN: conv stem, residual basic blocks with BatchNorm over four stages, global
// average pool, classifier. Input "image" [batch, 3, H, W] f32; output logits [batch, 1000].
Model resnet_cnn(std::int64_t batch, Size size = Size::small, std::uint64_t seed = 1);
// BERT-style encoder: token + position embeddings, LayerNorm, `layers` blocks of multi-head
// self-attention and a GELU feed-forward. Input "ids" [batch, seq] i64; output [batch, seq, hidden].
Model bert_encoder(std::int64_t batch, Size size = Size::small, std::uint64_t seed = 2);
// LSTM sequence model: embedding, a two-layer LSTM over the sequence, classifier on the last hidden
// state. Input "ids" [batch, seq] i64; output [batch, vocab].
Model lstm_seq(std::int64_t batch, Size size = Size::small, std::uint64_t seed = 3);

// The three above, in that order, named "resnet", "bert", "lstm".
std::vector<Model> default_workload(std::int64_t batch, Size size);
// One of them by its name; throws Error(unknown_model) listing the names.
Model default_model(const std::string& name, std::int64_t batch, Size size);

}  // namespace loom::workloads
