// The DecodeEngine: checks specs and arguments, owns device buffers, pause flags and each
// decoder's stream, and runs samples through two threads — a dispatcher that launches each job on
// its decoder's stream in submission order, and a completer that waits for each job's event and
// completes its future or callback.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "backend/open_backend.hpp"
#include "backend/decoder.hpp"
#include "loom/decode.hpp"
#include "trace/nvtx.hpp"

namespace loom::decode {

// ---- DeviceBuffer and PauseFlag ----

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : free_(std::move(other.free_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ && free_) free_(data_);
    free_ = std::move(other.free_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ && free_) free_(data_);
}

// The backend's flag (Backend::create_pause_flag: memory the device reads while a loop runs).
struct PauseFlag::Impl {
  // Declared first, destroyed last: the flag goes back to a live backend even when the flag
  // outlives its engine.
  std::shared_ptr<backend::Backend> owner;
  std::unique_ptr<backend::PauseFlag> flag;
};

PauseFlag::PauseFlag(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PauseFlag::PauseFlag(PauseFlag&&) noexcept = default;
PauseFlag& PauseFlag::operator=(PauseFlag&&) noexcept = default;
PauseFlag::~PauseFlag() = default;

void PauseFlag::request() noexcept {
  if (impl_) impl_->flag->set();
}

void PauseFlag::clear() noexcept {
  if (impl_) impl_->flag->clear();
}

bool PauseFlag::requested() const noexcept { return impl_ && impl_->flag->is_set(); }

// ---- spec checks ----

namespace {

using backend::DecoderProgram;

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.rank(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool is_empty(const Tensor& t) { return t.bytes() == 0; }

// Throws naming `field` unless `t` is an f32 tensor of shape `expected`.
void require_tensor(const std::string& decoder, const std::string& field, const Tensor& t, const Shape& expected) {
  const std::string where = "decoder '" + decoder + "': " + field;
  if (is_empty(t))
    throw Error(ErrorCode::invalid_argument, where + " is missing (expected shape " + shape_text(expected) + ")");
  if (t.dtype() != DType::f32)
    throw Error(ErrorCode::invalid_argument,
                where + " has dtype " + std::string(dtype_name(t.dtype())) + ", expected f32 (the engine converts)");
  if (t.shape() != expected)
    throw Error(ErrorCode::shape_mismatch,
                where + " has shape " + shape_text(t.shape()) + ", expected " + shape_text(expected));
}

// As require_tensor, but an empty tensor becomes `fill` of shape `expected`.
Tensor tensor_or_fill(const std::string& decoder, const std::string& field, const Tensor& t, const Shape& expected,
                      float fill) {
  if (!is_empty(t)) {
    require_tensor(decoder, field, t, expected);
    return t;
  }
  Tensor filled(DType::f32, expected);
  std::ranges::fill(filled.values<float>(), fill);
  return filled;
}

void require(bool ok, ErrorCode code, const std::string& decoder, const std::string& what) {
  if (!ok) throw Error(code, "decoder '" + decoder + "': " + what);
}

// Checks a CellStack and returns it with every bias filled in.
CellStack checked_cells(const std::string& decoder, const CellStack& cells) {
  require(cells.type == CellType::lstm || cells.type == CellType::gru, ErrorCode::invalid_argument, decoder,
          "cells.type is neither lstm nor gru");
  require(cells.input_size > 0, ErrorCode::invalid_argument, decoder,
          "cells.input_size = " + std::to_string(cells.input_size) + " must be positive");
  require(cells.hidden_size >= 1 && cells.hidden_size <= 4096, ErrorCode::invalid_argument, decoder,
          "cells.hidden_size = " + std::to_string(cells.hidden_size) + " is outside [1, 4096]");
  require(!cells.layers.empty(), ErrorCode::invalid_argument, decoder, "cells.layers is empty (at least one layer)");
  require(!(cells.type == CellType::lstm && cells.linear_before_reset), ErrorCode::invalid_argument, decoder,
          "cells.linear_before_reset applies to GRU cells only");
  const std::int64_t gates = cells.type == CellType::lstm ? 4 : 3;
  const std::int64_t hidden = cells.hidden_size;
  CellStack out = cells;
  for (std::size_t l = 0; l < cells.layers.size(); ++l) {
    const std::string field = "cells.layers[" + std::to_string(l) + "]";
    const std::int64_t input = l == 0 ? cells.input_size : hidden;
    const CellLayer& layer = cells.layers[l];
    require_tensor(decoder, field + ".w", layer.w, Shape{gates * hidden, input});
    require_tensor(decoder, field + ".r", layer.r, Shape{gates * hidden, hidden});
    out.layers[l].b = tensor_or_fill(decoder, field + ".b", layer.b, Shape{2 * gates * hidden}, 0.0f);
  }
  return out;
}

void check_options(const std::string& decoder, const DecoderOptions& options) {
  require(options.max_batch >= 1 && options.max_batch <= 64, ErrorCode::invalid_argument, decoder,
          "options.max_batch = " + std::to_string(options.max_batch) + " is outside [1, 64]");
  require(options.persistent_grid_max_sms >= 0, ErrorCode::invalid_argument, decoder,
          "options.persistent_grid_max_sms = " + std::to_string(options.persistent_grid_max_sms) +
              " is negative (0 = no cap)");
  require(options.dtype == DType::f32 || options.dtype == DType::f16, ErrorCode::invalid_argument, decoder,
          "options.dtype " + std::string(dtype_name(options.dtype)) + " is not f32 or f16");
  require(options.method == DecodeMethod::automatic || options.method == DecodeMethod::persistent ||
              options.method == DecodeMethod::graph || options.method == DecodeMethod::host_loop,
          ErrorCode::invalid_argument, decoder, "options.method is not a DecodeMethod");
}

DecoderProgram base_program(DecoderProgram::Kind kind, const std::string& name, const DecoderOptions& options) {
  DecoderProgram program;
  program.kind = kind;
  program.name = name;
  program.dtype = options.dtype;
  program.max_batch = options.max_batch;
  program.persistent_grid_max_sms = options.persistent_grid_max_sms;
  return program;
}

DecoderProgram recurrent_program(const std::string& name, const RecurrentSpec& spec, const DecoderOptions& options) {
  DecoderProgram program = base_program(DecoderProgram::Kind::recurrent, name, options);
  program.cells = checked_cells(name, spec.cells);
  return program;
}

DecoderProgram greedy_program(const std::string& name, const GreedySpec& spec, const DecoderOptions& options) {
  DecoderProgram program = base_program(DecoderProgram::Kind::greedy, name, options);
  program.cells = checked_cells(name, spec.cells);
  require(!is_empty(spec.embedding) && spec.embedding.shape().rank() == 2, ErrorCode::shape_mismatch, name,
          "embedding has shape " + shape_text(spec.embedding.shape()) + ", expected [vocab, " +
              std::to_string(spec.cells.input_size) + "]");
  const std::int64_t vocab = spec.embedding.shape()[0];
  require(vocab > 0 && vocab <= std::numeric_limits<std::int32_t>::max(), ErrorCode::invalid_argument, name,
          "embedding has " + std::to_string(vocab) + " rows; the vocabulary must hold 1 to 2^31 - 1 tokens");
  require_tensor(name, "embedding", spec.embedding, Shape{vocab, spec.cells.input_size});
  require_tensor(name, "projection", spec.projection, Shape{vocab, spec.cells.hidden_size});
  program.vocab = vocab;
  program.embedding = spec.embedding;
  program.projection = spec.projection;
  program.projection_bias = tensor_or_fill(name, "projection_bias", spec.projection_bias, Shape{vocab}, 0.0f);
  require(spec.end_token >= -1 && spec.end_token < vocab, ErrorCode::invalid_argument, name,
          "end_token = " + std::to_string(spec.end_token) + " is outside [-1, " + std::to_string(vocab) + ")");
  program.end_token = spec.end_token;
  return program;
}

DecoderProgram encoder_program(const std::string& name, const EncoderStackSpec& spec, const DecoderOptions& options) {
  DecoderProgram program = base_program(DecoderProgram::Kind::encoder, name, options);
  const std::int64_t width = spec.width;
  require(width > 0, ErrorCode::invalid_argument, name, "width = " + std::to_string(width) + " must be positive");
  require(!spec.blocks.empty(), ErrorCode::invalid_argument, name, "blocks is empty (at least one block)");
  require(spec.blocks.size() <= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()),
          ErrorCode::invalid_argument, name, "too many blocks");
  require(std::isfinite(spec.epsilon) && spec.epsilon > 0, ErrorCode::invalid_argument, name,
          "epsilon = " + std::to_string(spec.epsilon) + " must be positive and finite");
  const Tensor& first_w1 = spec.blocks.front().w1;
  require(!is_empty(first_w1) && first_w1.shape().rank() == 2, ErrorCode::shape_mismatch, name,
          "blocks[0].w1 has shape " + shape_text(first_w1.shape()) + ", expected [ff, " + std::to_string(width) + "]");
  const std::int64_t ff = first_w1.shape()[0];
  require(ff > 0, ErrorCode::invalid_argument, name, "blocks[0].w1 has no rows (ff must be positive)");
  program.encoder.width = width;
  program.encoder.epsilon = spec.epsilon;
  program.ff = ff;
  for (std::size_t k = 0; k < spec.blocks.size(); ++k) {
    const std::string field = "blocks[" + std::to_string(k) + "]";
    const EncoderBlock& block = spec.blocks[k];
    // Every block has blocks[0]'s ff: the loop runs one program over all of them.
    require_tensor(name, field + ".w1", block.w1, Shape{ff, width});
    require_tensor(name, field + ".w2", block.w2, Shape{width, ff});
    EncoderBlock filled;
    filled.w1 = block.w1;
    filled.w2 = block.w2;
    filled.norm_scale = tensor_or_fill(name, field + ".norm_scale", block.norm_scale, Shape{width}, 1.0f);
    filled.norm_bias = tensor_or_fill(name, field + ".norm_bias", block.norm_bias, Shape{width}, 0.0f);
    filled.b1 = tensor_or_fill(name, field + ".b1", block.b1, Shape{ff}, 0.0f);
    filled.b2 = tensor_or_fill(name, field + ".b2", block.b2, Shape{width}, 0.0f);
    program.encoder.blocks.push_back(std::move(filled));
  }
  return program;
}

const char* kind_name(DecoderProgram::Kind kind) {
  switch (kind) {
    case DecoderProgram::Kind::recurrent:
      return "recurrent";
    case DecoderProgram::Kind::greedy:
      return "greedy";
    case DecoderProgram::Kind::encoder:
      return "encoder";
  }
  return "unknown";
}

std::string method_list(const std::vector<DecodeMethod>& methods) {
  std::string text;
  for (DecodeMethod method : methods) text += (text.empty() ? "" : ", ") + std::string(method_name(method));
  return text;
}

}  // namespace

// ---- the engine ----

struct DecodeEngine::Impl {
  // One registered decoder. Everything but `scratch` is fixed after add(); `scratch` belongs to
  // the dispatcher thread.
  struct Decoder {
    DecoderInfo info;
    DecoderProgram::Kind kind = DecoderProgram::Kind::recurrent;
    CellType cell = CellType::lstm;
    int max_batch = 64;
    int blocks = 0;
    std::unique_ptr<backend::DeviceDecoder> device;
    std::unique_ptr<backend::Stream> stream;
    // Reused run after run: work on one stream is ordered, so the next run cannot overtake it.
    void* scratch = nullptr;
    std::size_t scratch_bytes = 0;
  };

  // Where one run reports how it ended: written on the device, copied to pinned host memory.
  struct StatusSlot {
    backend::DecoderRunStatus* device = nullptr;
    backend::DecoderRunStatus* host = nullptr;
  };

  struct Job {
    Decoder* decoder = nullptr;
    DecodeArgs args;
    DecodeMethod method = DecodeMethod::persistent;
    const volatile std::int32_t* pause_flag = nullptr;
    DecodeCallback done;
    std::uint64_t nvtx_range = 0;  // the run's life in Nsight: from run() to its completion
    // Filled in by the dispatcher.
    StatusSlot status;
    std::unique_ptr<backend::Event> finished;
    std::exception_ptr error;
  };

  explicit Impl(const std::string& device) : backend(backend::open_backend(device)) {
    transfer_stream = backend->create_stream();
    dispatcher = std::thread([this] { dispatch_loop(); });
    completer = std::thread([this] { completion_loop(); });
  }

  ~Impl() {
    // Runs queued by callbacks count as pending too, so waiting for zero catches them all.
    wait_idle();
    {
      std::lock_guard lock(mutex);
      stopping = true;
    }
    dispatch_ready.notify_all();
    dispatcher.join();
    completer.join();
    for (auto& decoder : decoders) {
      if (decoder->scratch) backend->deallocate(decoder->scratch);
      decoder->device.reset();  // before its stream: a decoder may hold work or graphs tied to it
      decoder->stream.reset();
    }
    for (const StatusSlot& slot : all_status_slots) {
      backend->deallocate(slot.device);
      backend->deallocate_host(slot.host);
    }
  }

  Decoder& decoder(DecoderId id) const {
    std::lock_guard lock(decoders_mutex);
    if (id >= decoders.size())
      throw Error(ErrorCode::invalid_argument,
                  "unknown decoder id " + std::to_string(id) + " (" + std::to_string(decoders.size()) + " registered)");
    return *decoders[id];
  }

  DecoderId add(DecoderProgram program, const DecoderOptions& options) {
    auto entry = std::make_unique<Decoder>();
    entry->kind = program.kind;
    entry->cell = program.cells.type;
    entry->max_batch = program.max_batch;
    entry->blocks = static_cast<int>(program.encoder.blocks.size());
    entry->device = backend::make_device_decoder(program, *backend);
    const std::vector<DecodeMethod> methods = entry->device->methods();
    DecodeMethod method = options.method == DecodeMethod::automatic ? entry->device->default_method() : options.method;
    if (std::ranges::find(methods, method) == methods.end())
      throw Error(ErrorCode::unsupported, "decoder '" + program.name + "': options.method " +
                                              std::string(method_name(method)) + " is not offered on " +
                                              backend->name() + " (offered: " + method_list(methods) + ")");
    entry->stream = backend->create_stream(options.stream_priority);
    DecoderInfo& info = entry->info;
    info.name = program.name;
    info.kind = kind_name(program.kind);
    info.method = method;
    info.methods = methods;
    info.dtype = program.dtype;
    info.weight_bytes = entry->device->weight_bytes();
    info.recurrent_weight_bytes = entry->device->recurrent_weight_bytes();
    info.weights_on_chip = entry->device->weights_on_chip();

    std::lock_guard lock(decoders_mutex);
    check_name_free(program.name);
    decoders.push_back(std::move(entry));
    return decoders.size() - 1;
  }

  // Resolves options.name (default "decoder<N>") and rejects a duplicate.
  std::string name_for(const DecoderOptions& options) const {
    std::lock_guard lock(decoders_mutex);
    std::string name = options.name.empty() ? "decoder" + std::to_string(decoders.size()) : options.name;
    check_name_free(name);
    return name;
  }

  void check_name_free(const std::string& name) const {
    for (const auto& decoder : decoders)
      if (decoder->info.name == name)
        throw Error(ErrorCode::invalid_argument, "a decoder named '" + name + "' is already registered");
  }

  void check_args(const Decoder& d, const DecodeArgs& args, DecodeMethod method) const;

  void submit(Job job) {
    {
      std::lock_guard lock(mutex);
      if (stopping) throw Error(ErrorCode::shutdown, "the decode engine is shutting down");
      ++pending;
      dispatch_queue.push_back(std::move(job));
    }
    dispatch_ready.notify_one();
  }

  void wait_idle() {
    std::unique_lock lock(mutex);
    idle.wait(lock, [&] { return pending == 0; });
  }

  StatusSlot take_status_slot() {
    {
      std::lock_guard lock(slots_mutex);
      if (!free_status_slots.empty()) {
        StatusSlot slot = free_status_slots.back();
        free_status_slots.pop_back();
        return slot;
      }
    }
    StatusSlot slot;
    slot.device = static_cast<backend::DecoderRunStatus*>(backend->allocate(sizeof(backend::DecoderRunStatus)));
    try {
      slot.host = static_cast<backend::DecoderRunStatus*>(backend->allocate_host(sizeof(backend::DecoderRunStatus)));
    } catch (...) {
      backend->deallocate(slot.device);
      throw;
    }
    std::lock_guard lock(slots_mutex);
    all_status_slots.push_back(slot);
    return slot;
  }

  void return_status_slot(StatusSlot slot) {
    if (!slot.device) return;
    std::lock_guard lock(slots_mutex);
    free_status_slots.push_back(slot);
  }

  void ensure_scratch(Decoder& d, std::size_t bytes) {
    if (bytes <= d.scratch_bytes) return;
    if (d.scratch) {
      // Earlier runs on this stream may still use the old block.
      d.stream->synchronize();
      backend->deallocate(d.scratch);
      d.scratch = nullptr;
      d.scratch_bytes = 0;
    }
    d.scratch = backend->allocate(bytes);
    d.scratch_bytes = bytes;
  }

  // Enqueues the whole run on the decoder's stream, then the status copy and the event the
  // completer waits for.
  void launch(Job& job) {
    Decoder& d = *job.decoder;
    trace::ScopedRange range("launch " + d.info.name);
    try {
      ensure_scratch(d, d.device->scratch_bytes(job.args.batch, job.args.steps));
      job.status = take_status_slot();
      d.device->launch(job.args, job.method, job.pause_flag, d.scratch, job.status.device, *d.stream);
      d.stream->copy_to_host(job.status.host, job.status.device, sizeof(backend::DecoderRunStatus));
      job.finished = d.stream->record();
    } catch (...) {
      job.error = std::current_exception();
      job.finished.reset();
      // Whatever was enqueued before the failure must leave the stream before the status slot and
      // scratch are reused.
      try {
        d.stream->synchronize();
      } catch (...) {
      }
    }
  }

  void dispatch_loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex);
        dispatch_ready.wait(lock, [&] { return stopping || !dispatch_queue.empty(); });
        if (dispatch_queue.empty()) break;  // stopping, nothing left
        job = std::move(dispatch_queue.front());
        dispatch_queue.pop_front();
      }
      launch(job);
      {
        std::lock_guard lock(mutex);
        completion_queue.push_back(std::move(job));
      }
      completion_ready.notify_one();
    }
    {
      std::lock_guard lock(mutex);
      dispatcher_done = true;
    }
    completion_ready.notify_all();
  }

  void completion_loop() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex);
        completion_ready.wait(lock, [&] { return dispatcher_done || !completion_queue.empty(); });
        if (completion_queue.empty()) break;
        job = std::move(completion_queue.front());
        completion_queue.pop_front();
      }
      complete(job);
      {
        std::lock_guard lock(mutex);
        --pending;
      }
      idle.notify_all();
    }
  }

  void complete(Job& job) {
    DecodeResult result;
    if (!job.error) {
      try {
        job.finished->synchronize();
        result.steps_run = job.status.host->steps_run;
        result.next_step = job.args.start_step + result.steps_run;
        result.paused = job.status.host->paused != 0;
      } catch (...) {
        job.error = std::current_exception();
      }
    }
    return_status_slot(job.status);
    trace::end_range(job.nvtx_range);
    try {
      job.done(job.error, result);
    } catch (...) {
      // A callback's own failure is its business; the engine carries on.
    }
  }

  std::shared_ptr<backend::Backend> backend;
  std::unique_ptr<backend::Stream> transfer_stream;  // upload() and download()
  std::mutex transfer_mutex;

  mutable std::mutex decoders_mutex;
  std::vector<std::unique_ptr<Decoder>> decoders;  // by DecoderId; entries never move

  std::mutex slots_mutex;
  std::vector<StatusSlot> free_status_slots;
  std::vector<StatusSlot> all_status_slots;

  std::mutex mutex;  // the queues, pending, stopping, dispatcher_done
  std::condition_variable dispatch_ready, completion_ready, idle;
  std::deque<Job> dispatch_queue, completion_queue;
  std::size_t pending = 0;  // queued and not yet completed
  bool stopping = false;
  bool dispatcher_done = false;
  std::thread dispatcher, completer;
};

void DecodeEngine::Impl::check_args(const Decoder& d, const DecodeArgs& args, DecodeMethod method) const {
  const std::string& name = d.info.name;
  const bool recurrent = d.kind == DecoderProgram::Kind::recurrent;
  const bool greedy = d.kind == DecoderProgram::Kind::greedy;
  const bool encoder = d.kind == DecoderProgram::Kind::encoder;
  const bool lstm = !encoder && d.cell == CellType::lstm;
  const auto bad = [&](const std::string& what) { require(false, ErrorCode::invalid_argument, name, what); };

  if (std::ranges::find(d.info.methods, method) == d.info.methods.end())
    throw Error(ErrorCode::unsupported, "decoder '" + name + "': method " + std::string(method_name(method)) +
                                            " is not offered on " + backend->name() +
                                            " (offered: " + method_list(d.info.methods) + ")");
  if (args.batch < 1 || args.batch > d.max_batch)
    bad("args.batch = " + std::to_string(args.batch) + " is outside [1, " + std::to_string(d.max_batch) + "]");
  if (args.steps < 0) bad("args.steps = " + std::to_string(args.steps) + " is negative");
  if (encoder && args.steps > d.blocks)
    bad("args.steps = " + std::to_string(args.steps) + " is more than the " + std::to_string(d.blocks) + " blocks");
  if (!args.input) bad("args.input is null");
  if (!args.output) bad("args.output is null");
  if (!recurrent && args.lengths) bad("args.lengths applies to recurrent decoders only");
  if (!recurrent && args.mask) bad("args.mask applies to recurrent decoders only");
  if (args.lengths && args.mask) bad("args.lengths and args.mask are both given (at most one)");
  if (!greedy && args.out_lengths) bad("args.out_lengths applies to greedy decoders only");
  if (encoder && (args.initial_h || args.final_h)) bad("args.initial_h/final_h apply to recurrent and greedy decoders");
  if (!lstm && (args.initial_c || args.final_c)) bad("args.initial_c/final_c apply to LSTM cells only");
  if (args.pause) {
    if (greedy)
      throw Error(ErrorCode::unsupported, "decoder '" + name + "': args.pause: greedy decoding cannot be paused");
    if (recurrent && !args.final_h) bad("args.pause needs args.final_h to hold the state");
    if (recurrent && lstm && !args.final_c) bad("args.pause needs args.final_c to hold the LSTM cell state");
  }
  const int count = encoder && args.steps == 0 ? d.blocks : args.steps;
  if (greedy && args.start_step != 0)
    bad("args.start_step = " + std::to_string(args.start_step) + ": greedy decoding always starts at step 0");
  if (args.start_step < 0 || args.start_step > count)
    bad("args.start_step = " + std::to_string(args.start_step) + " is outside [0, " + std::to_string(count) + "]");
}

DecodeEngine::DecodeEngine(const std::string& device) : impl_(std::make_unique<Impl>(device)) {}
DecodeEngine::~DecodeEngine() = default;

std::string DecodeEngine::backend_name() const { return impl_->backend->name(); }
std::string DecodeEngine::device_name() const { return impl_->backend->device_name(); }

DecoderId DecodeEngine::add(const RecurrentSpec& spec, const DecoderOptions& options) {
  const std::string name = impl_->name_for(options);
  check_options(name, options);
  return impl_->add(recurrent_program(name, spec, options), options);
}

DecoderId DecodeEngine::add(const GreedySpec& spec, const DecoderOptions& options) {
  const std::string name = impl_->name_for(options);
  check_options(name, options);
  return impl_->add(greedy_program(name, spec, options), options);
}

DecoderId DecodeEngine::add(const EncoderStackSpec& spec, const DecoderOptions& options) {
  const std::string name = impl_->name_for(options);
  check_options(name, options);
  return impl_->add(encoder_program(name, spec, options), options);
}

DecoderInfo DecodeEngine::info(DecoderId id) const { return impl_->decoder(id).info; }

DeviceBuffer DecodeEngine::allocate(std::size_t bytes) {
  DeviceBuffer buffer;
  // Never a null pointer, even for zero bytes: null means "absent" in DecodeArgs.
  buffer.data_ = impl_->backend->allocate(std::max<std::size_t>(bytes, 1));
  buffer.bytes_ = bytes;
  // The buffer keeps the backend alive, so it may outlive the engine.
  buffer.free_ = [backend = impl_->backend](void* ptr) { backend->deallocate(ptr); };
  return buffer;
}

void DecodeEngine::upload(DeviceBuffer& dst, const void* src, std::size_t bytes) {
  if (bytes > dst.bytes())
    throw Error(ErrorCode::invalid_argument,
                "upload of " + std::to_string(bytes) + " bytes into a buffer of " + std::to_string(dst.bytes()));
  if (bytes == 0) return;
  std::lock_guard lock(impl_->transfer_mutex);
  impl_->transfer_stream->copy_to_device(dst.data(), src, bytes);
  impl_->transfer_stream->synchronize();
}

void DecodeEngine::download(void* dst, const DeviceBuffer& src, std::size_t bytes) {
  if (bytes > src.bytes())
    throw Error(ErrorCode::invalid_argument,
                "download of " + std::to_string(bytes) + " bytes from a buffer of " + std::to_string(src.bytes()));
  if (bytes == 0) return;
  std::lock_guard lock(impl_->transfer_mutex);
  impl_->transfer_stream->copy_to_host(dst, src.data(), bytes);
  impl_->transfer_stream->synchronize();
}

PauseFlag DecodeEngine::make_pause_flag() {
  auto impl = std::make_unique<PauseFlag::Impl>();
  impl->owner = impl_->backend;
  impl->flag = impl_->backend->create_pause_flag();
  return PauseFlag(std::move(impl));
}

void DecodeEngine::run(DecoderId id, const DecodeArgs& args, DecodeCallback done, DecodeMethod method) {
  Impl::Decoder& d = impl_->decoder(id);
  if (method == DecodeMethod::automatic) method = d.info.method;
  impl_->check_args(d, args, method);
  if (args.pause && !args.pause->impl_)
    throw Error(ErrorCode::invalid_argument, "decoder '" + d.info.name + "': args.pause is a moved-from PauseFlag");
  if (!done) throw Error(ErrorCode::invalid_argument, "decoder '" + d.info.name + "': run() needs a callback");
  Impl::Job job;
  job.decoder = &d;
  job.args = args;
  job.method = method;
  job.pause_flag = args.pause ? args.pause->impl_->flag->device_address() : nullptr;
  job.done = std::move(done);
  job.nvtx_range = trace::start_range("decode " + d.info.name + " (" + std::string(method_name(method)) + ", " +
                                      std::to_string(args.steps) + " steps)");
  const std::uint64_t range = job.nvtx_range;
  try {
    impl_->submit(std::move(job));
  } catch (...) {
    trace::end_range(range);
    throw;
  }
}

std::future<DecodeResult> DecodeEngine::run(DecoderId id, const DecodeArgs& args, DecodeMethod method) {
  auto promise = std::make_shared<std::promise<DecodeResult>>();
  std::future<DecodeResult> future = promise->get_future();
  run(
      id, args,
      [promise](std::exception_ptr error, DecodeResult result) {
        if (error)
          promise->set_exception(error);
        else
          promise->set_value(result);
      },
      method);
  return future;
}

void DecodeEngine::synchronize() { impl_->wait_idle(); }

}  // namespace loom::decode
