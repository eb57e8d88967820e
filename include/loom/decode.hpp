// Recurrent decoders that loop on the device (MISSION.md §5): register a recurrent model once (its
// weights and its step program are uploaded once), then run samples by handing over device buffers
// and a loop count — or per-row lengths or a mask from which the device derives the count. The
// whole loop runs on the device: no host round trip per step, one completion per sample.
//
// Three kinds of decoder:
//   (a) RecurrentSpec — LSTM or GRU layers over an input sequence: c(t-1) lives in a scratch
//       buffer overwritten every step, h(t) of the last layer is written to the output;
//   (b) GreedySpec — autoregressive greedy decoding: token → embedding → cells → output
//       projection → argmax → the next token, each batch row stopping on the end token or the
//       maximum length, decided on the device;
//   (c) EncoderStackSpec — a stack of residual feed-forward blocks looped over its blocks, each
//       block's output the next block's input.
//
// Methods (DecodeMethod): on CUDA, `persistent` (one persistent kernel per sample whose thread
// blocks keep their share of the recurrent weights on chip where they fit and meet at each step
// through counters in global memory) and `graph` (a CUDA graph whose WHILE conditional node repeats
// the step kernels; a kernel sets the condition with cudaGraphSetConditional), plus `host_loop`,
// the baseline that launches one step, synchronises and decides on the host every step.
// `automatic` takes the fastest for the decoder (DecoderInfo::method says which). On the CPU every
// method runs the same reference loop, so results do not depend on the method there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
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

struct DecoderOptions {
  std::string name;          // for errors, traces and info(); default "decoder<N>"
  DType dtype = DType::f32;  // f32, or f16 (CUDA only): weights, inputs, outputs and h(t)
  int max_batch = 64;        // 1 to 64
  DecodeMethod method = DecodeMethod::automatic;
  int stream_priority = 0;  // of the decoder's own stream; higher = more urgent
  // CUDA: the most SMs the persistent kernel's grid may hold (one block each); 0 = no cap, and so
  // is the device's SM count or more. The cooperative launch keeps its SMs for the whole sample,
  // so other streams' kernels get only the SMs it leaves; a cap leaves SMs to them at the cost of
  // a slower loop (fewer blocks, each with more units; the recurrent weights may no longer fit on
  // chip). Graph and host_loop runs launch ordinary grids and ignore it.
  int persistent_grid_max_sms = 0;
};

// A device allocation owned by the engine that made it; freed on destruction. On the CPU backend
// the "device" is host memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  ~DeviceBuffer();
  void* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  template <class T>
  T* as() const noexcept {
    return static_cast<T*>(data_);
  }

 private:
  friend class DecodeEngine;
  std::function<void(void*)> free_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Asks a running loop to stop at its next step boundary (it checks the flag once per step).
// Lives in host memory the device can read (mapped pinned memory on CUDA).
class PauseFlag {
 public:
  PauseFlag(PauseFlag&&) noexcept;
  PauseFlag& operator=(PauseFlag&&) noexcept;
  ~PauseFlag();
  void request() noexcept;  // loops given this flag stop at their next step boundary
  void clear() noexcept;
  bool requested() const noexcept;
  struct Impl;

 private:
  friend class DecodeEngine;
  explicit PauseFlag(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

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

struct DecodeResult {
  int steps_run = 0;  // loop iterations this call ran (decided on the device)
  int next_step = 0;  // start_step + steps_run
  bool paused = false;
};

struct DecoderInfo {
  std::string name;
  std::string kind;                   // "recurrent", "greedy" or "encoder"
  DecodeMethod method;                // what automatic resolves to
  std::vector<DecodeMethod> methods;  // those this device offers for the decoder
  DType dtype = DType::f32;
  std::uint64_t weight_bytes = 0;            // on the device, uploaded once
  std::uint64_t recurrent_weight_bytes = 0;  // read every step (the weight-read bound's bytes)
  bool weights_on_chip = false;              // persistent: recurrent weights held in shared memory
};

using DecoderId = std::size_t;
using DecodeCallback = std::function<void(std::exception_ptr error, DecodeResult result)>;

class DecodeEngine {
 public:
  // device: "auto", "cpu", "cuda" or "cuda:N", as ExecutorOptions::device.
  explicit DecodeEngine(const std::string& device = "auto");
  ~DecodeEngine();  // waits for every run in flight
  DecodeEngine(const DecodeEngine&) = delete;
  DecodeEngine& operator=(const DecodeEngine&) = delete;

  std::string backend_name() const;  // "cpu" or "cuda"
  std::string device_name() const;

  // Checks the spec (shapes, sizes, dtypes; Error(invalid_argument) or Error(shape_mismatch)
  // naming the field), converts and uploads its weights once and prepares the step program.
  DecoderId add(const RecurrentSpec& spec, const DecoderOptions& options = {});
  DecoderId add(const GreedySpec& spec, const DecoderOptions& options = {});
  DecoderId add(const EncoderStackSpec& spec, const DecoderOptions& options = {});
  DecoderInfo info(DecoderId id) const;

  DeviceBuffer allocate(std::size_t bytes);
  void upload(DeviceBuffer& dst, const void* src, std::size_t bytes);    // blocking
  void download(void* dst, const DeviceBuffer& src, std::size_t bytes);  // blocking
  PauseFlag make_pause_flag();

  // Queues one sample on the decoder's stream. Arguments are checked here (Error naming the
  // field); device failures arrive through the future or callback. `method` overrides the
  // decoder's for this call (automatic: the decoder's own).
  std::future<DecodeResult> run(DecoderId id, const DecodeArgs& args, DecodeMethod method = DecodeMethod::automatic);
  void run(DecoderId id, const DecodeArgs& args, DecodeCallback done, DecodeMethod method = DecodeMethod::automatic);
  void synchronize();  // waits until every queued run has completed

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace loom::decode
