// The seam between the DecodeEngine (checks, buffers, queues, completions: src/decode/) and the
// code that runs a decoder's loop on one backend (backend/cpu/decode/, backend/cuda/decode/): the
// checked program, the device decoder, and the registry of each backend's decoder factory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "loom/decode_types.hpp"
#include "loom/tensor.hpp"

namespace loom::backend {

// A decoder's spec after the engine's checks: sizes resolved, host weights in f32 (the engine
// keeps them for the CPU reference; a device decoder converts them to `dtype`).
struct DecoderProgram {
  enum class Kind { recurrent, greedy, encoder };
  Kind kind = Kind::recurrent;
  std::string name;
  DType dtype = DType::f32;
  int max_batch = 64;
  int persistent_grid_max_sms = 0;  // DecoderOptions::persistent_grid_max_sms
  // recurrent and greedy
  decode::CellStack cells;
  // greedy
  Tensor embedding, projection, projection_bias;  // bias never empty here (zeros filled in)
  std::int32_t end_token = -1;
  std::int64_t vocab = 0;
  // encoder
  decode::EncoderStackSpec encoder;  // every bias/scale filled in
  std::int64_t ff = 0;

  std::int64_t gates() const { return cells.type == decode::CellType::lstm ? 4 : 3; }
};

// Where a run writes how it ended, in device memory the engine reads back after completion.
struct DecoderRunStatus {
  std::int32_t steps_run = 0;
  std::int32_t paused = 0;
};

// One registered decoder on one backend, made by the backend's DecoderFactory. launch() is called
// once per sample, always from the engine's dispatch thread, on the decoder's own stream.
class DeviceDecoder {
 public:
  virtual ~DeviceDecoder() = default;
  // The methods this backend offers for the program, and what automatic resolves to.
  virtual std::vector<decode::DecodeMethod> methods() const = 0;
  virtual decode::DecodeMethod default_method() const = 0;
  virtual std::uint64_t weight_bytes() const = 0;
  virtual std::uint64_t recurrent_weight_bytes() const = 0;
  virtual bool weights_on_chip() const = 0;
  // Device scratch bytes one run at `batch` needs (states, gate buffers, counters, flags).
  virtual std::size_t scratch_bytes(int batch, int steps) const = 0;
  // Enqueues one sample on `stream`: the whole loop, nothing synchronous on the host except for
  // DecodeMethod::host_loop. `args` were checked by the engine (batch, steps, pointers present,
  // start_step in range; method is one of methods(), never automatic). `pause_flag` is the device
  // address of args.pause's flag (PauseFlag::device_address(), from Backend::create_pause_flag;
  // nullptr without one); the loop stops at the first step boundary at which it reads nonzero
  // (pause_requested()). `status` is device memory for the outcome.
  virtual void launch(const decode::DecodeArgs& args, decode::DecodeMethod method,
                      const volatile std::int32_t* pause_flag, void* scratch, DecoderRunStatus* status,
                      Stream& stream) = 0;
};

// Makes the decoder for `program` on `device`, uploading its weights (converted to program.dtype).
// Throws Error(unsupported) for a dtype the backend does not run (f16 on the CPU).
using DecoderFactory = std::unique_ptr<DeviceDecoder> (*)(const DecoderProgram& program, Backend& device);

// Registers `factory` as the decoders of the backend whose name() is `backend` ("cpu", "cuda").
// Called once per backend, at library load, from the backend's own decode files
// (backend/cpu/decode/cpu_decoder.cpp, backend/cuda/decode/cuda_decoder.cpp); returns true (for
// use as a static initializer). A null factory, or a second registration under one name, is
// refused at lookup: decoder_factory() then throws Error(internal) for that backend.
bool register_decoder_factory(std::string backend, DecoderFactory factory) noexcept;
// The backend names with a decoder factory, sorted.
std::vector<std::string> decoder_backends();
// The factory registered under `backend`. Throws Error(unsupported) naming the backend when none
// is (listing those that are), Error(internal) when it was registered twice.
DecoderFactory decoder_factory(const std::string& backend);

// The decoder for `program` on `device`, from decoder_factory(device.name()); a lookup's error
// names the decoder too.
std::unique_ptr<DeviceDecoder> make_device_decoder(const DecoderProgram& program, Backend& device);

}  // namespace loom::backend
