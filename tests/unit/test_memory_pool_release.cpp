// MemoryPool::release_after: a block given back while work queued on streams may still use it (a
// failed request's arena) is reused only once every event recorded after that work is reached.
// The events here are stand-ins the test completes by hand, through the Backend's Event interface.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "backend/backend.hpp"
#include "runtime/memory_pool.hpp"

using namespace loom;

namespace {

// An event the test reaches by hand (a kernel still running until then).
class HeldEvent final : public backend::Event {
 public:
  explicit HeldEvent(std::shared_ptr<bool> reached, bool fail = false) : reached_(std::move(reached)), fail_(fail) {}
  void synchronize() override {
    if (fail_) throw std::runtime_error("device failed");
    *reached_ = true;
  }
  bool ready() override {
    if (fail_) throw std::runtime_error("device failed");
    return *reached_;
  }
  double microseconds_since(backend::Event&) override { return 0; }

 private:
  std::shared_ptr<bool> reached_;
  bool fail_;
};

std::vector<std::unique_ptr<backend::Event>> events(const std::vector<std::shared_ptr<bool>>& flags) {
  std::vector<std::unique_ptr<backend::Event>> out;
  for (const auto& flag : flags) out.push_back(std::make_unique<HeldEvent>(flag));
  return out;
}

TEST(MemoryPoolReleaseAfter, TheBlockIsReusedOnlyOnceEveryEventIsReached) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool pool(*cpu);
  auto steps_done = std::make_shared<bool>(false), upload_done = std::make_shared<bool>(false);
  auto arena = pool.acquire(4096);
  void* block = arena.get();
  pool.release_after(std::move(arena), events({steps_done, upload_done}));
  EXPECT_EQ(arena.get(), nullptr);
  auto stats = pool.stats();
  EXPECT_EQ(stats.used_blocks, 0u);
  EXPECT_EQ(stats.pending_blocks, 1u);
  EXPECT_EQ(stats.free_blocks, 0u);
  EXPECT_EQ(stats.bytes_in_use, 0u);

  // The Steps are still running: a new arena of the same size is a new block.
  auto other = pool.acquire(4096);
  EXPECT_NE(other.get(), block);
  other.reset();  // (a plain release goes straight to the free set)

  *steps_done = true;  // one of two streams is past the work
  auto again = pool.acquire(4096);
  EXPECT_NE(again.get(), block) << "the upload may still write into the block";
  EXPECT_EQ(pool.stats().pending_blocks, 1u);

  *upload_done = true;
  auto reused = pool.acquire(4096);
  EXPECT_EQ(reused.get(), block);
  stats = pool.stats();
  EXPECT_EQ(stats.pending_blocks, 0u);
  EXPECT_EQ(stats.used_blocks, 2u);
}

TEST(MemoryPoolReleaseAfter, NoEventsMeansFreeAtOnce) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool pool(*cpu);
  auto arena = pool.acquire(1000);
  void* block = arena.get();
  pool.release_after(std::move(arena), {});
  auto next = pool.acquire(1000);
  EXPECT_EQ(next.get(), block);
}

TEST(MemoryPoolReleaseAfter, TrimFreesOnlyBlocksWhoseWorkIsDone) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool pool(*cpu);
  auto done = std::make_shared<bool>(true), running = std::make_shared<bool>(false);
  pool.release_after(pool.acquire(1000), events({done}));
  pool.release_after(pool.acquire(2000), events({running}));
  const auto reserved = pool.stats().bytes_reserved;
  pool.trim();
  auto stats = pool.stats();
  EXPECT_EQ(stats.pending_blocks, 1u);
  EXPECT_EQ(stats.free_blocks, 0u);
  EXPECT_LT(stats.bytes_reserved, reserved);
  EXPECT_GE(stats.bytes_reserved, 2000u);  // the running block is still held
  *running = true;
  pool.trim();
  EXPECT_EQ(pool.stats().bytes_reserved, 0u);
}

TEST(MemoryPoolReleaseAfter, AFailedDeviceNeverHandsTheBlockOut) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool pool(*cpu);
  auto arena = pool.acquire(1000);
  void* block = arena.get();
  std::vector<std::unique_ptr<backend::Event>> failing;
  failing.push_back(std::make_unique<HeldEvent>(std::make_shared<bool>(false), /*fail=*/true));
  pool.release_after(std::move(arena), std::move(failing));
  auto next = pool.acquire(1000);
  EXPECT_NE(next.get(), block);
  EXPECT_EQ(pool.stats().pending_blocks, 1u);
}

TEST(MemoryPoolReleaseAfter, ABufferOfAnotherPoolGoesBackToItsOwn) {
  auto cpu = backend::make_cpu_backend();
  runtime::MemoryPool mine(*cpu), theirs(*cpu);
  auto arena = theirs.acquire(1000);
  auto still_running = std::make_shared<bool>(false);
  mine.release_after(std::move(arena), events({still_running}));
  EXPECT_EQ(mine.stats().pending_blocks, 0u);
  EXPECT_EQ(theirs.stats().free_blocks, 1u);
}

}  // namespace
