// The CPU backend's streams with stream workers on (issue 18 item 2): work queued for a worker
// thread of the stream's own, in order; events, cross-stream waits and timed events reached as
// the worker passes them; two streams' kernels running at the same time; a kernel's own calls on
// its stream run inline; a failing kernel fails only its FailureScope; destruction finishes the
// queue. Every wait is bounded: a broken stream fails a test instead of hanging it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/cpu_stream.hpp"
#include "backend/cpu/parallel.hpp"
#include "loom/error.hpp"
#include "test_support.hpp"

using namespace loom;
using namespace loom::backend;

namespace {

constexpr auto kBound = std::chrono::seconds(30);  // longer than any healthy wait here, by far

// A door the test opens; kernels wait at it, at most kBound.
class Gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    cv_.notify_all();
  }
  bool pass() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, kBound, [&] { return open_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
};

// A kernel whose run is a function of the test's, put in stream order the way the CPU backend
// puts its own (StreamOrderedKernel).
class FunctionKernel final : public OpKernel {
 public:
  using Body = std::function<void(std::span<const void* const>, std::span<void* const>, Stream&)>;
  FunctionKernel(const KernelSpec& spec, Body body) : OpKernel(spec), body_(std::move(body)) {}

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream& stream) override {
    body_(inputs, outputs, stream);
  }

 private:
  Body body_;
};

struct TestKernel {
  Node node{"TestOp", "test", {}, {}, {}};
  std::unique_ptr<OpKernel> kernel;

  explicit TestKernel(FunctionKernel::Body body) {
    KernelSpec spec;
    spec.node = &node;
    kernel = std::make_unique<cpu::StreamOrderedKernel>(spec, std::make_unique<FunctionKernel>(spec, std::move(body)));
  }
  void run(Stream& stream) { kernel->run({}, {}, nullptr, stream); }
};

std::unique_ptr<Backend> backend_with_workers(bool workers, std::size_t threads = 2) {
  auto backend = make_cpu_backend();
  backend->set_host_threading({threads, workers});
  return backend;
}

// A stream of `backend` given a share: with stream workers on, it has a worker from now on.
std::unique_ptr<Stream> shared_stream(Backend& backend, std::size_t share = 1) {
  auto stream = backend.create_stream();
  stream->set_thread_share(share);
  return stream;
}

// A backend with stream workers on and one of its streams, running on its worker.
struct WorkerStream {
  std::unique_ptr<Backend> backend = backend_with_workers(true);
  std::unique_ptr<Stream> stream = shared_stream(*backend);
};

TEST(CpuStreamWorkers, CapabilitiesFollowTheMode) {
  EXPECT_TRUE(backend_with_workers(false)->capabilities().synchronous_launches);
  EXPECT_FALSE(backend_with_workers(true)->capabilities().synchronous_launches);
  EXPECT_EQ(backend_with_workers(false, 3)->host_threads(), 3u);
  // 0 resolves to the cores this process may use.
  EXPECT_EQ(backend_with_workers(false, 0)->host_threads(), static_cast<std::size_t>(cpu::cores_available()));
}

TEST(CpuStreamWorkers, ReferenceModeRunsEveryCallOnTheCaller) {
  auto backend = backend_with_workers(false);
  auto stream = shared_stream(*backend);  // a share alone does not make it asynchronous
  std::thread::id ran_on;
  TestKernel k([&](auto, auto, Stream&) { ran_on = std::this_thread::get_id(); });
  k.run(*stream);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_TRUE(stream->record()->ready());
}

TEST(CpuStreamWorkers, WorkRunsInOrderOnOneWorkerAndSynchronizeWaitsForIt) {
  WorkerStream w;
  Gate gate;
  std::vector<int> order;  // written by the worker only; read after synchronize()
  std::vector<std::thread::id> threads;
  int value = 0, copied = -1;
  TestKernel hold([&](auto, auto, Stream&) { ASSERT_TRUE(gate.pass()); });
  hold.run(*w.stream);
  std::vector<std::unique_ptr<TestKernel>> steps;  // a kernel outlives the work queued for it
  for (int i = 0; i < 50; ++i) {
    steps.push_back(std::make_unique<TestKernel>([&, i](auto, auto, Stream&) {
      order.push_back(i);
      threads.push_back(std::this_thread::get_id());
      value = i;
    }));
    steps.back()->run(*w.stream);
    // The copy reads `value` when the worker reaches it: after step i, before step i + 1.
    if (i == 20) w.stream->copy_on_device(&copied, &value, sizeof value);
  }
  auto done = w.stream->record();
  EXPECT_FALSE(done->ready());  // everything waits behind the gate
  gate.open();
  w.stream->synchronize();
  EXPECT_TRUE(done->ready());
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(copied, 20);
  for (const auto& id : threads) {
    EXPECT_EQ(id, threads.front());
    EXPECT_NE(id, std::this_thread::get_id());
  }
}

TEST(CpuStreamWorkers, AStreamWaitingForAnotherStreamsEventRunsAfterIt) {
  auto backend = backend_with_workers(true);
  auto a = shared_stream(*backend);
  auto b = shared_stream(*backend);
  Gate gate;
  int produced = 0, consumed = -1;
  TestKernel produce([&](auto, auto, Stream&) {
    ASSERT_TRUE(gate.pass());
    produced = 42;
  });
  TestKernel consume([&](auto, auto, Stream&) { consumed = produced; });
  produce.run(*a);
  auto a_done = a->record();
  b->wait(*a_done);
  consume.run(*b);
  auto b_done = b->record();
  // A is held at the gate, so nothing after the wait on B may have run.
  EXPECT_FALSE(a_done->ready());
  EXPECT_FALSE(b_done->ready());
  EXPECT_EQ(consumed, -1);
  gate.open();
  b_done->synchronize();
  EXPECT_TRUE(a_done->ready());
  EXPECT_EQ(consumed, 42);
  // A synchronous stream of the same backend waiting for an asynchronous one waits on the host.
  auto reference = backend->create_stream();
  TestKernel late([&](auto, auto, Stream&) { produced = 7; });
  late.run(*a);
  reference->wait(*a->record());
  EXPECT_EQ(produced, 7);
}

TEST(CpuStreamWorkers, TimedEventsAreStampedWhenTheWorkerReachesThem) {
  WorkerStream w;
  Gate gate;
  auto before = w.stream->record_timed();
  TestKernel hold([&](auto, auto, Stream&) { ASSERT_TRUE(gate.pass()); });
  hold.run(*w.stream);
  auto after = w.stream->record_timed();
  EXPECT_FALSE(after->ready());
  gate.open();
  after->synchronize();
  EXPECT_GE(after->microseconds_since(*before), 0.0);
  // A synchronous stream's timed event is on the same clock.
  auto host = w.backend->create_stream()->record_timed();
  EXPECT_GE(host->microseconds_since(*after), 0.0);
  auto untimed = w.stream->record();
  untimed->synchronize();
  EXPECT_EQ(test_support::code_of([&] { (void)after->microseconds_since(*untimed); }), ErrorCode::invalid_argument);
}

TEST(CpuStreamWorkers, TwoStreamsRunTheirKernelsAtTheSameTime) {
  // Each kernel waits until the other has started: they can only both finish when they run
  // concurrently, on the two streams' own workers.
  auto backend = backend_with_workers(true);
  auto a = shared_stream(*backend);
  auto b = shared_stream(*backend);
  std::mutex mutex;
  std::condition_variable cv;
  int started = 0;
  std::atomic<int> met{0};
  const auto rendezvous = [&](auto, auto, Stream&) {
    std::unique_lock lock(mutex);
    ++started;
    cv.notify_all();
    if (cv.wait_for(lock, kBound, [&] { return started == 2; })) ++met;
  };
  TestKernel on_a(rendezvous), on_b(rendezvous);
  on_a.run(*a);
  on_b.run(*b);
  a->synchronize();
  b->synchronize();
  EXPECT_EQ(met.load(), 2);
}

TEST(CpuStreamWorkers, CallsAKernelMakesOnItsOwnStreamRunInline) {
  // A control-flow kernel runs its body's kernels, copies and host reads on the stream it runs
  // on: on the worker they must run in place, not be queued behind the kernel (a deadlock).
  WorkerStream w;
  int source = 5, target = 0, inner_ran = 0;
  bool inner_done_at_return = false, copy_done_at_return = false, event_ready = false;
  TestKernel inner([&](auto, auto, Stream&) { inner_ran = 1; });
  TestKernel outer([&](auto, auto, Stream& s) {
    inner.run(s);
    inner_done_at_return = inner_ran == 1;
    s.copy_on_device(&target, &source, sizeof source);
    copy_done_at_return = target == 5;
    event_ready = s.record()->ready();
    s.synchronize();  // returns at once: what came before on this stream is done
  });
  outer.run(*w.stream);
  w.stream->synchronize();
  EXPECT_TRUE(inner_done_at_return);
  EXPECT_TRUE(copy_done_at_return);
  EXPECT_TRUE(event_ready);
}

TEST(CpuStreamWorkers, AFailingKernelFailsOnlyItsScopeAndTheStreamCarriesOn) {
  WorkerStream w;
  auto bad = std::make_shared<FailureScope>();
  auto good = std::make_shared<FailureScope>();
  bool bad_later_ran = false, good_ran = false, unscoped_ran = false;
  TestKernel fail([&](auto, auto, Stream&) { throw Error(ErrorCode::invalid_argument, "request 7: index 9 of 4"); });
  TestKernel bad_later([&](auto, auto, Stream&) { bad_later_ran = true; });
  TestKernel good_work([&](auto, auto, Stream&) { good_ran = true; });
  TestKernel unscoped([&](auto, auto, Stream&) { unscoped_ran = true; });
  w.stream->set_failure_scope(bad);
  fail.run(*w.stream);  // returns: the failure happens later, on the worker
  auto after_failure = w.stream->record();
  w.stream->set_failure_scope(good);
  good_work.run(*w.stream);
  w.stream->set_failure_scope(bad);
  bad_later.run(*w.stream);  // skipped: its scope failed before it
  w.stream->set_failure_scope(nullptr);
  unscoped.run(*w.stream);
  EXPECT_NO_THROW(w.stream->synchronize());  // scoped failures are the scope's, not the stream's
  EXPECT_TRUE(after_failure->ready());       // events are reached whatever failed before them
  ASSERT_TRUE(bad->failed());
  try {
    std::rethrow_exception(bad->failure());
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("request 7: index 9 of 4"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(good->failed());
  EXPECT_FALSE(bad_later_ran);
  EXPECT_TRUE(good_ran);
  EXPECT_TRUE(unscoped_ran);
}

TEST(CpuStreamWorkers, AnUnscopedFailureIsRethrownByTheNextSynchronizeOnce) {
  WorkerStream w;
  TestKernel fail([&](auto, auto, Stream&) { throw Error(ErrorCode::backend, "broken kernel"); });
  fail.run(*w.stream);
  test_support::expect_error([&] { w.stream->synchronize(); }, ErrorCode::backend, {"broken kernel"});
  EXPECT_NO_THROW(w.stream->synchronize());
  // A synchronous launch throws at the caller, as it always did.
  auto reference = w.backend->create_stream();
  EXPECT_EQ(test_support::code_of([&] { fail.run(*reference); }), ErrorCode::backend);
}

TEST(CpuStreamWorkers, DestroyingAStreamFinishesWhatIsQueued) {
  auto backend = backend_with_workers(true);
  std::atomic<int> ran{0};
  std::unique_ptr<Event> last;
  {
    auto stream = shared_stream(*backend);
    TestKernel count([&](auto, auto, Stream&) { ++ran; });
    for (int i = 0; i < 200; ++i) count.run(*stream);
    last = stream->record();
  }
  EXPECT_EQ(ran.load(), 200);
  EXPECT_TRUE(last->ready());  // an event outlives its stream, reached
}

TEST(CpuStreamWorkers, KernelsRunOnTheirStreamsShareOfThreads) {
  // The share is what each kernel sees as its thread count (OpenMP builds; 1 without OpenMP), on
  // the worker and inline alike, and a synchronous launch leaves the caller's own setting alone.
  const int caller_threads = cpu::kernel_threads();
  for (const bool workers : {false, true}) {
    auto backend = backend_with_workers(workers, 4);
    auto stream = shared_stream(*backend, 3);
    int seen = 0;
    TestKernel look([&](auto, auto, Stream&) { seen = cpu::kernel_threads(); });
    look.run(*stream);
    stream->synchronize();
    EXPECT_EQ(seen, cpu::openmp_enabled() ? 3 : 1) << (workers ? "worker" : "inline");
    stream->set_thread_share(0);  // back to the backend's count
    look.run(*stream);
    stream->synchronize();
    EXPECT_EQ(seen, cpu::openmp_enabled() ? 4 : 1) << (workers ? "worker" : "inline");
    EXPECT_EQ(cpu::kernel_threads(), caller_threads);
  }
}

TEST(CpuStreamWorkers, ConvertRunsInStreamOrder) {
  WorkerStream w;
  Gate gate;
  float source[4] = {1.5f, -2.0f, 0.25f, 8.0f};
  std::uint16_t half[4] = {};
  float back[4] = {};
  TestKernel hold([&](auto, auto, Stream&) { ASSERT_TRUE(gate.pass()); });
  hold.run(*w.stream);
  w.backend->convert(source, DType::f32, half, DType::f16, 4, *w.stream);
  w.backend->convert(half, DType::f16, back, DType::f32, 4, *w.stream);
  auto done = w.stream->record();
  EXPECT_FALSE(done->ready());
  gate.open();
  w.stream->synchronize();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(back[i], source[i]);
}

}  // namespace
