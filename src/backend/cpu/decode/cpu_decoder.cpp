// The CPU decoders: the reference semantics of the three decoder kinds in f32 (docs/decode.md).
// The CUDA decoders implement the same loops; every method runs the one loop written here.
//
// Products are computed weight row by weight row, each row against every live batch row, so a
// step streams the weights once whatever the batch. Dot products accumulate in float in a fixed
// order, so a run is deterministic and a paused and resumed run is bit-identical to an
// uninterrupted one.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <span>
#include <string>

#include "backend/cpu/activation_math.hpp"
#include "backend/cpu/target_clones.hpp"
#include "backend/decoder.hpp"

namespace loom::backend::cpu::decoders {
namespace {

using decode::CellLayer;
using decode::CellStack;
using decode::CellType;
using decode::DecodeArgs;
using decode::DecodeMethod;
using decode::EncoderBlock;

constexpr int kMaxBatch = 64;  // DecoderOptions::max_batch's upper bound
// Per batch row: a pointer to the row's input for a product, nullptr for a row that sits out.
using RowPointers = std::array<const float*, kMaxBatch>;

// The dot product is also built for AVX2+FMA and picked at load time (LOOM_CPU_CLONES, as the CPU
// GEMM's tile).

// a · b over n floats. 32 interleaved partial sums (four AVX registers, enough independent chains
// to hide the FMA latency) let the compiler vectorise without reordering anything itself; the
// order (partials, then the tail, then a pairwise reduction) is fixed, so the result depends only
// on the inputs.
LOOM_CPU_CLONES
float dot(const float* __restrict a, const float* __restrict b, std::int64_t n) {
  constexpr int kLanes = 32;
  float partial[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 32
    for (int k = 0; k < kLanes; ++k) partial[k] += a[i + k] * b[i + k];
  }
  for (int k = 0; i < n; ++i, ++k) partial[k] += a[i] * b[i];
  for (int width = kLanes / 2; width > 0; width /= 2)
    for (int k = 0; k < width; ++k) partial[k] += partial[k + width];
  return partial[0];
}

// out[b * out_stride + g] = weights[g] · rows[b] for the `outputs` rows of `weights` ([outputs,
// inputs], row-major) and every batch row b with rows[b] != nullptr.
void project(const float* weights, std::int64_t outputs, std::int64_t inputs, const RowPointers& rows, int batch,
             float* out, std::int64_t out_stride) {
  for (std::int64_t g = 0; g < outputs; ++g) {
    const float* w = weights + g * inputs;
    for (int b = 0; b < batch; ++b)
      if (rows[b]) out[b * out_stride + g] = dot(w, rows[b], inputs);
  }
}

// Hands out 64-byte aligned arrays from the engine's scratch; with a null base it only measures,
// so scratch_bytes() and launch() share one layout.
class ScratchCarver {
 public:
  explicit ScratchCarver(void* base) : base_(static_cast<std::byte*>(base)) {}
  template <class T>
  T* take(std::int64_t count) {
    used_ = (used_ + 63) / 64 * 64;
    T* at = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
    used_ += static_cast<std::size_t>(count) * sizeof(T);
    return at;
  }
  std::size_t used() const { return used_; }

 private:
  std::byte* base_;
  std::size_t used_ = 0;
};

// The bytes a layout takes: `carve` run against a measuring carver.
template <class Carve>
std::size_t measured_scratch(Carve&& carve) {
  ScratchCarver measure(nullptr);
  carve(measure);
  return measure.used();
}

// Runs a CellStack one step at a time for a batch: ONNX LSTM (gates i, o, f, c) and GRU (gates
// z, r, h) with the default activations, layer l > 0 reading h(t) of layer l - 1.
class CellRunner {
 public:
  explicit CellRunner(const CellStack& cells) : cells_(cells) {}

  std::int64_t gates() const { return cells_.type == CellType::lstm ? 4 : 3; }
  std::int64_t hidden() const { return cells_.hidden_size; }
  std::int64_t layers() const { return static_cast<std::int64_t>(cells_.layers.size()); }
  std::int64_t state_floats(int batch) const { return layers() * batch * hidden(); }

  // The step's buffers, carved from scratch: the states h and c ([layers, batch, hidden]) and the
  // gate pre-activations of the input (xg) and of the state (hg), [batch, gates * hidden] each.
  struct Buffers {
    float* h = nullptr;
    float* c = nullptr;  // LSTM only
    float* xg = nullptr;
    float* hg = nullptr;
    float* reset_h = nullptr;  // GRU: r ⊙ h, [batch, hidden]
  };
  Buffers carve(ScratchCarver& scratch, int batch) const {
    Buffers buffers;
    buffers.h = scratch.take<float>(state_floats(batch));
    if (cells_.type == CellType::lstm) buffers.c = scratch.take<float>(state_floats(batch));
    buffers.xg = scratch.take<float>(batch * gates() * hidden());
    buffers.hg = scratch.take<float>(batch * gates() * hidden());
    if (cells_.type == CellType::gru) buffers.reset_h = scratch.take<float>(batch * hidden());
    return buffers;
  }

  // The state from initial_h/initial_c, or zeros.
  void load_state(const Buffers& buffers, int batch, const void* initial_h, const void* initial_c) const {
    const std::size_t bytes = static_cast<std::size_t>(state_floats(batch)) * sizeof(float);
    if (initial_h)
      std::memcpy(buffers.h, initial_h, bytes);
    else
      std::memset(buffers.h, 0, bytes);
    if (!buffers.c) return;
    if (initial_c)
      std::memcpy(buffers.c, initial_c, bytes);
    else
      std::memset(buffers.c, 0, bytes);
  }

  void store_state(const Buffers& buffers, int batch, void* final_h, void* final_c) const {
    const std::size_t bytes = static_cast<std::size_t>(state_floats(batch)) * sizeof(float);
    if (final_h) std::memcpy(final_h, buffers.h, bytes);
    if (final_c && buffers.c) std::memcpy(final_c, buffers.c, bytes);
  }

  // One step of every layer for the rows with inputs[b] != nullptr; the other rows keep their
  // state untouched.
  void step(const Buffers& buffers, int batch, const RowPointers& inputs) const {
    RowPointers layer_inputs = inputs;
    for (std::int64_t l = 0; l < layers(); ++l) {
      float* h = buffers.h + l * batch * hidden();
      if (l > 0)
        for (int b = 0; b < batch; ++b)
          if (inputs[b]) layer_inputs[b] = buffers.h + ((l - 1) * batch + b) * hidden();
      const CellLayer& layer = cells_.layers[static_cast<std::size_t>(l)];
      if (cells_.type == CellType::lstm)
        lstm_layer(layer, buffers, batch, layer_inputs, h, buffers.c + l * batch * hidden());
      else
        gru_layer(layer, buffers, batch, layer_inputs, h);
    }
  }

  // The last layer's h of row b.
  const float* top_h(const Buffers& buffers, int batch, int b) const {
    return buffers.h + ((layers() - 1) * batch + b) * hidden();
  }

 private:
  std::int64_t layer_input_size(const CellLayer& layer) const { return layer.w.shape()[1]; }

  RowPointers state_rows(const float* h, int batch, const RowPointers& active) const {
    RowPointers rows{};
    for (int b = 0; b < batch; ++b) rows[b] = active[b] ? h + b * hidden() : nullptr;
    return rows;
  }

  void lstm_layer(const CellLayer& layer, const Buffers& buffers, int batch, const RowPointers& inputs, float* h,
                  float* c) const {
    const std::int64_t H = hidden(), G = 4 * H;
    project(layer.w.values<float>().data(), G, layer_input_size(layer), inputs, batch, buffers.xg, G);
    project(layer.r.values<float>().data(), G, H, state_rows(h, batch, inputs), batch, buffers.hg, G);
    const float* wb = layer.b.values<float>().data();
    const float* rb = wb + G;
    for (int b = 0; b < batch; ++b) {
      if (!inputs[b]) continue;
      const float* xg = buffers.xg + b * G;
      const float* hg = buffers.hg + b * G;
      const auto gate = [&](std::int64_t k) { return xg[k] + hg[k] + wb[k] + rb[k]; };
      float* hb = h + b * H;
      float* cb = c + b * H;
      for (std::int64_t j = 0; j < H; ++j) {
        const float input_gate = sigmoid(gate(j));
        const float output_gate = sigmoid(gate(H + j));
        const float forget_gate = sigmoid(gate(2 * H + j));
        const float candidate = std::tanh(gate(3 * H + j));
        cb[j] = forget_gate * cb[j] + input_gate * candidate;
        hb[j] = output_gate * std::tanh(cb[j]);
      }
    }
  }

  void gru_layer(const CellLayer& layer, const Buffers& buffers, int batch, const RowPointers& inputs, float* h) const {
    const std::int64_t H = hidden(), G = 3 * H;
    const float* r = layer.r.values<float>().data();
    project(layer.w.values<float>().data(), G, layer_input_size(layer), inputs, batch, buffers.xg, G);
    const RowPointers h_rows = state_rows(h, batch, inputs);
    const float* wb = layer.b.values<float>().data();
    const float* rb = wb + G;
    // z and r both read R·h; the candidate's recurrent product reads R_h·(r ⊙ h) unless
    // linear_before_reset, which applies r after the product: r ⊙ (R_h·h + Rb_h).
    project(r, cells_.linear_before_reset ? G : 2 * H, H, h_rows, batch, buffers.hg, G);
    if (!cells_.linear_before_reset) {
      RowPointers reset_rows{};
      for (int b = 0; b < batch; ++b) {
        if (!inputs[b]) continue;
        const float* xg = buffers.xg + b * G;
        const float* hg = buffers.hg + b * G;
        float* reset_h = buffers.reset_h + b * H;
        for (std::int64_t j = 0; j < H; ++j)
          reset_h[j] = sigmoid(xg[H + j] + hg[H + j] + wb[H + j] + rb[H + j]) * h[b * H + j];
        reset_rows[b] = reset_h;
      }
      project(r + 2 * H * H, H, H, reset_rows, batch, buffers.hg + 2 * H, G);
    }
    for (int b = 0; b < batch; ++b) {
      if (!inputs[b]) continue;
      const float* xg = buffers.xg + b * G;
      const float* hg = buffers.hg + b * G;
      float* hb = h + b * H;
      // Every candidate first, since the update below overwrites h, which the gates read. They go
      // where r ⊙ h was: the product above has consumed it.
      float* candidate = buffers.reset_h + b * H;
      for (std::int64_t j = 0; j < H; ++j) {
        const float reset_gate = sigmoid(xg[H + j] + hg[H + j] + wb[H + j] + rb[H + j]);
        const float recurrent =
            cells_.linear_before_reset ? reset_gate * (hg[2 * H + j] + rb[2 * H + j]) : hg[2 * H + j] + rb[2 * H + j];
        candidate[j] = std::tanh(xg[2 * H + j] + wb[2 * H + j] + recurrent);
      }
      for (std::int64_t j = 0; j < H; ++j) {
        const float update_gate = sigmoid(xg[j] + hg[j] + wb[j] + rb[j]);
        hb[j] = (1.0f - update_gate) * candidate[j] + update_gate * hb[j];
      }
    }
  }

  const CellStack& cells_;
};

class CpuDecoderBase : public DeviceDecoder {
 public:
  explicit CpuDecoderBase(DecoderProgram program) : program_(std::move(program)) {}
  std::vector<DecodeMethod> methods() const override {
    return {DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop};
  }
  DecodeMethod default_method() const override { return DecodeMethod::persistent; }
  bool weights_on_chip() const override { return false; }

 protected:
  static std::uint64_t bytes_of(const Tensor& t) { return t.bytes(); }
  static std::uint64_t cell_bytes(const CellStack& cells) {
    std::uint64_t bytes = 0;
    for (const CellLayer& layer : cells.layers) bytes += layer.w.bytes() + layer.r.bytes() + layer.b.bytes();
    return bytes;
  }
  DecoderProgram program_;
};

// (a) Sequence in, h(t) of the last layer out.
class CpuRecurrentDecoder final : public CpuDecoderBase {
 public:
  explicit CpuRecurrentDecoder(DecoderProgram program) : CpuDecoderBase(std::move(program)), cells_(program_.cells) {}

  std::uint64_t weight_bytes() const override { return cell_bytes(program_.cells); }
  std::uint64_t recurrent_weight_bytes() const override { return cell_bytes(program_.cells); }
  std::size_t scratch_bytes(int batch, int) const override {
    return measured_scratch([&](ScratchCarver& carver) { carve(carver, batch); });
  }

  void launch(const DecodeArgs& args, DecodeMethod, const volatile std::int32_t* pause_flag, void* scratch,
              DecoderRunStatus* status, Stream&) override {
    ScratchCarver carver(scratch);
    const auto [buffers, lengths] = carve(carver, args.batch);
    const int batch = args.batch, steps = args.steps;
    const std::int64_t H = cells_.hidden(), input_size = program_.cells.input_size;
    const int count = row_lengths(args, lengths);
    cells_.load_state(buffers, batch, args.initial_h, args.initial_c);

    const auto* x = static_cast<const float*>(args.input);
    auto* y = static_cast<float*>(args.output);
    // Slots at and past the loop count belong to no row: zeros, whichever call gets here.
    if (count < steps)
      std::fill(y + static_cast<std::int64_t>(count) * batch * H, y + static_cast<std::int64_t>(steps) * batch * H,
                0.0f);
    int steps_run = 0;
    bool paused = false;
    for (int t = args.start_step; t < count;) {
      RowPointers inputs{};
      for (int b = 0; b < batch; ++b)
        inputs[b] = t < lengths[b] ? x + (static_cast<std::int64_t>(t) * batch + b) * input_size : nullptr;
      cells_.step(buffers, batch, inputs);
      for (int b = 0; b < batch; ++b) {
        float* out = y + (static_cast<std::int64_t>(t) * batch + b) * H;
        if (inputs[b])
          std::memcpy(out, cells_.top_h(buffers, batch, b), static_cast<std::size_t>(H) * sizeof(float));
        else
          std::fill(out, out + H, 0.0f);
      }
      ++t;
      ++steps_run;
      // Checked after the step, so every call makes progress; never after the last one, where
      // there is nothing left to resume.
      if (t < count && pause_requested(pause_flag)) {
        paused = true;
        break;
      }
    }
    cells_.store_state(buffers, batch, args.final_h, args.final_c);
    status->steps_run = steps_run;
    status->paused = paused ? 1 : 0;
  }

 private:
  struct Layout {
    CellRunner::Buffers buffers;
    std::int32_t* lengths;
  };
  Layout carve(ScratchCarver& carver, int batch) const {
    Layout layout;
    layout.buffers = cells_.carve(carver, batch);
    layout.lengths = carver.take<std::int32_t>(batch);
    return layout;
  }

  // Each row's length (clamped to [0, steps]) from args.lengths or the mask's leading ones, or
  // steps for every row; returns the loop count, the longest row.
  static int row_lengths(const DecodeArgs& args, std::int32_t* lengths) {
    if (!args.lengths && !args.mask) {
      std::fill(lengths, lengths + args.batch, args.steps);
      return args.steps;
    }
    int longest = 0;
    for (int b = 0; b < args.batch; ++b) {
      int length = 0;
      if (args.lengths) {
        length = std::clamp(args.lengths[b], 0, args.steps);
      } else {
        while (length < args.steps && args.mask[static_cast<std::int64_t>(length) * args.batch + b] != 0) ++length;
      }
      lengths[b] = length;
      longest = std::max(longest, length);
    }
    return longest;
  }

  CellRunner cells_;
};

// (b) Token → embedding → cells → projection → argmax → the next token, per row until its end
// token or the maximum length.
class CpuGreedyDecoder final : public CpuDecoderBase {
 public:
  explicit CpuGreedyDecoder(DecoderProgram program) : CpuDecoderBase(std::move(program)), cells_(program_.cells) {}

  std::uint64_t weight_bytes() const override {
    return cell_bytes(program_.cells) + bytes_of(program_.embedding) + bytes_of(program_.projection) +
           bytes_of(program_.projection_bias);
  }
  // A step reads every cell weight and the projection; of the embedding only one row per batch row.
  std::uint64_t recurrent_weight_bytes() const override {
    return cell_bytes(program_.cells) + bytes_of(program_.projection) + bytes_of(program_.projection_bias);
  }
  std::size_t scratch_bytes(int batch, int) const override {
    return measured_scratch([&](ScratchCarver& carver) { carve(carver, batch); });
  }

  void launch(const DecodeArgs& args, DecodeMethod, const volatile std::int32_t*, void* scratch,
              DecoderRunStatus* status, Stream&) override {
    ScratchCarver carver(scratch);
    const Layout layout = carve(carver, args.batch);
    const int batch = args.batch;
    const std::int64_t vocab = program_.vocab, input_size = program_.cells.input_size;
    const std::int64_t H = cells_.hidden();
    const float* embedding = program_.embedding.values<float>().data();
    const float* projection = program_.projection.values<float>().data();
    const float* bias = program_.projection_bias.values<float>().data();
    const auto* first_tokens = static_cast<const std::int32_t*>(args.input);
    auto* out = static_cast<std::int32_t*>(args.output);

    std::fill(out, out + static_cast<std::int64_t>(args.steps) * batch, -1);
    cells_.load_state(layout.buffers, batch, args.initial_h, args.initial_c);
    std::int32_t* token = layout.tokens;
    std::int32_t* emitted = layout.emitted;
    bool* live = layout.live;
    for (int b = 0; b < batch; ++b) {
      token[b] = first_tokens[b];
      emitted[b] = 0;
      live[b] = token[b] >= 0 && token[b] < vocab;  // an unknown start token ends the row at once
    }

    int steps_run = 0;
    for (int t = 0; t < args.steps && std::any_of(live, live + batch, [](bool l) { return l; }); ++t) {
      RowPointers inputs{};
      for (int b = 0; b < batch; ++b) inputs[b] = live[b] ? embedding + token[b] * input_size : nullptr;
      cells_.step(layout.buffers, batch, inputs);
      argmax_tokens(projection, bias, vocab, H, inputs, batch, layout);
      for (int b = 0; b < batch; ++b) {
        if (!live[b]) continue;
        out[static_cast<std::int64_t>(t) * batch + b] = layout.best_token[b];
        ++emitted[b];
        if (layout.best_token[b] == program_.end_token)
          live[b] = false;
        else
          token[b] = layout.best_token[b];
      }
      ++steps_run;
    }
    if (args.out_lengths) std::copy(emitted, emitted + batch, args.out_lengths);
    cells_.store_state(layout.buffers, batch, args.final_h, args.final_c);
    status->steps_run = steps_run;
    status->paused = 0;
  }

 private:
  struct Layout {
    CellRunner::Buffers buffers;
    std::int32_t* tokens;
    std::int32_t* emitted;
    bool* live;
    float* best_logit;
    std::int32_t* best_token;
  };
  Layout carve(ScratchCarver& carver, int batch) const {
    Layout layout;
    layout.buffers = cells_.carve(carver, batch);
    layout.tokens = carver.take<std::int32_t>(batch);
    layout.emitted = carver.take<std::int32_t>(batch);
    layout.live = carver.take<bool>(batch);
    layout.best_logit = carver.take<float>(batch);
    layout.best_token = carver.take<std::int32_t>(batch);
    return layout;
  }

  // For each live row, the token with the largest logit (projection · h + bias); ties go to the
  // smallest token.
  void argmax_tokens(const float* projection, const float* bias, std::int64_t vocab, std::int64_t H,
                     const RowPointers& live, int batch, const Layout& layout) const {
    for (std::int64_t v = 0; v < vocab; ++v) {
      for (int b = 0; b < batch; ++b) {
        if (!live[b]) continue;
        const float logit = dot(projection + v * H, cells_.top_h(layout.buffers, batch, b), H) + bias[v];
        if (v == 0 || logit > layout.best_logit[b]) {
          layout.best_logit[b] = logit;
          layout.best_token[b] = static_cast<std::int32_t>(v);
        }
      }
    }
  }

  CellRunner cells_;
};

// (c) Pre-norm residual feed-forward blocks: x ← x + W2 · relu(W1 · layernorm(x) + b1) + b2.
class CpuEncoderDecoder final : public CpuDecoderBase {
 public:
  explicit CpuEncoderDecoder(DecoderProgram program) : CpuDecoderBase(std::move(program)) {}

  std::uint64_t weight_bytes() const override {
    std::uint64_t bytes = 0;
    for (const EncoderBlock& block : program_.encoder.blocks) bytes += block_bytes(block);
    return bytes;
  }
  // A step is one block (all blocks have the same sizes).
  std::uint64_t recurrent_weight_bytes() const override { return block_bytes(program_.encoder.blocks.front()); }
  std::size_t scratch_bytes(int batch, int) const override {
    return measured_scratch([&](ScratchCarver& carver) { carve(carver, batch); });
  }

  void launch(const DecodeArgs& args, DecodeMethod, const volatile std::int32_t* pause_flag, void* scratch,
              DecoderRunStatus* status, Stream&) override {
    ScratchCarver carver(scratch);
    const Layout layout = carve(carver, args.batch);
    const int batch = args.batch;
    const int blocks = static_cast<int>(program_.encoder.blocks.size());
    const int count = args.steps == 0 ? blocks : args.steps;
    const std::int64_t width = program_.encoder.width;
    auto* x = static_cast<float*>(args.output);
    if (args.input != args.output) std::memmove(x, args.input, static_cast<std::size_t>(batch * width) * sizeof(float));

    int steps_run = 0;
    bool paused = false;
    for (int k = args.start_step; k < count;) {
      run_block(program_.encoder.blocks[static_cast<std::size_t>(k)], x, batch, layout);
      ++k;
      ++steps_run;
      if (k < count && pause_requested(pause_flag)) {
        paused = true;
        break;
      }
    }
    status->steps_run = steps_run;
    status->paused = paused ? 1 : 0;
  }

 private:
  struct Layout {
    float* normalized;  // [batch, width]
    float* hidden;      // [batch, ff]
  };
  Layout carve(ScratchCarver& carver, int batch) const {
    return {carver.take<float>(batch * program_.encoder.width), carver.take<float>(batch * program_.ff)};
  }
  static std::uint64_t block_bytes(const EncoderBlock& block) {
    return block.norm_scale.bytes() + block.norm_bias.bytes() + block.w1.bytes() + block.b1.bytes() + block.w2.bytes() +
           block.b2.bytes();
  }

  void run_block(const EncoderBlock& block, float* x, int batch, const Layout& layout) const {
    const std::int64_t width = program_.encoder.width, ff = program_.ff;
    const float* scale = block.norm_scale.values<float>().data();
    const float* shift = block.norm_bias.values<float>().data();
    RowPointers normalized_rows{}, hidden_rows{};
    for (int b = 0; b < batch; ++b) {
      layer_norm(x + b * width, width, program_.encoder.epsilon, scale, shift, layout.normalized + b * width);
      normalized_rows[b] = layout.normalized + b * width;
      hidden_rows[b] = layout.hidden + b * ff;
    }
    project(block.w1.values<float>().data(), ff, width, normalized_rows, batch, layout.hidden, ff);
    const float* b1 = block.b1.values<float>().data();
    for (int b = 0; b < batch; ++b)
      for (std::int64_t f = 0; f < ff; ++f) {
        float& value = layout.hidden[b * ff + f];
        value = std::max(value + b1[f], 0.0f);
      }
    // The residual goes straight into x: normalized holds the block's only other use of it.
    const float* w2 = block.w2.values<float>().data();
    const float* b2 = block.b2.values<float>().data();
    for (std::int64_t i = 0; i < width; ++i)
      for (int b = 0; b < batch; ++b) x[b * width + i] += dot(w2 + i * ff, hidden_rows[b], ff) + b2[i];
  }

  // ONNX LayerNormalization over one row: biased variance, then scale and bias.
  static void layer_norm(const float* x, std::int64_t width, float epsilon, const float* scale, const float* shift,
                         float* out) {
    float sum = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) sum += x[i];
    const float mean = sum / static_cast<float>(width);
    float squares = 0.0f;
    for (std::int64_t i = 0; i < width; ++i) squares += (x[i] - mean) * (x[i] - mean);
    const float inv_std = 1.0f / std::sqrt(squares / static_cast<float>(width) + epsilon);
    for (std::int64_t i = 0; i < width; ++i) out[i] = (x[i] - mean) * inv_std * scale[i] + shift[i];
  }
};

std::unique_ptr<DeviceDecoder> make_cpu_decoder(const DecoderProgram& program, Backend&) {
  if (program.dtype != DType::f32)
    throw Error(ErrorCode::unsupported, "decoder '" + program.name + "': dtype " +
                                            std::string(dtype_name(program.dtype)) +
                                            " runs on CUDA only; the CPU decoders compute in f32");
  switch (program.kind) {
    case DecoderProgram::Kind::recurrent:
      return std::make_unique<CpuRecurrentDecoder>(program);
    case DecoderProgram::Kind::greedy:
      return std::make_unique<CpuGreedyDecoder>(program);
    case DecoderProgram::Kind::encoder:
      return std::make_unique<CpuEncoderDecoder>(program);
  }
  throw Error(ErrorCode::internal, "decoder '" + program.name + "': unknown kind");
}

[[maybe_unused]] const bool registered = register_decoder_factory("cpu", make_cpu_decoder);
// The accelerator stand-in (backend/cpu/cpu_backend.cpp) runs the same loops.
[[maybe_unused]] const bool accel_registered = register_decoder_factory("cpu:accel", make_cpu_decoder);

}  // namespace
}  // namespace loom::backend::cpu::decoders
