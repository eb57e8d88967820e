// Activations and broadcasting Add/Mul. The binary ops collapse the broadcast into as few
// dimensions as possible so the inner loop is long and contiguous (e.g. a bias add becomes one
// loop over the feature dimension per row).
#include "backend/cpu/elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/activation_math.hpp"
#include "backend/cpu/kernel_support.hpp"

namespace loom::backend::cpu {
namespace {

enum class Activation { relu, sigmoid, tanh, gelu_erf, gelu_tanh };

class UnaryKernel final : public OpKernel {
 public:
  explicit UnaryKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_f32(spec);
    require_shape(spec, spec.outputs[0].shape, spec.inputs[0].shape, "output Y");
    count_ = spec.inputs[0].shape.numel();
    const std::string& op = spec.node->op_type;
    if (op == "Relu") {
      activation_ = Activation::relu;
    } else if (op == "Sigmoid") {
      activation_ = Activation::sigmoid;
    } else if (op == "Tanh") {
      activation_ = Activation::tanh;
    } else if (op == "Gelu") {
      const std::string approximate = spec.node->attrs.get_string("approximate", "none");
      if (approximate == "none")
        activation_ = Activation::gelu_erf;
      else if (approximate == "tanh")
        activation_ = Activation::gelu_tanh;
      else
        throw_unsupported(spec, "approximate='" + approximate + "' (expects 'none' or 'tanh')");
    } else {
      throw_unsupported(spec, "not an activation op");
    }
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const float* x = static_cast<const float*>(inputs[0]);
    float* y = static_cast<float*>(outputs[0]);
    const std::int64_t n = count_;
    switch (activation_) {
      case Activation::relu:
        for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
      case Activation::sigmoid:
        for (std::int64_t i = 0; i < n; ++i) y[i] = sigmoid(x[i]);
        break;
      case Activation::tanh:
        for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
        break;
      case Activation::gelu_erf: {
        constexpr float kInvSqrt2 = 0.70710678118654752f;
        for (std::int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.0f + std::erf(x[i] * kInvSqrt2));
        break;
      }
      case Activation::gelu_tanh: {
        constexpr float kSqrt2OverPi = 0.79788456080286536f;
        for (std::int64_t i = 0; i < n; ++i) {
          const float v = x[i];
          y[i] = 0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * (v + 0.044715f * v * v * v)));
        }
        break;
      }
    }
  }

 private:
  Activation activation_ = Activation::relu;
  std::int64_t count_ = 0;
};

// The output iterated as dims (row-major), with each input's element stride per dim (0 where
// broadcast). Adjacent dims are merged wherever both inputs walk them contiguously.
struct BroadcastLoop {
  std::vector<std::int64_t> dims;
  std::vector<std::int64_t> a_strides;
  std::vector<std::int64_t> b_strides;
};

BroadcastLoop collapse(const Shape& out, const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  BroadcastLoop loop;
  for (std::size_t i = 0; i < out.rank(); ++i) {
    if (out[i] == 1) continue;  // contributes nothing to any offset
    if (!loop.dims.empty()) {
      const std::int64_t dim = out[i];
      const bool mergeable = loop.a_strides.back() == a[i] * dim && loop.b_strides.back() == b[i] * dim;
      if (mergeable) {
        loop.dims.back() *= dim;
        loop.a_strides.back() = a[i];
        loop.b_strides.back() = b[i];
        continue;
      }
    }
    loop.dims.push_back(out[i]);
    loop.a_strides.push_back(a[i]);
    loop.b_strides.push_back(b[i]);
  }
  return loop;
}

template <class T, class Op>
void run_broadcast(const BroadcastLoop& loop, const T* a, const T* b, T* out, Op op) {
  if (loop.dims.empty()) {
    out[0] = op(a[0], b[0]);
    return;
  }
  const std::size_t rank = loop.dims.size();
  const std::int64_t n = loop.dims.back();
  const std::int64_t sa = loop.a_strides.back();
  const std::int64_t sb = loop.b_strides.back();
  std::int64_t outer = 1;
  for (std::size_t d = 0; d + 1 < rank; ++d) outer *= loop.dims[d];
  std::vector<std::int64_t> index(rank, 0);
  std::int64_t a_offset = 0;
  std::int64_t b_offset = 0;
  for (std::int64_t o = 0; o < outer; ++o) {
    const T* pa = a + a_offset;
    const T* pb = b + b_offset;
    // Specialised inner loops: these are the ones the compiler vectorises.
    if (sa == 1 && sb == 1) {
      for (std::int64_t j = 0; j < n; ++j) out[j] = op(pa[j], pb[j]);
    } else if (sa == 1 && sb == 0) {
      const T vb = pb[0];
      for (std::int64_t j = 0; j < n; ++j) out[j] = op(pa[j], vb);
    } else if (sa == 0 && sb == 1) {
      const T va = pa[0];
      for (std::int64_t j = 0; j < n; ++j) out[j] = op(va, pb[j]);
    } else {
      for (std::int64_t j = 0; j < n; ++j) out[j] = op(pa[j * sa], pb[j * sb]);
    }
    out += n;
    // Advance the multi-index over the outer dims, odometer style.
    for (std::size_t d = rank - 1; d-- > 0;) {
      a_offset += loop.a_strides[d];
      b_offset += loop.b_strides[d];
      if (++index[d] < loop.dims[d]) break;
      a_offset -= loop.a_strides[d] * loop.dims[d];
      b_offset -= loop.b_strides[d] * loop.dims[d];
      index[d] = 0;
    }
  }
}

class BinaryKernel final : public OpKernel {
 public:
  explicit BinaryKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "A");
    require_present(spec, 1, "B");
    dtype_ = spec.outputs[0].dtype;
    if (dtype_ != DType::f32 && dtype_ != DType::i64 && dtype_ != DType::i32)
      require_dtype(spec, spec.outputs[0], DType::f32, "output C");  // throws with the f16 hint
    require_dtype(spec, spec.inputs[0], dtype_, "input A");
    require_dtype(spec, spec.inputs[1], dtype_, "input B");
    is_add_ = spec.node->op_type == "Add";
    if (!is_add_ && spec.node->op_type != "Mul") throw_unsupported(spec, "not a binary arithmetic op");
    const Shape& out = spec.outputs[0].shape;
    const auto a = broadcast_strides(spec.inputs[0].shape, out);
    const auto b = broadcast_strides(spec.inputs[1].shape, out);
    if (!a || !b)
      throw_bad_shape(spec, "inputs " + spec.inputs[0].shape.to_string() + " and " +
                                spec.inputs[1].shape.to_string() + " do not broadcast to output " +
                                out.to_string());
    // Every output dim must come from an input: broadcasting never grows a dim both inputs lack.
    for (std::size_t i = 0; i < out.rank(); ++i) {
      const auto from_input = [&](const Shape& in) {
        const std::size_t offset = out.rank() - in.rank();
        return i >= offset && in[i - offset] == out[i];
      };
      if (out[i] != 1 && !from_input(spec.inputs[0].shape) && !from_input(spec.inputs[1].shape))
        throw_bad_shape(spec, "output shape " + out.to_string() + " is not the broadcast of the inputs");
    }
    empty_ = out.numel() == 0;
    loop_ = collapse(out, *a, *b);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    if (empty_) return;
    switch (dtype_) {
      case DType::f32: run_typed<float>(inputs, outputs); break;
      case DType::i64: run_typed<std::int64_t>(inputs, outputs); break;
      case DType::i32: run_typed<std::int32_t>(inputs, outputs); break;
      default: break;  // rejected at creation
    }
  }

 private:
  template <class T>
  void run_typed(std::span<const void* const> inputs, std::span<void* const> outputs) const {
    const T* a = static_cast<const T*>(inputs[0]);
    const T* b = static_cast<const T*>(inputs[1]);
    T* out = static_cast<T*>(outputs[0]);
    // Integer arithmetic wraps (two's complement) instead of overflowing into undefined behaviour.
    using Arith = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                              std::type_identity<T>>::type;
    if (is_add_)
      run_broadcast(loop_, a, b, out, [](T x, T y) { return static_cast<T>(Arith(x) + Arith(y)); });
    else
      run_broadcast(loop_, a, b, out, [](T x, T y) { return static_cast<T>(Arith(x) * Arith(y)); });
  }

  DType dtype_ = DType::f32;
  bool is_add_ = true;
  bool empty_ = false;
  BroadcastLoop loop_;
};

}  // namespace

std::unique_ptr<OpKernel> make_unary_kernel(const KernelSpec& spec) { return std::make_unique<UnaryKernel>(spec); }
std::unique_ptr<OpKernel> make_binary_kernel(const KernelSpec& spec) { return std::make_unique<BinaryKernel>(spec); }

}  // namespace loom::backend::cpu
