// A small seeded generator (SplitMix64): the same seed gives the same weights and inputs on every
// platform, which std::uniform_real_distribution does not promise.
#pragma once

#include <cstdint>

namespace loom {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) noexcept {
    const double unit = static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0);
    return static_cast<float>(lo + (hi - lo) * unit);
  }
  // Uniform integer in [lo, hi).
  std::int64_t integer(std::int64_t lo, std::int64_t hi) noexcept {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo));
  }

 private:
  std::uint64_t state_;
};

}  // namespace loom
