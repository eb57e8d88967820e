// A pooling device allocator: keeps the blocks it handed out (used) and the blocks returned to it
// (free), and serves a request from the free set before asking the device. Inference asks for the
// same sizes every pass, so after the first requests nearly every allocation is a reuse.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"

namespace loom::runtime {

class MemoryPool;

// A block from the pool, returned to it when destroyed. Move-only.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(MemoryPool* pool, void* ptr, std::size_t bytes) noexcept : pool_(pool), ptr_(ptr), bytes_(bytes) {}
  PooledBuffer(PooledBuffer&& other) noexcept { *this = std::move(other); }
  PooledBuffer& operator=(PooledBuffer&& other) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { reset(); }

  void* get() const noexcept { return ptr_; }
  std::size_t bytes() const noexcept { return bytes_; }
  void reset() noexcept;

 private:
  friend class MemoryPool;
  MemoryPool* pool_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct PoolStats {
  std::uint64_t bytes_reserved = 0;  // held from the device, used + free
  std::uint64_t bytes_in_use = 0;
  std::uint64_t used_blocks = 0;
  std::uint64_t free_blocks = 0;
  std::uint64_t pending_blocks = 0;  // given back by release_after(), their events not yet reached
  std::uint64_t allocations = 0;     // acquire() calls served
  std::uint64_t reuses = 0;          // of those, served from the free set
};

class MemoryPool {
 public:
  explicit MemoryPool(backend::Backend& device) : device_(device) {}
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // The smallest free block of at least `bytes` (and at most twice that, so a small request does
  // not pin a huge block), else a new device block. When the device is out of memory, the free
  // blocks are given back and the allocation retried once; then Error(out_of_memory) is thrown.
  PooledBuffer acquire(std::size_t bytes);
  // Gives `buffer` back, but its block joins the free set only once every event in `after` has
  // been reached: work already queued on streams may still read or write it (a failed request's
  // Steps, the upload of its inputs, its transfers). Until then it is neither used nor free.
  // Never blocks; acquire() and trim() move the blocks whose events were reached to the free set.
  void release_after(PooledBuffer buffer, std::vector<std::unique_ptr<backend::Event>> after);
  PoolStats stats() const;
  // Gives every free block back to the device.
  void trim();

 private:
  friend class PooledBuffer;
  struct Pending {
    void* ptr = nullptr;
    std::size_t size = 0;
    std::vector<std::unique_ptr<backend::Event>> after;
  };
  void release(void* ptr) noexcept;
  void collect_pending_locked();
  void trim_locked();

  backend::Backend& device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;       // size -> block
  std::unordered_map<void*, std::size_t> used_;  // block -> size
  std::vector<Pending> pending_;                 // blocks waiting for their events
  PoolStats stats_;
};

// Bounds the bytes that request arenas hold together (ExecutorOptions::arena_memory_limit_bytes).
// A charge is taken before an arena is acquired from the pool and given back when the arena is
// released, so the bound counts the plan's arena sizes, not the pool's block sizes (a reused
// block may be up to twice the size asked for). Thread-safe: the pre-process and dispatcher
// threads charge, the post-process thread refunds.
class ArenaBudget {
 public:
  explicit ArenaBudget(std::uint64_t limit) noexcept : limit_(limit) {}
  ArenaBudget(const ArenaBudget&) = delete;
  ArenaBudget& operator=(const ArenaBudget&) = delete;

  bool limited() const noexcept { return limit_ != 0; }
  std::uint64_t limit() const noexcept { return limit_; }
  std::uint64_t held() const;
  // Takes `bytes` when they fit under the limit now (always, when unlimited); false otherwise.
  bool try_charge(std::uint64_t bytes);
  void refund(std::uint64_t bytes) noexcept;
  // Waits until some charge is refunded after `seen` (a refunds() value) or `timeout` passes.
  std::uint64_t refunds() const;
  void wait_for_refund(std::uint64_t seen, std::chrono::microseconds timeout) const;

 private:
  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  mutable std::condition_variable refunded_;
  std::uint64_t held_ = 0;
  std::uint64_t refunds_ = 0;
};

// A charge against an ArenaBudget, refunded when destroyed or reset. Move-only.
class BudgetCharge {
 public:
  BudgetCharge() = default;
  BudgetCharge(ArenaBudget* budget, std::uint64_t bytes) noexcept : budget_(budget), bytes_(bytes) {}
  BudgetCharge(BudgetCharge&& other) noexcept { *this = std::move(other); }
  BudgetCharge& operator=(BudgetCharge&& other) noexcept;
  BudgetCharge(const BudgetCharge&) = delete;
  BudgetCharge& operator=(const BudgetCharge&) = delete;
  ~BudgetCharge() { reset(); }

  void reset() noexcept;

 private:
  ArenaBudget* budget_ = nullptr;
  std::uint64_t bytes_ = 0;
};

// Host memory the device copies to and from fastest (pinned on CUDA), from
// Backend::allocate_host; freed when destroyed. Move-only.
class HostBuffer {
 public:
  HostBuffer() = default;
  // Throws what Backend::allocate_host throws.
  HostBuffer(backend::Backend& device, std::size_t bytes);
  HostBuffer(HostBuffer&& other) noexcept { *this = std::move(other); }
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  ~HostBuffer() { reset(); }

  std::byte* data() const noexcept { return data_; }
  std::size_t bytes() const noexcept { return bytes_; }
  void reset() noexcept;

 private:
  backend::Backend* device_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace loom::runtime
