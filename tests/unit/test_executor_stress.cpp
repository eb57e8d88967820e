// Stress with faults (issue 17, item 6): 64 client threads send 10,000 requests to three models
// (two ONNX files built here, one built-in) on the CPU backend, mixing urgent and background
// requests that preempt and are preempted, deadlines that have passed or are tight, futures the
// client drops, wrong shapes, dtypes, counts and names, and requests too large for an arena limit
// that is small enough to force dumps. Every request ends exactly once, with its isolated result
// bit for bit or its typed error; memory comes back and the executor serves on afterwards.
// The executor has no call that cancels a request (RequestOptions holds a priority and a deadline):
// a deadline already passed stands for a cancellation before the start, a dropped future for a
// client that walks away.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "backend/open_backend.hpp"
#include "core/random.hpp"
#include "loom/executor.hpp"
#include "loom/onnx.hpp"
#include "loom/workloads.hpp"
#include "onnx_proto_builder.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using loom::test_support::same_bits;
using Clock = std::chrono::steady_clock;

namespace {

// The sanitizer builds run the same mix on the same two cores, scaled down to stay within CI's
// time: fewer requests, and the LSTM (about 1.7 ms a request in Release, 40 times that under ASan's
// -O1 kernels) a smaller share of them. What the sanitizers check, the executor's threads and
// memory, does not depend on which model a request goes to.
#if defined(__SANITIZE_THREAD__)
constexpr int kRequests = 1500;
constexpr int kLstmPercent = 3;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kRequests = 3000;
constexpr int kLstmPercent = 3;
#else
constexpr int kRequests = 10000;
constexpr int kLstmPercent = 20;
#endif
constexpr int kClients = 64;
constexpr std::size_t kWindow = 8;  // watched requests a client has outstanding
constexpr int kInputsPerModel = 4;  // distinct good inputs per model, each run alone first
// Every wait ends by then: a request that has not completed is lost, not slow.
constexpr auto kPatience = std::chrono::minutes(5);

// ---------------------------------------------------------------------------------------------
// Memory the executor's backend holds, per allocation: a CPU backend registered under its own
// device name ("ledger-cpu") that forwards everything and books every device and host block, so
// the test can see what the pool and the dumps hold without the executor's insides.

class MemoryLedger {
 public:
  // Both return `ptr`, so that the backend below can wrap its own calls in them.
  void* book(void* ptr, std::size_t bytes, bool host) {
    std::lock_guard lock(mutex_);
    (host ? host_ : device_).emplace(ptr, bytes);
    (host ? totals_.host_bytes : totals_.device_bytes) += bytes;
    if (host) ++totals_.host_blocks_ever;
    return ptr;
  }
  void* release(void* ptr, bool host) noexcept {
    if (!ptr) return ptr;
    std::lock_guard lock(mutex_);
    auto& blocks = host ? host_ : device_;
    const auto it = blocks.find(ptr);
    if (it == blocks.end()) {
      ++totals_.unknown_releases;
      return ptr;
    }
    (host ? totals_.host_bytes : totals_.device_bytes) -= it->second;
    blocks.erase(it);
    return ptr;
  }
  struct Totals {
    std::uint64_t device_bytes = 0, host_bytes = 0;  // held now
    std::uint64_t host_blocks_ever = 0;              // host blocks handed out (the dumps' buffers)
    std::uint64_t unknown_releases = 0;              // blocks given back that were never booked
  };
  Totals totals() const {
    std::lock_guard lock(mutex_);
    return totals_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::size_t> device_, host_;
  Totals totals_;
};

MemoryLedger& ledger() {
  static MemoryLedger instance;
  return instance;
}

class LedgerBackend final : public backend::Backend {
 public:
  LedgerBackend() : cpu_(backend::make_cpu_backend()) {}
  void set_host_threading(const backend::HostThreading& threading) override { cpu_->set_host_threading(threading); }
  std::size_t host_threads() const noexcept override { return cpu_->host_threads(); }
  backend::Capabilities capabilities() const noexcept override { return cpu_->capabilities(); }
  std::string name() const override { return cpu_->name(); }
  std::string device_name() const override { return cpu_->device_name(); }
  double peak_flops(DType dtype) const override { return cpu_->peak_flops(dtype); }
  double peak_bandwidth() const override { return cpu_->peak_bandwidth(); }
  std::size_t onchip_bytes() const override { return cpu_->onchip_bytes(); }
  std::unique_ptr<backend::OpKernel> create_kernel(const backend::KernelSpec& spec) override {
    return cpu_->create_kernel(spec);
  }
  std::unique_ptr<backend::Stream> create_stream(int priority) override { return cpu_->create_stream(priority); }
  void* allocate(std::size_t bytes) override { return ledger().book(cpu_->allocate(bytes), bytes, false); }
  void deallocate(void* ptr) noexcept override { cpu_->deallocate(ledger().release(ptr, false)); }
  void* allocate_host(std::size_t bytes) override { return ledger().book(cpu_->allocate_host(bytes), bytes, true); }
  void deallocate_host(void* ptr) noexcept override { cpu_->deallocate_host(ledger().release(ptr, true)); }
  std::unique_ptr<backend::PauseFlag> create_pause_flag() override { return cpu_->create_pause_flag(); }
  void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
               backend::Stream& stream) override {
    cpu_->convert(src, src_dtype, dst, dst_dtype, count, stream);
  }

 private:
  std::unique_ptr<backend::Backend> cpu_;
};

int ledger_device_count() noexcept { return 1; }
std::unique_ptr<backend::Backend> open_ledger(int) { return std::make_unique<LedgerBackend>(); }
// Lowest preference: "auto" never opens it.
void register_ledger_backend() { backend::register_backend({"ledger-cpu", -1000, ledger_device_count, open_ledger}); }

// ---------------------------------------------------------------------------------------------
// The models: a small conv net and an attention-like MatMul + Softmax block, both as ONNX files
// written field by field, and the built-in LSTM (its Steps can pause inside).

std::vector<float> seeded_values(std::size_t count, std::uint64_t seed, float scale) {
  SplitMix64 rng(seed);
  std::vector<float> v(count);
  for (auto& x : v) x = rng.uniform(-scale, scale);
  return v;
}

Model load_proto(const onnx::ModelProto& proto, const std::string& name) {
  const std::string bytes = proto.SerializeAsString();
  return load_onnx_from_memory(bytes.data(), bytes.size(), name);
}

// image [1, 3, 12, 12] -> Conv 3x3 (8) -> Relu -> Conv 3x3 stride 2 (8) -> Relu -> GlobalAveragePool
// -> Flatten -> Gemm (10).
Model conv_net() {
  using namespace loom::testing;
  auto proto = make_model(17, "conv_net");
  auto* g = proto.mutable_graph();
  add_input(g, "image", onnx::TensorProto::FLOAT, {"1", "3", "12", "12"});
  *g->add_initializer() = float_tensor("w1", {8, 3, 3, 3}, seeded_values(8 * 3 * 9, 11, 0.5f));
  *g->add_initializer() = float_tensor("b1", {8}, seeded_values(8, 12, 0.1f));
  *g->add_initializer() = float_tensor("w2", {8, 8, 3, 3}, seeded_values(8 * 8 * 9, 13, 0.3f));
  *g->add_initializer() = float_tensor("w3", {10, 8}, seeded_values(80, 14, 0.5f));
  *g->add_initializer() = float_tensor("b3", {10}, seeded_values(10, 15, 0.1f));
  auto* c1 = add_node(g, "Conv", {"image", "w1", "b1"}, {"c1"});
  set_ints(c1, "kernel_shape", {3, 3});
  set_ints(c1, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c1"}, {"r1"});
  auto* c2 = add_node(g, "Conv", {"r1", "w2"}, {"c2"});
  set_ints(c2, "kernel_shape", {3, 3});
  set_ints(c2, "strides", {2, 2});
  set_ints(c2, "pads", {1, 1, 1, 1});
  add_node(g, "Relu", {"c2"}, {"r2"});
  add_node(g, "GlobalAveragePool", {"r2"}, {"pooled"});
  set_int(add_node(g, "Flatten", {"pooled"}, {"flat"}), "axis", 1);
  set_int(add_node(g, "Gemm", {"flat", "w3", "b3"}, {"logits"}), "transB", 1);
  add_output(g, "logits");
  return load_proto(proto, "conv_net.onnx");
}

// x [batch, 8, 16] -> scores = Softmax(x·Wk / 4) [batch, 8, 8] -> Tanh(scores·x·Wv + x); batch is
// symbolic, bound at load.
Model attention_block() {
  using namespace loom::testing;
  auto proto = make_model(17, "attention");
  auto* g = proto.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {"batch", "8", "16"});
  *g->add_initializer() = float_tensor("wk", {16, 8}, seeded_values(16 * 8, 21, 0.5f));
  *g->add_initializer() = float_tensor("wv", {16, 16}, seeded_values(16 * 16, 22, 0.5f));
  *g->add_initializer() = float_tensor("quarter", {}, {0.25f});
  add_node(g, "MatMul", {"x", "wk"}, {"k"});
  add_node(g, "Mul", {"k", "quarter"}, {"scaled"});
  set_int(add_node(g, "Softmax", {"scaled"}, {"probs"}), "axis", -1);
  add_node(g, "MatMul", {"x", "wv"}, {"v"});
  add_node(g, "MatMul", {"probs", "v"}, {"mixed"});
  add_node(g, "Add", {"mixed", "x"}, {"sum"});
  add_node(g, "Tanh", {"sum"}, {"y"});
  add_output(g, "y");
  return load_proto(proto, "attention.onnx");
}

LoadOptions with_batch(const std::string& name, std::int64_t batch) {
  LoadOptions o;
  o.name = name;
  o.optimize.dim_values["batch"] = batch;
  return o;
}

// Options shared by the reference executor and the stressed one where they touch numerics: the
// CPU backend computing in f32. The rest is the stress: every Step boundary a cancellation point.
ExecutorOptions base_options(const std::string& device) {
  ExecutorOptions o;
  o.device = device;
  o.profile = "none";  // roofline estimates: nothing read from files
  o.compute_dtype = DType::f32;
  o.cancellation_interval_us = 0;
  return o;
}

// The three models under the names the stress uses, and one more binding of the attention block
// whose arena is larger than the limit: its requests are the out-of-memory rejections.
struct ModelSet {
  static constexpr const char* kNames[3] = {"conv", "attention", "lstm"};
  static constexpr const char* kOversized = "attention_wide";
  static constexpr std::int64_t kBatch = 2, kWideBatch = 1024;
  Model conv = conv_net(), attention = attention_block(), lstm = workloads::lstm_seq(1, workloads::Size::small, 3);

  void load_into(Executor& ex, bool with_oversized) const {
    ex.load(conv, "conv");
    ex.load(attention, with_batch("attention", kBatch));
    ex.load(lstm, "lstm");
    if (with_oversized) ex.load(attention, with_batch(kOversized, kWideBatch));
  }
};

// Each model's good inputs and their outputs run one at a time on an executor of their own.
struct Expected {
  std::array<std::vector<std::vector<Tensor>>, 3> inputs;
  std::array<std::vector<Outputs>, 3> outputs;
  std::array<ModelInfo, 3> info;
};

Expected isolated_results(const ModelSet& models) {
  Expected e;
  Executor ex(base_options("cpu"));
  models.load_into(ex, false);
  for (int m = 0; m < 3; ++m) {
    e.info[m] = ex.model_info(ModelSet::kNames[m]);
    for (int k = 0; k < kInputsPerModel; ++k) {
      const std::uint64_t seed = 1000 * (m + 1) + k;
      // The attention block's batch is bound at load, so its input is drawn here; the others'
      // come from their own declarations (the LSTM's ids inside its vocabulary).
      auto in = m == 1 ? std::vector<Tensor>{Tensor::from<float>(Shape{ModelSet::kBatch, 8, 16},
                                                                 seeded_values(ModelSet::kBatch * 8 * 16, seed, 1.0f))}
                       : random_inputs(m == 0 ? models.conv : models.lstm, seed);
      e.outputs[m].push_back(ex.submit(ModelSet::kNames[m], in).get());
      e.inputs[m].push_back(std::move(in));
    }
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// The requests.

enum class Kind {
  normal,          // good; must give the isolated result
  urgent,          // good, Priority::urgent: preempts whatever runs
  background,      // good, Priority::background: preempted by everything
  late_deadline,   // good, a deadline far away: must complete
  past_deadline,   // deadline already passed: deadline_exceeded
  tight_deadline,  // deadline within 20 ms: deadline_exceeded or the isolated result
  abandoned,       // good, submitted through a future the client drops at once
  oversized,       // to attention_wide, whose arena exceeds the limit: out_of_memory
  wrong_shape,     // refused by submit(): shape_mismatch
  wrong_dtype,     // refused by submit(): dtype_mismatch
  wrong_count,     // refused by submit(): invalid_argument
  unknown_model,   // refused by submit(): unknown_model
  kinds
};
constexpr std::size_t kKinds = static_cast<std::size_t>(Kind::kinds);
constexpr const char* kKindNames[kKinds] = {"normal",        "urgent",         "background",  "late_deadline",
                                            "past_deadline", "tight_deadline", "abandoned",   "oversized",
                                            "wrong_shape",   "wrong_dtype",    "wrong_count", "unknown_model"};

// Percentages of each kind, in Kind order (sum 100).
constexpr int kMix[kKinds] = {50, 8, 8, 3, 5, 6, 3, 5, 4, 4, 2, 2};

Kind draw_kind(SplitMix64& rng) {
  int roll = static_cast<int>(rng.integer(0, 100));
  for (std::size_t k = 0; k < kKinds; ++k) {
    if (roll < kMix[k]) return static_cast<Kind>(k);
    roll -= kMix[k];
  }
  return Kind::normal;
}

// How one submitted request ended, written by its callback (once; later calls only count).
struct Slot {
  Kind kind = Kind::normal;
  int model = 0, input = 0;
  std::atomic<int> completions{0};
  std::exception_ptr error;
  Outputs outputs;
  std::promise<void> done;
};

// What the requests' ends add up to.
struct Tally {
  std::array<std::atomic<std::uint64_t>, kKinds> submitted{}, refused{};
  std::atomic<std::uint64_t> good{0}, expired{0}, tight_expired{0}, tight_ran{0}, out_of_memory{0};
  std::atomic<std::uint64_t> mismatches{0}, wrong_errors{0}, lost{0};
};

std::vector<Tensor> wrong_shape_of(const std::vector<Tensor>& good) {
  Shape shape = good[0].shape();
  shape[shape.rank() - 1] += 1;
  return {Tensor(good[0].dtype(), shape)};
}
std::vector<Tensor> wrong_dtype_of(const std::vector<Tensor>& good) {
  return {Tensor(good[0].dtype() == DType::f32 ? DType::i32 : DType::f32, good[0].shape())};
}

ErrorCode code_in(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return e.code();
  } catch (...) {
  }
  return ErrorCode::internal;
}

// A request that never completes would hang the executor's destructor: end the process with the
// diagnosis instead of leaving CI to its timeout.
[[noreturn]] void abort_lost(const std::string& what) {
  std::fprintf(stderr, "ExecutorStress: %s; ending the process (a lost request hangs the executor)\n", what.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// Waits for one watched request's end and books it: the isolated result for a good one, its typed
// error for a bad one.
void check(Slot& slot, const Expected& expected, Tally& tally, Clock::time_point give_up) {
  if (slot.done.get_future().wait_until(give_up) != std::future_status::ready) {
    ++tally.lost;
    return;
  }
  const auto& want = expected.outputs[slot.model][slot.input];
  const auto failed_with = [&](ErrorCode code) { return slot.error && code_in(slot.error) == code; };
  switch (slot.kind) {
    case Kind::oversized:
      ++(failed_with(ErrorCode::out_of_memory) ? tally.out_of_memory : tally.wrong_errors);
      break;
    case Kind::past_deadline:
      ++(failed_with(ErrorCode::deadline_exceeded) ? tally.expired : tally.wrong_errors);
      break;
    case Kind::tight_deadline:
      // Either end is right (a deadline counts only until the first Step); which one it is
      // depends on the timing.
      if (failed_with(ErrorCode::deadline_exceeded)) {
        ++tally.expired;
        ++tally.tight_expired;
      } else if (!slot.error && same_bits(slot.outputs, want)) {
        ++tally.tight_ran;
      } else {
        ++(slot.error ? tally.wrong_errors : tally.mismatches);
      }
      break;
    default:
      if (slot.error)
        ++tally.wrong_errors;
      else
        ++(same_bits(slot.outputs, want) ? tally.good : tally.mismatches);
  }
}

// One client: its own seeded mix, every end checked. Odd clients keep at most kWindow watched
// requests outstanding (so urgent ones keep arriving while others run, as from clients that wait
// for their answers); even ones submit all of theirs first (a deep queue waiting for memory).
void run_client(int client, int count, Executor& ex, const Expected& expected, Tally& tally,
                std::vector<std::unique_ptr<Slot>>& slots, Clock::time_point give_up) {
  SplitMix64 rng(0x5EED0000u + static_cast<std::uint64_t>(client));
  const std::size_t window = client % 2 == 0 ? 0 : kWindow;
  slots.reserve(static_cast<std::size_t>(count));
  std::size_t checked = 0;
  for (int i = 0; i < count; ++i) {
    const Kind kind = draw_kind(rng);
    // The LSTM costs several times the others: it gets a smaller share.
    const int roll = static_cast<int>(rng.integer(0, 100));
    const int model = roll < kLstmPercent ? 2 : roll % 2;
    const int input = static_cast<int>(rng.integer(0, kInputsPerModel));
    const auto& good = expected.inputs[model][input];
    const std::string name = ModelSet::kNames[model];
    const auto k = static_cast<std::size_t>(kind);
    RequestOptions options;
    switch (kind) {
      case Kind::urgent:
        options.priority = Priority::urgent;
        break;
      case Kind::background:
        options.priority = Priority::background;
        break;
      case Kind::late_deadline:
        options.deadline = Clock::now() + std::chrono::minutes(10);
        break;
      case Kind::past_deadline:
        options.deadline = Clock::now() - std::chrono::milliseconds(1);
        break;
      case Kind::tight_deadline:
        // Half of them urgent: those jump the queue and often start in time.
        if (rng.integer(0, 2) == 0) options.priority = Priority::urgent;
        options.deadline = Clock::now() + std::chrono::microseconds(rng.integer(0, 20000));
        break;
      default:
        break;
    }
    if (kind >= Kind::wrong_shape) {
      const ErrorCode want = kind == Kind::wrong_shape   ? ErrorCode::shape_mismatch
                             : kind == Kind::wrong_dtype ? ErrorCode::dtype_mismatch
                             : kind == Kind::wrong_count ? ErrorCode::invalid_argument
                                                         : ErrorCode::unknown_model;
      std::vector<Tensor> bad = kind == Kind::wrong_shape   ? wrong_shape_of(good)
                                : kind == Kind::wrong_dtype ? wrong_dtype_of(good)
                                : kind == Kind::wrong_count ? std::vector<Tensor>{good[0], good[0]}
                                                            : good;
      const std::string target = kind == Kind::unknown_model ? "no_such_model" : name;
      try {
        ex.submit(target, std::move(bad), [](std::exception_ptr, Outputs) {});
        ++tally.wrong_errors;
        ADD_FAILURE() << kKindNames[k] << " request to " << target << " was accepted";
      } catch (const Error& e) {
        ++(e.code() == want ? tally.refused[k] : tally.wrong_errors);
      }
      continue;
    }
    if (kind == Kind::abandoned) {
      (void)ex.submit(name, good, options);  // the future is dropped at once
      ++tally.submitted[k];
      continue;
    }
    auto slot = std::make_unique<Slot>();
    slot->kind = kind;
    slot->model = model;
    slot->input = input;
    Slot* s = slot.get();
    const bool oversized = kind == Kind::oversized;
    ex.submit(
        oversized ? std::string(ModelSet::kOversized) : name,
        oversized ? std::vector<Tensor>{Tensor(DType::f32, Shape{ModelSet::kWideBatch, 8, 16})} : good,
        [s](std::exception_ptr error, Outputs outputs) {
          if (s->completions.fetch_add(1) != 0) return;  // a second completion: counted, ignored
          s->error = std::move(error);
          s->outputs = std::move(outputs);
          s->done.set_value();
        },
        options);
    ++tally.submitted[k];
    slots.push_back(std::move(slot));
    if (window && slots.size() - checked > window) check(*slots[checked++], expected, tally, give_up);
  }
  while (checked < slots.size()) check(*slots[checked++], expected, tally, give_up);
}

// Polls `condition` until it holds or `give_up`.
template <class Condition>
bool eventually(Condition&& condition, Clock::time_point give_up) {
  while (!condition()) {
    if (Clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

}  // namespace

// The stress on an executor whose models' streams run as `threading` says (stream shares: each on a
// worker of its own, asynchronously), with `requests` requests, against results computed alone on
// the reference executor (synchronous streams).
void stress(const backend::HostThreading& threading, int requests) {
  const auto started = Clock::now();
  const auto give_up = started + kPatience;
  register_ledger_backend();
  const ModelSet models;
  const Expected expected = isolated_results(models);

  ExecutorOptions options = base_options("ledger-cpu");
  options.cpu_threads = threading.threads;
  options.cpu_stream_shares = threading.stream_workers;
  options.policy = "round-robin";  // interleaves requests: many started at once, to be paused
  options.queue_capacity = 8;      // back-pressure from 64 clients into submit()
  // Two threads in each host stage: requests overtake each other between the stages, and failures,
  // dumps and completions come from several threads at once.
  options.stage_threads.pre_process = 2;
  options.stage_threads.post_process = 2;
  // Room for the largest good arena and a little more: an urgent request arriving while others
  // hold memory makes them give it up (dumped when started), and the wide binding never fits.
  std::uint64_t largest = 0, smallest = UINT64_MAX;
  for (const auto& info : expected.info) {
    largest = std::max(largest, info.activation_bytes);
    smallest = std::min(smallest, info.activation_bytes);
  }
  options.arena_memory_limit_bytes = largest + smallest;
  auto ex = std::make_unique<Executor>(options);
  models.load_into(*ex, true);
  ASSERT_GT(ex->model_info(ModelSet::kOversized).activation_bytes, options.arena_memory_limit_bytes);
  ASSERT_EQ(ex->backend_name(), "cpu");

  const ExecutorStats before = ex->stats();
  const std::uint64_t device_before = ledger().totals().device_bytes, host_before = ledger().totals().host_bytes;

  Tally tally;
  // Owned here, not by the clients: a late second completion must find its slot still there.
  std::vector<std::vector<std::unique_ptr<Slot>>> slots(kClients);
  {
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      const int count = requests / kClients + (c < requests % kClients ? 1 : 0);
      clients.emplace_back([&, c, count] { run_client(c, count, *ex, expected, tally, slots[c], give_up); });
    }
    for (auto& client : clients) client.join();
  }
  if (tally.lost > 0) abort_lost(std::to_string(tally.lost.load()) + " request(s) never completed");
  // The dropped futures' requests complete unseen: wait for the counters to cover them.
  std::uint64_t accepted = 0, refused = 0;
  for (std::size_t k = 0; k < kKinds; ++k) {
    accepted += tally.submitted[k];
    refused += tally.refused[k];
  }
  if (!eventually(
          [&] {
            const auto s = ex->stats();
            return s.requests_completed + s.requests_failed - before.requests_completed - before.requests_failed >=
                   accepted;
          },
          give_up))
    abort_lost("the executor's counters never covered every accepted request");
  const ExecutorStats after = ex->stats();
  const auto elapsed_s = std::chrono::duration<double>(Clock::now() - started).count();

  std::printf("ExecutorStress: %d requests from %d clients in %.1f s%s\n", requests, kClients, elapsed_s,
              threading.stream_workers ? " (stream shares)" : "");
  for (std::size_t k = 0; k < kKinds; ++k)
    std::printf("  %-15s submitted %5llu  refused %5llu\n", kKindNames[k],
                static_cast<unsigned long long>(tally.submitted[k].load()),
                static_cast<unsigned long long>(tally.refused[k].load()));
  std::printf("  ends: good %llu, deadline_exceeded %llu (tight: %llu expired, %llu ran), out_of_memory %llu\n",
              static_cast<unsigned long long>(tally.good.load()), static_cast<unsigned long long>(tally.expired.load()),
              static_cast<unsigned long long>(tally.tight_expired.load()),
              static_cast<unsigned long long>(tally.tight_ran.load()),
              static_cast<unsigned long long>(tally.out_of_memory.load()));
  std::printf("  stats: preemptions %llu (inside Steps %llu), bytes dumped %llu, host blocks %llu, pool %llu B\n",
              static_cast<unsigned long long>(after.preemptions - before.preemptions),
              static_cast<unsigned long long>(after.pauses_inside_steps - before.pauses_inside_steps),
              static_cast<unsigned long long>(after.bytes_dumped - before.bytes_dumped),
              static_cast<unsigned long long>(ledger().totals().host_blocks_ever),
              static_cast<unsigned long long>(after.pool_bytes_reserved));

  // Nothing lost, nothing twice, every end the right one.
  EXPECT_EQ(accepted + refused, static_cast<std::uint64_t>(requests));
  EXPECT_EQ(tally.mismatches.load(), 0u);
  EXPECT_EQ(tally.wrong_errors.load(), 0u);
  const std::uint64_t watched = accepted - tally.submitted[static_cast<std::size_t>(Kind::abandoned)];
  EXPECT_EQ(tally.good + tally.expired + tally.tight_ran + tally.out_of_memory, watched);
  // Every kind happened.
  for (std::size_t k = 0; k < kKinds; ++k) EXPECT_GT(tally.submitted[k] + tally.refused[k], 0u) << kKindNames[k];
  EXPECT_GT(tally.out_of_memory.load(), 0u);
  EXPECT_GT(tally.expired.load(), 0u);
  EXPECT_GT(after.preemptions - before.preemptions, 0u);
  EXPECT_GT(after.bytes_dumped - before.bytes_dumped, 0u);

  // The executor's counters agree with what the clients saw.
  EXPECT_EQ(after.requests_submitted - before.requests_submitted, accepted);
  EXPECT_EQ(after.requests_failed - before.requests_failed, tally.expired + tally.out_of_memory);
  EXPECT_EQ(after.requests_completed - before.requests_completed,
            tally.good + tally.tight_ran + tally.submitted[static_cast<std::size_t>(Kind::abandoned)]);
  EXPECT_EQ(after.requests_expired - before.requests_expired, tally.expired.load());
  // And so do the stage figures: each accepted request passed pre- and post-process once, and
  // ended once in its model's counts. A stage counts an item once its handler has returned, which
  // is after the request's completion was counted: they may trail `after` for a moment.
  const auto items = [](const ExecutorStats& s, const char* name) {
    for (const auto& stage : s.stages)
      if (stage.name == name) return stage.items;
    ADD_FAILURE() << "no stage " << name;
    return std::uint64_t{0};
  };
  for (const char* stage : {"pre-process", "post-process"}) {
    EXPECT_TRUE(eventually([&] { return items(ex->stats(), stage) - items(before, stage) >= accepted; }, give_up))
        << stage;
    EXPECT_EQ(items(ex->stats(), stage) - items(before, stage), accepted) << stage;
  }
  std::uint64_t ended = 0;
  for (std::size_t m = 0; m < after.models.size(); ++m)
    ended += after.models[m].requests_completed + after.models[m].requests_failed -
             before.models[m].requests_completed - before.models[m].requests_failed;
  EXPECT_EQ(ended, accepted);

  // Memory: the dumps' host buffers are all given back (a request frees its own as it ends, just
  // after its callback), and the device holds nothing beyond the pool's blocks that it did not
  // hold at the start (the weights live in pool blocks too).
  EXPECT_TRUE(eventually([&] { return ledger().totals().host_bytes == host_before; }, give_up))
      << ledger().totals().host_bytes << " host bytes still held, " << host_before << " at the start";
  EXPECT_EQ(ledger().totals().device_bytes - after.pool_bytes_reserved, device_before - before.pool_bytes_reserved);

  // Still serving. One request at a time first: each is served from a block the pool already
  // holds, so the pool stops growing; a block left in use by a request that ended would not be.
  const auto run = [&](const std::string& model, const std::vector<Tensor>& inputs, Priority priority) {
    RequestOptions o;
    o.priority = priority;
    return ex->submit(model, inputs, o);
  };
  const auto expect_result = [&](std::future<Outputs>& future, const Outputs& want) {
    if (future.wait_until(give_up) != std::future_status::ready)
      abort_lost("a request after the stress never completed");
    EXPECT_TRUE(same_bits(future.get(), want));
  };
  const ExecutorStats settled = ex->stats();
  for (int m = 0; m < 3; ++m)
    for (int k = 0; k < kInputsPerModel; ++k) {
      auto future = run(ModelSet::kNames[m], expected.inputs[m][k], Priority::normal);
      expect_result(future, expected.outputs[m][k]);
    }
  const ExecutorStats one_by_one = ex->stats();
  EXPECT_EQ(one_by_one.pool_allocations - settled.pool_allocations, one_by_one.pool_reuses - settled.pool_reuses);
  EXPECT_EQ(one_by_one.pool_bytes_reserved, settled.pool_bytes_reserved);
  // Then all of them at once, in every class, and a refusal.
  std::vector<std::pair<std::future<Outputs>, const Outputs*>> last;
  for (int m = 0; m < 3; ++m)
    for (int k = 0; k < kInputsPerModel; ++k)
      last.emplace_back(run(ModelSet::kNames[m], expected.inputs[m][k], static_cast<Priority>(k % 3 - 1)),
                        &expected.outputs[m][k]);
  for (auto& [future, want] : last) expect_result(future, *want);
  EXPECT_THROW(ex->submit("conv", wrong_shape_of(expected.inputs[0][0])), Error);
  const ExecutorStats end = ex->stats();
  EXPECT_EQ(end.requests_completed - settled.requests_completed, 6u * kInputsPerModel);
  EXPECT_EQ(end.requests_failed, settled.requests_failed);

  // Shut down: no callback can come after this, so each watched request was completed exactly
  // once; every block and host buffer goes back to the allocator, none reported in use.
  ex->shutdown();
  std::uint64_t completed_twice = 0;
  for (const auto& client : slots)
    for (const auto& slot : client) completed_twice += slot->completions.load() != 1;
  EXPECT_EQ(completed_twice, 0u);
  ::testing::internal::CaptureStderr();
  ex.reset();
  const std::string destructor_said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(destructor_said.find("still in use"), std::string::npos) << destructor_said;
  EXPECT_EQ(ledger().totals().device_bytes, 0u);
  EXPECT_EQ(ledger().totals().host_bytes, 0u);
  EXPECT_EQ(ledger().totals().unknown_releases, 0u);
}

TEST(ExecutorStress, FaultsFromManyClientsLoseNothingAndChangeNoBits) { stress({}, kRequests); }

// The same mix with each model's stream on a worker of its own (ExecutorOptions::cpu_stream_shares):
// Steps of the three models run at once and after their launches return, while requests fail,
// expire, are dumped and restored; a quarter of the requests keeps CI's time in bounds. Four
// threads: shares of 2, 1 and 1, so a share above one splits kernels too.
TEST(ExecutorStress, WithStreamSharesFaultsLoseNothingAndChangeNoBits) { stress({4, true}, kRequests / 4); }
