// Det: each matrix is copied to double and reduced by Gaussian elimination with partial pivoting;
// the determinant is the product of the pivots, negated once per row swap.
#include "backend/cpu/det.hpp"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "backend/cpu/kernel_support.hpp"

namespace loom::backend::cpu {
namespace {

class DetKernel final : public OpKernel {
 public:
  explicit DetKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_f32(spec);
    const Shape& x = spec.inputs[0].shape;
    const std::size_t r = x.rank();
    if (r < 2 || x[r - 1] != x[r - 2]) throw_bad_shape(spec, "X must be [..., M, M], got " + x.to_string());
    size_ = x[r - 1];
    const Shape batch(std::vector<std::int64_t>(x.dims().begin(), x.dims().end() - 2));
    require_shape(spec, spec.outputs[0].shape, batch, "output");
    count_ = batch.numel();
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const std::int64_t n = size_;
    std::vector<double> a(static_cast<std::size_t>(n * n));
    for (std::int64_t m = 0; m < count_; ++m) {
      for (std::int64_t i = 0; i < n * n; ++i) a[static_cast<std::size_t>(i)] = x[m * n * n + i];
      y[m] = static_cast<float>(determinant(a, n));
    }
  }

 private:
  static double determinant(std::vector<double>& a, std::int64_t n) {
    const auto at = [&](std::int64_t r, std::int64_t c) -> double& { return a[static_cast<std::size_t>(r * n + c)]; };
    double det = 1.0;
    for (std::int64_t col = 0; col < n; ++col) {
      std::int64_t pivot = col;
      for (std::int64_t r = col + 1; r < n; ++r)
        if (std::fabs(at(r, col)) > std::fabs(at(pivot, col))) pivot = r;
      if (at(pivot, col) == 0.0) return 0.0;
      if (pivot != col) {
        for (std::int64_t c = 0; c < n; ++c) std::swap(at(pivot, c), at(col, c));
        det = -det;
      }
      det *= at(col, col);
      for (std::int64_t r = col + 1; r < n; ++r) {
        const double factor = at(r, col) / at(col, col);
        for (std::int64_t c = col; c < n; ++c) at(r, c) -= factor * at(col, c);
      }
    }
    return det;
  }

  std::int64_t size_ = 0, count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_det_kernel(const KernelSpec& spec) { return std::make_unique<DetKernel>(spec); }

}  // namespace loom::backend::cpu
