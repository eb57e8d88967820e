// The seam between the DecodeEngine (checks, buffers, queues, completions: decode_engine.cpp) and
// the code that runs a decoder's loop on one backend (cpu_decoder.cpp; cuda/ on CUDA builds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <variant>
#include <vector>

#include "backend/backend.hpp"
#include "loom/decode.hpp"

namespace loom::decode::detail {

// A decoder's spec after checking: sizes resolved, host weights in f32 (the engine keeps them for
// the CPU reference and converts to `dtype` for the device).
struct Program {
  enum class Kind { recurrent, greedy, encoder };
  Kind kind = Kind::recurrent;
  std::string name;
  DType dtype = DType::f32;
  int max_batch = 64;
  int persistent_grid_max_sms = 0;  // DecoderOptions::persistent_grid_max_sms
  // recurrent and greedy
  CellStack cells;
  // greedy
  Tensor embedding, projection, projection_bias;  // bias never empty here (zeros filled in)
  std::int32_t end_token = -1;
  std::int64_t vocab = 0;
  // encoder
  EncoderStackSpec encoder;  // every bias/scale filled in
  std::int64_t ff = 0;

  std::int64_t gates() const { return cells.type == CellType::lstm ? 4 : 3; }
};

// Where a run writes how it ended, in device memory the engine reads back after completion.
struct RunStatus {
  std::int32_t steps_run = 0;
  std::int32_t paused = 0;
};

// One registered decoder on one backend. Created once by make_device_decoder(); launch() is called
// once per sample, always from the engine's dispatch thread, on the decoder's own stream.
class DeviceDecoder {
 public:
  virtual ~DeviceDecoder() = default;
  // The methods this backend offers for the program, and what automatic resolves to.
  virtual std::vector<DecodeMethod> methods() const = 0;
  virtual DecodeMethod default_method() const = 0;
  virtual std::uint64_t weight_bytes() const = 0;
  virtual std::uint64_t recurrent_weight_bytes() const = 0;
  virtual bool weights_on_chip() const = 0;
  // Device scratch bytes one run at `batch` needs (states, gate buffers, counters, flags).
  virtual std::size_t scratch_bytes(int batch, int steps) const = 0;
  // Enqueues one sample on `stream`: the whole loop, nothing synchronous on the host except for
  // DecodeMethod::host_loop. `args` were checked by the engine (batch, steps, pointers present,
  // start_step in range; method is one of methods(), never automatic). `pause_flag` is the device
  // view of args.pause's flag (nullptr without one); the loop stops at the first step boundary at
  // which *pause_flag != 0. `status` is device memory for the outcome.
  virtual void launch(const DecodeArgs& args, DecodeMethod method, const volatile std::int32_t* pause_flag,
                      void* scratch, RunStatus* status, backend::Stream& stream) = 0;
};

// The decoder for `program` on `device` (which uploads the weights, converted to program.dtype).
// Throws Error(unsupported) for a dtype the backend does not run (f16 on the CPU).
std::unique_ptr<DeviceDecoder> make_device_decoder(const Program& program, backend::Backend& device);

std::unique_ptr<DeviceDecoder> make_cpu_decoder(const Program& program, backend::Backend& device);
#ifdef LOOM_HAVE_CUDA
std::unique_ptr<DeviceDecoder> make_cuda_decoder(const Program& program, backend::Backend& device);
#endif

// Host memory the device reads a pause flag from: a plain int on the CPU; mapped pinned memory on
// CUDA (device_view is its device address).
struct FlagMemory {
  std::int32_t* host = nullptr;
  const volatile std::int32_t* device_view = nullptr;
};
FlagMemory allocate_flag(backend::Backend& device);
void free_flag(backend::Backend& device, FlagMemory flag) noexcept;
#ifdef LOOM_HAVE_CUDA
FlagMemory allocate_cuda_flag(backend::Backend& device);
void free_cuda_flag(FlagMemory flag) noexcept;
#endif

}  // namespace loom::decode::detail

namespace loom::decode {
struct PauseFlag::Impl {
  backend::Backend* device = nullptr;
  detail::FlagMemory memory;
  // Keeps the backend alive while the flag is (a flag may outlive its engine).
  std::shared_ptr<backend::Backend> owner;
};
}  // namespace loom::decode
