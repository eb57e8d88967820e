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
#include <vector>

#include "loom/decode_types.hpp"  // CellStack, the specs, DecodeMethod, DecodeArgs
#include "loom/tensor.hpp"

namespace loom::decode {

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
