// A pooling device allocator: keeps the blocks it handed out (used) and the blocks returned to it
// (free), and serves a request from the free set before asking the device. Inference asks for the
// same sizes every pass, so after the first requests nearly every allocation is a reuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>

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
  MemoryPool* pool_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

struct PoolStats {
  std::uint64_t bytes_reserved = 0;  // held from the device, used + free
  std::uint64_t bytes_in_use = 0;
  std::uint64_t used_blocks = 0;
  std::uint64_t free_blocks = 0;
  std::uint64_t allocations = 0;  // acquire() calls served
  std::uint64_t reuses = 0;       // of those, served from the free set
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
  PoolStats stats() const;
  // Gives every free block back to the device.
  void trim();

 private:
  friend class PooledBuffer;
  void release(void* ptr) noexcept;
  void trim_locked();

  backend::Backend& device_;
  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;       // size -> block
  std::unordered_map<void*, std::size_t> used_;  // block -> size
  PoolStats stats_;
};

}  // namespace loom::runtime
