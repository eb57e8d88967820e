// The plain types of the recurrent decoders (loom/decode.hpp): the cells and specs a decoder is
// made of, the loop methods and one run's arguments. They sit below the DecodeEngine because the
// engine and every backend's decoder loops share them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "loom/tensor.hpp"

namespace loom::decode {

enum class CellType { lstm, gru };
enum class DecodeMethod { automatic, persistent, graph, host_loop };

std::string_view method_name(DecodeMethod method) noexcept;  // "automatic", "persistent", ...
// Throws Error(invalid_argument) listing the names for an unknown one.
DecodeMethod method_from_name(std::string_view name);

// One layer of cells, one direction, in ONNX layout (f32 host tensors; the engine converts to the
// decoder's dtype): LSTM gates in the order i, o, f, c; GRU gates z, r, h.
struct CellLayer {
  Tensor w;  // [gates * hidden, layer input]
  Tensor r;  // [gates * hidden, hidden]
  Tensor b;  // [2 * gates * hidden]: Wb then Rb; an empty Tensor means zeros
};

// Stacked layers: layer 0 reads the step's input, layer l > 0 reads h(t) of layer l - 1.
// Activations are ONNX's defaults (sigmoid, tanh, tanh); no peepholes, no clip.
struct CellStack {
  CellType type = CellType::lstm;
  std::int64_t input_size = 0;
  std::int64_t hidden_size = 0;
  std::vector<CellLayer> layers;     // at least one
  bool linear_before_reset = false;  // GRU only, as the ONNX attribute
};

// (a) Sequence in, hidden states out.
struct RecurrentSpec {
  CellStack cells;
};

// (b) Greedy autoregressive decoding.
struct GreedySpec {
  Tensor embedding;             // [vocab, cells.input_size]
  CellStack cells;              //
  Tensor projection;            // [vocab, cells.hidden_size]: logits = projection · h + bias
  Tensor projection_bias;       // [vocab], or empty for zeros
  std::int32_t end_token = -1;  // a row stops after emitting it; -1: rows run to the maximum length
};

// (c) A stack of pre-norm residual feed-forward blocks over rows of `width` values:
//   y = x + W2 · relu(W1 · layernorm(x) + b1) + b2     (layernorm with scale and bias, `epsilon`)
struct EncoderBlock {
  Tensor norm_scale, norm_bias;  // [width]
  Tensor w1, b1;                 // [ff, width], [ff]
  Tensor w2, b2;                 // [width, ff], [width]
};
struct EncoderStackSpec {
  std::int64_t width = 0;
  std::vector<EncoderBlock> blocks;  // at least one; all with the same ff
  float epsilon = 1e-5f;
};

class PauseFlag;  // loom/decode.hpp

// One sample. Every pointer is device memory of the engine's device (DeviceBuffer::data()), laid
// out densely, floats in the decoder's dtype, tokens and lengths int32.
struct DecodeArgs {
  int batch = 1;  // 1 to DecoderOptions::max_batch
  // The loop count: recurrent, the sequence length T (with lengths or mask: the longest a row may
  // be); greedy, the maximum number of tokens per row; encoder, the blocks to run (0 = all).
  int steps = 0;
  // recurrent: [T, batch, input_size]; greedy: int32 [batch], the first input token of each row;
  // encoder: [batch, width].
  const void* input = nullptr;
  // recurrent: [T, batch, hidden] h(t) of the last layer (zeros at and after a row's length);
  // greedy: int32 [steps, batch], the emitted tokens (-1 after a row has stopped);
  // encoder: [batch, width] (may equal input: the blocks then work in place).
  void* output = nullptr;
  // recurrent only, at most one of the two: per-row lengths, int32 [batch], each in [0, steps];
  // or a mask, uint8 [T, batch], 1 while the row is valid (a prefix of ones). The device derives
  // each row's length and the loop count (the longest row) from them.
  const std::int32_t* lengths = nullptr;
  const std::uint8_t* mask = nullptr;
  // greedy only: int32 [batch], the tokens each row emitted (its end token included). Optional.
  std::int32_t* out_lengths = nullptr;
  // LSTM/GRU state, [layers, batch, hidden] each: initial (nullptr = zeros) and final (h at each
  // row's last valid step; optional unless `pause` is given). c is LSTM only.
  const void* initial_h = nullptr;
  const void* initial_c = nullptr;
  void* final_h = nullptr;
  void* final_c = nullptr;
  // Preemption (recurrent and encoder): with a flag, the loop stops at the first step boundary at
  // which the flag is set, leaving its state in final_h/final_c (encoder: in output) and
  // reporting DecodeResult::paused and next_step. Resume with start_step = next_step, the saved
  // state as initial_h/initial_c (encoder: output as input) and the same other arguments: the
  // result is bit-identical to an uninterrupted run.
  const PauseFlag* pause = nullptr;
  int start_step = 0;
};

}  // namespace loom::decode
