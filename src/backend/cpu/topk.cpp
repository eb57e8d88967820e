// TopK by a partial sort of the indices of each slice along the axis. The order is total: by value
// (descending for largest, ascending otherwise), then by index ascending, as ONNX specifies for
// ties (NaN above every number); so the result is the same whether `sorted` is set or not.
#include "backend/cpu/topk.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/reduce_spec.hpp"

namespace loom::backend::cpu {
namespace {

class TopKKernel final : public OpKernel {
 public:
  explicit TopKKernel(const KernelSpec& spec) : OpKernel(spec), topk_(parse_topk_spec(spec)) {
    dtype_ = spec.inputs[0].dtype;
    if (dtype_ != DType::i64 && dtype_ != DType::i32) require_dtype(spec, spec.inputs[0], DType::f32, "X");
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    auto* indices = static_cast<std::int64_t*>(outputs[1]);
    switch (dtype_) {
      case DType::f32:
        top_k(static_cast<const float*>(inputs[0]), static_cast<float*>(outputs[0]), indices);
        break;
      case DType::i64:
        top_k(static_cast<const std::int64_t*>(inputs[0]), static_cast<std::int64_t*>(outputs[0]), indices);
        break;
      case DType::i32:
        top_k(static_cast<const std::int32_t*>(inputs[0]), static_cast<std::int32_t*>(outputs[0]), indices);
        break;
      default:
        break;  // rejected at creation
    }
  }

 private:
  template <class T>
  void top_k(const T* x, T* values, std::int64_t* indices) const {
    const auto [outer, length, inner] = topk_.view;
    const std::int64_t k = topk_.k;
    std::vector<std::int64_t> order(static_cast<std::size_t>(length));
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const T* in = x + o * length * inner + i;
        std::iota(order.begin(), order.end(), std::int64_t{0});
        const auto first = [&](std::int64_t a, std::int64_t b) {
          const T va = in[a * inner], vb = in[b * inner];
          if constexpr (std::is_floating_point_v<T>) {
            // NaN counts as larger than every number, which keeps the order strict.
            const bool na = std::isnan(va), nb = std::isnan(vb);
            if (na || nb) return na && nb ? a < b : (topk_.largest ? na : nb);
          }
          if (va != vb) return topk_.largest ? va > vb : va < vb;
          return a < b;
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), first);
        const std::int64_t out_base = o * k * inner + i;
        for (std::int64_t j = 0; j < k; ++j) {
          values[out_base + j * inner] = in[order[static_cast<std::size_t>(j)] * inner];
          indices[out_base + j * inner] = order[static_cast<std::size_t>(j)];
        }
      }
    }
  }

  TopKSpec topk_;
  DType dtype_ = DType::f32;
};

}  // namespace

std::unique_ptr<OpKernel> make_topk_kernel(const KernelSpec& spec) { return std::make_unique<TopKKernel>(spec); }

}  // namespace loom::backend::cpu
