// Unary math and the broadcasting binary ops (arithmetic, Pow, PRelu, comparison, logic). The
// constructor turns op type and dtypes into an enum and a broadcast plan; run_impl dispatches
// once on the dtype and runs a tight loop per op, split over the kernel's threads when large.
#include "backend/cpu/elementwise.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "backend/cpu/activation_math.hpp"
#include "backend/cpu/elementwise_support.hpp"
#include "backend/cpu/vector_math.hpp"
#include "graph/ops/elementwise_attrs.hpp"

namespace loom::backend::cpu {

void require_broadcast_output(const KernelSpec& spec, const Shape& out, const std::vector<Shape>& inputs) {
  std::size_t rank = 0;
  for (const Shape& in : inputs) rank = std::max(rank, in.rank());
  bool ok = out.rank() == rank;
  for (std::size_t i = 0; ok && i < rank; ++i) {
    std::int64_t dim = 1;
    for (const Shape& in : inputs) {
      const std::size_t lead = rank - in.rank();
      if (i < lead) continue;
      const std::int64_t d = in[i - lead];
      if (d == 1) continue;
      ok = ok && (dim == 1 || dim == d);
      dim = d;
    }
    ok = ok && out[i] == dim;
  }
  if (ok) return;
  std::string shapes;
  for (const Shape& in : inputs) shapes += (shapes.empty() ? "" : ", ") + in.to_string();
  throw_bad_shape(spec, "output " + out.to_string() + " is not the broadcast of the inputs (" + shapes + ")");
}

void require_dtype_in(const KernelSpec& spec, DType dtype, std::span<const DType> allowed, const char* role) {
  for (DType ok : allowed)
    if (dtype == ok) return;
  std::string list;
  for (DType ok : allowed) list += (list.empty() ? "" : ", ") + std::string(dtype_name(ok));
  std::string text =
      std::string(role) + ": dtype " + std::string(dtype_name(dtype)) + " is not supported (expects " + list + ")";
  if (dtype == DType::f16 || dtype == DType::bf16) text += "; 16-bit float math needs the CUDA backend";
  throw_unsupported(spec, text);
}

namespace {

// Relu and Neg: floats and signed integers (ONNX lists no unsigned type for them); Abs and Sign
// take every numeric dtype (identity / 0-or-1 on unsigned ones).
using SignedNumericDTypes = concat_dtypes_t<FloatDTypes, SignedIntegerDTypes>;
// Pow's base: the output takes its dtype.
using PowBaseDTypes = DTypeList<DType::f32, DType::f64, DType::i32, DType::i64>;
// Mod: f16 computes in float.
using ModDTypes = concat_dtypes_t<DTypeList<DType::f16>, ArithmeticDTypes>;
// Unary ops: the dtypes each group takes, and one list to dispatch over that covers them all.
using UnaryDTypes = AllDTypes;

// ---------------------------------------------------------------- unary

enum class UnaryFn {
  relu,
  leaky_relu,
  elu,
  sigmoid,
  hard_sigmoid,
  hard_swish,
  tanh,
  erf,
  softplus,
  gelu_erf,
  gelu_tanh,
  sqrt,
  reciprocal,
  exp,
  log,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  asinh,
  acosh,
  atanh,
  floor,
  ceil,
  round,
  sign,
  softsign,
  selu,
  thresholded_relu,
  celu,
  shrink,
  neg,
  abs,
  logical_not,
};

class UnaryKernel final : public OpKernel {
 public:
  explicit UnaryKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    const std::string& op = spec.node->op_type;
    const Attributes& attrs = spec.node->attrs;
    if (op == "Relu") {
      fn_ = UnaryFn::relu;
    } else if (op == "Neg") {
      fn_ = UnaryFn::neg;
    } else if (op == "Abs") {
      fn_ = UnaryFn::abs;
    } else if (op == "Not") {
      fn_ = UnaryFn::logical_not;
    } else if (op == "LeakyRelu") {
      fn_ = UnaryFn::leaky_relu, alpha_ = attrs.get_float("alpha", 0.01f);
    } else if (op == "Elu") {
      fn_ = UnaryFn::elu, alpha_ = attrs.get_float("alpha", 1.0f);
    } else if (op == "HardSigmoid") {
      fn_ = UnaryFn::hard_sigmoid, alpha_ = attrs.get_float("alpha", 0.2f), beta_ = attrs.get_float("beta", 0.5f);
    } else if (op == "HardSwish") {
      fn_ = UnaryFn::hard_swish;
    } else if (op == "Sigmoid") {
      fn_ = UnaryFn::sigmoid;
    } else if (op == "Tanh") {
      fn_ = UnaryFn::tanh;
    } else if (op == "Erf") {
      fn_ = UnaryFn::erf;
    } else if (op == "Softplus") {
      fn_ = UnaryFn::softplus;
    } else if (op == "Sqrt") {
      fn_ = UnaryFn::sqrt;
    } else if (op == "Reciprocal") {
      fn_ = UnaryFn::reciprocal;
    } else if (op == "Exp") {
      fn_ = UnaryFn::exp;
    } else if (op == "Log") {
      fn_ = UnaryFn::log;
    } else if (op == "Sin") {
      fn_ = UnaryFn::sin;
    } else if (op == "Cos") {
      fn_ = UnaryFn::cos;
    } else if (op == "Tan") {
      fn_ = UnaryFn::tan;
    } else if (op == "Asin") {
      fn_ = UnaryFn::asin;
    } else if (op == "Acos") {
      fn_ = UnaryFn::acos;
    } else if (op == "Atan") {
      fn_ = UnaryFn::atan;
    } else if (op == "Sinh") {
      fn_ = UnaryFn::sinh;
    } else if (op == "Cosh") {
      fn_ = UnaryFn::cosh;
    } else if (op == "Asinh") {
      fn_ = UnaryFn::asinh;
    } else if (op == "Acosh") {
      fn_ = UnaryFn::acosh;
    } else if (op == "Atanh") {
      fn_ = UnaryFn::atanh;
    } else if (op == "Floor") {
      fn_ = UnaryFn::floor;
    } else if (op == "Ceil") {
      fn_ = UnaryFn::ceil;
    } else if (op == "Round") {
      fn_ = UnaryFn::round;
    } else if (op == "Sign") {
      fn_ = UnaryFn::sign;
    } else if (op == "Softsign") {
      fn_ = UnaryFn::softsign;
    } else if (op == "Selu") {
      fn_ = UnaryFn::selu, alpha_ = attrs.get_float("alpha", 1.67326319217681884765625f),
      beta_ = attrs.get_float("gamma", 1.05070102214813232421875f);
    } else if (op == "ThresholdedRelu") {
      fn_ = UnaryFn::thresholded_relu, alpha_ = attrs.get_float("alpha", 1.0f);
    } else if (op == "Celu") {
      fn_ = UnaryFn::celu, alpha_ = attrs.get_float("alpha", 1.0f);
    } else if (op == "Shrink") {
      fn_ = UnaryFn::shrink, alpha_ = attrs.get_float("lambd", 0.5f), beta_ = attrs.get_float("bias", 0.0f);
    } else if (op == "Gelu") {
      const auto approximation = graph::gelu_approximation(attrs);
      if (!approximation)
        throw_unsupported(spec,
                          "approximate='" + attrs.get_string("approximate", "none") + "' (expects 'none' or 'tanh')");
      fn_ = *approximation == graph::GeluApproximation::tanh ? UnaryFn::gelu_tanh : UnaryFn::gelu_erf;
    } else {
      throw_unsupported(spec, "not a unary elementwise op");
    }
    dtype_ = spec.inputs[0].dtype;
    // Relu, Neg, Abs and Sign are exact in every dtype (16-bit floats and integers too); the rest
    // computes in f32 or f64.
    if (fn_ == UnaryFn::logical_not)
      require_dtype_in(spec, dtype_, {DType::boolean}, "input X");
    else if (fn_ == UnaryFn::relu || fn_ == UnaryFn::neg)
      require_dtype_in(spec, dtype_, SignedNumericDTypes::dtypes, "input X");
    else if (fn_ == UnaryFn::abs || fn_ == UnaryFn::sign)
      require_dtype_in(spec, dtype_, NumericDTypes::dtypes, "input X");
    else
      require_dtype_in(spec, dtype_, RealDTypes::dtypes, "input X");
    require_dtype(spec, spec.outputs[0], dtype_, "output Y");
    require_shape(spec, spec.outputs[0].shape, spec.inputs[0].shape, "output Y");
    count_ = spec.inputs[0].shape.numel();
    chunk_elements_ = chunk_elements(fn_);
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    // Sigmoid and Erf in f32 run on the vectorised functions the fusion epilogue shares.
    if (dtype_ == DType::f32 && (fn_ == UnaryFn::sigmoid || fn_ == UnaryFn::erf)) {
      const auto* x = static_cast<const float*>(inputs[0]);
      auto* y = static_cast<float*>(outputs[0]);
      const bool sigmoid = fn_ == UnaryFn::sigmoid;
      return parallel_for(count_, chunk_elements_, [&](std::int64_t begin, std::int64_t end) {
        if (sigmoid)
          sigmoid_array(x + begin, y + begin, end - begin);
        else
          erf_array(x + begin, y + begin, end - begin);
      });
    }
    UnaryDTypes::dispatch(dtype_, [&]<class T>(std::type_identity<T>) {
      run_typed(static_cast<const T*>(inputs[0]), static_cast<T*>(outputs[0]));
    });
  }

 private:
  template <class T, class F>
  void map(const T* x, T* y, F f) const {
    parallel_for(count_, chunk_elements_, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) y[i] = store<T>(f(load(x[i])));
    });
  }

  // Elements worth a thread of their own: many for the ops that cost a compare or a multiply,
  // fewer for those calling exp, erf, tanh and the like.
  static std::int64_t chunk_elements(UnaryFn fn) {
    switch (fn) {
      case UnaryFn::relu:
      case UnaryFn::neg:
      case UnaryFn::abs:
      case UnaryFn::logical_not:
      case UnaryFn::leaky_relu:
      case UnaryFn::hard_sigmoid:
      case UnaryFn::hard_swish:
      case UnaryFn::floor:
      case UnaryFn::ceil:
      case UnaryFn::round:
      case UnaryFn::sign:
      case UnaryFn::thresholded_relu:
      case UnaryFn::shrink:
        return std::int64_t{1} << 16;
      default:
        return std::int64_t{1} << 12;
    }
  }

  // Integers (and bool, for Not: fn_ tells it from u8) compute exactly; floats in compute_t<T>
  // (float for the 16-bit types).
  template <class T>
  void run_typed(const T* x, T* y) const {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<C>) {
      switch (fn_) {
        case UnaryFn::logical_not:
          return map(x, y, [](C v) { return static_cast<C>(v ? 0 : 1); });
        case UnaryFn::relu:
          return map(x, y, [](C v) { return v > 0 ? v : C{0}; });
        case UnaryFn::neg:
          return map(x, y, [](C v) { return wrap_neg(v); });
        case UnaryFn::abs:
          if constexpr (std::is_signed_v<C>)
            return map(x, y, [](C v) { return v < 0 ? wrap_neg(v) : v; });
          else
            return map(x, y, [](C v) { return v; });
        case UnaryFn::sign:
          if constexpr (std::is_signed_v<C>)
            return map(x, y, [](C v) { return static_cast<C>((v > 0) - (v < 0)); });
          else
            return map(x, y, [](C v) { return static_cast<C>(v > 0 ? 1 : 0); });
        default:
          return;  // rejected at creation
      }
    } else {
      const C alpha = static_cast<C>(alpha_), beta = static_cast<C>(beta_);
      constexpr C kZero = 0, kOne = 1;
      switch (fn_) {
        case UnaryFn::relu:
          return map(x, y, [](C v) { return relu(v); });
        case UnaryFn::neg:
          return map(x, y, [](C v) { return -v; });
        case UnaryFn::abs:
          return map(x, y, [](C v) { return std::fabs(v); });
        case UnaryFn::leaky_relu:
          return map(x, y, [=](C v) { return leaky_relu(v, alpha); });
        case UnaryFn::elu:
          return map(x, y, [=](C v) { return elu(v, alpha); });
        case UnaryFn::sigmoid:
          return map(x, y, [](C v) { return sigmoid(v); });
        case UnaryFn::hard_sigmoid:
          return map(x, y, [=](C v) { return hard_sigmoid(v, alpha, beta); });
        case UnaryFn::hard_swish:
          return map(x, y, [](C v) { return hard_swish(v); });
        case UnaryFn::tanh:
          return map(x, y, [](C v) { return std::tanh(v); });
        case UnaryFn::erf:
          return map(x, y, [](C v) { return std::erf(v); });
        case UnaryFn::softplus:
          return map(x, y, [](C v) { return softplus(v); });
        case UnaryFn::gelu_erf:
          return map(x, y, [](C v) { return gelu_erf(v); });
        case UnaryFn::gelu_tanh:
          return map(x, y, [](C v) { return gelu_tanh(v); });
        case UnaryFn::sqrt:
          return map(x, y, [](C v) { return std::sqrt(v); });
        case UnaryFn::reciprocal:
          return map(x, y, [](C v) { return kOne / v; });
        case UnaryFn::exp:
          return map(x, y, [](C v) { return std::exp(v); });
        case UnaryFn::log:
          return map(x, y, [](C v) { return std::log(v); });
        case UnaryFn::sin:
          return map(x, y, [](C v) { return std::sin(v); });
        case UnaryFn::cos:
          return map(x, y, [](C v) { return std::cos(v); });
        case UnaryFn::tan:
          return map(x, y, [](C v) { return std::tan(v); });
        case UnaryFn::asin:
          return map(x, y, [](C v) { return std::asin(v); });
        case UnaryFn::acos:
          return map(x, y, [](C v) { return std::acos(v); });
        case UnaryFn::atan:
          return map(x, y, [](C v) { return std::atan(v); });
        case UnaryFn::sinh:
          return map(x, y, [](C v) { return std::sinh(v); });
        case UnaryFn::cosh:
          return map(x, y, [](C v) { return std::cosh(v); });
        case UnaryFn::asinh:
          return map(x, y, [](C v) { return std::asinh(v); });
        case UnaryFn::acosh:
          return map(x, y, [](C v) { return std::acosh(v); });
        case UnaryFn::atanh:
          return map(x, y, [](C v) { return std::atanh(v); });
        case UnaryFn::floor:
          return map(x, y, [](C v) { return std::floor(v); });
        case UnaryFn::ceil:
          return map(x, y, [](C v) { return std::ceil(v); });
        case UnaryFn::round:
          return map(x, y, [](C v) { return std::nearbyint(v); });
        case UnaryFn::sign:
          return map(x, y, [](C v) { return v > kZero ? kOne : (v < kZero ? -kOne : v); });
        case UnaryFn::softsign:
          return map(x, y, [](C v) { return v / (kOne + std::fabs(v)); });
        case UnaryFn::selu:
          return map(x, y, [=](C v) { return beta * (v > kZero ? v : alpha * (std::exp(v) - kOne)); });
        case UnaryFn::thresholded_relu:
          return map(x, y, [=](C v) { return v > alpha ? v : kZero; });
        case UnaryFn::celu:
          return map(x, y,
                     [=](C v) { return std::max(kZero, v) + std::min(kZero, alpha * (std::exp(v / alpha) - kOne)); });
        case UnaryFn::shrink:
          return map(x, y, [=](C v) { return v < -alpha ? v + beta : (v > alpha ? v - beta : kZero); });
        case UnaryFn::logical_not:
          return;  // bool only
      }
    }
  }

  UnaryFn fn_ = UnaryFn::relu;
  DType dtype_ = DType::f32;
  float alpha_ = 0.0f;
  float beta_ = 0.0f;
  std::int64_t count_ = 0;
  std::int64_t chunk_elements_ = 0;
};

// IsNaN and IsInf (detect_negative, detect_positive): f32 in, bool out.
class FloatClassKernel final : public OpKernel {
 public:
  explicit FloatClassKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 1, 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "X");
    require_dtype_in(spec, spec.inputs[0].dtype, {DType::f32}, "input X");
    require_dtype(spec, spec.outputs[0], DType::boolean, "output Y");
    require_shape(spec, spec.outputs[0].shape, spec.inputs[0].shape, "output Y");
    nan_ = spec.node->op_type == "IsNaN";
    negative_ = spec.node->attrs.get_int("detect_negative", 1) != 0;
    positive_ = spec.node->attrs.get_int("detect_positive", 1) != 0;
    count_ = spec.inputs[0].shape.numel();
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<bool_t*>(outputs[0]);
    for (std::int64_t i = 0; i < count_; ++i) {
      const float v = x[i];
      y[i] = nan_ ? std::isnan(v) : std::isinf(v) && (v < 0.0f ? negative_ : positive_);
    }
  }

 private:
  bool nan_ = true, negative_ = true, positive_ = true;
  std::int64_t count_ = 0;
};

// ---------------------------------------------------------------- binary

enum class BinaryFn {
  add,
  sub,
  mul,
  div,
  pow,
  mod,  // fmod_ picks C fmod (sign of the dividend) over Python's floor mod (sign of the divisor)
  prelu,
  equal,
  less,
  greater,
  less_equal,
  greater_equal,
  logical_and,
  logical_or,
  logical_xor,
};

struct BinaryOpInfo {
  const char* op;
  BinaryFn fn;
};

constexpr BinaryOpInfo kBinaryOps[] = {
    {"Add", BinaryFn::add},
    {"Sub", BinaryFn::sub},
    {"Mul", BinaryFn::mul},
    {"Div", BinaryFn::div},
    {"Pow", BinaryFn::pow},
    {"Mod", BinaryFn::mod},
    {"PRelu", BinaryFn::prelu},
    {"Equal", BinaryFn::equal},
    {"Less", BinaryFn::less},
    {"Greater", BinaryFn::greater},
    {"LessOrEqual", BinaryFn::less_equal},
    {"GreaterOrEqual", BinaryFn::greater_equal},
    {"And", BinaryFn::logical_and},
    {"Or", BinaryFn::logical_or},
    {"Xor", BinaryFn::logical_xor},
};

bool is_comparison(BinaryFn fn) {
  return fn == BinaryFn::equal || fn == BinaryFn::less || fn == BinaryFn::greater || fn == BinaryFn::less_equal ||
         fn == BinaryFn::greater_equal;
}
bool is_logic(BinaryFn fn) {
  return fn == BinaryFn::logical_and || fn == BinaryFn::logical_or || fn == BinaryFn::logical_xor;
}

class BinaryKernel final : public OpKernel {
 public:
  explicit BinaryKernel(const KernelSpec& spec) : OpKernel(spec) {
    require_input_count(spec, 2, 2);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "A");
    require_present(spec, 1, "B");
    bool known = false;
    for (const BinaryOpInfo& info : kBinaryOps)
      if (spec.node->op_type == info.op) fn_ = info.fn, known = true;
    if (!known) throw_unsupported(spec, "not a binary elementwise op");

    const TensorDesc& a = spec.inputs[0];
    const TensorDesc& b = spec.inputs[1];
    const TensorDesc& out = spec.outputs[0];
    a_dtype_ = a.dtype;
    b_dtype_ = b.dtype;
    if (fn_ == BinaryFn::mod) {
      fmod_ = spec.node->attrs.get_int("fmod", 0) != 0;
      require_dtype_in(spec, a.dtype, ModDTypes::dtypes, "input A");
      require_dtype(spec, b, a.dtype, "input B");
    } else if (fn_ == BinaryFn::pow) {
      require_dtype_in(spec, a.dtype, PowBaseDTypes::dtypes, "input X (base)");
      require_dtype_in(spec, b.dtype, ArithmeticDTypes::dtypes, "input Y (exponent)");
    } else {
      if (fn_ == BinaryFn::prelu)
        require_dtype_in(spec, a.dtype, {DType::f32}, "input X");
      else if (is_logic(fn_))
        require_dtype_in(spec, a.dtype, {DType::boolean}, "input A");
      else if (fn_ == BinaryFn::equal)
        require_dtype_in(spec, a.dtype, AllDTypes::dtypes, "input A");
      else if (is_comparison(fn_))
        require_dtype_in(spec, a.dtype, NumericDTypes::dtypes, "input A");
      else
        require_dtype_in(spec, a.dtype, ArithmeticDTypes::dtypes, "input A");
      require_dtype(spec, b, a.dtype, "input B");
    }
    const DType out_dtype = is_comparison(fn_) || is_logic(fn_) ? DType::boolean : a.dtype;
    require_dtype(spec, out, out_dtype, "output");
    if (fn_ == BinaryFn::prelu)
      require_shape(spec, out.shape, a.shape, "output Y (PRelu keeps X's shape)");
    else
      require_broadcast_output(spec, out.shape, {a.shape, b.shape});
    plan_ = plan_broadcast<2>(spec, out.shape, {a.shape, b.shape});
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    const void* a = inputs[0];
    const void* b = inputs[1];
    void* c = outputs[0];
    if (fn_ == BinaryFn::mod) {
      ModDTypes::dispatch(a_dtype_, [&]<class T>(std::type_identity<T>) {
        const bool c_fmod = fmod_;
        broadcast_binary(plan_, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c),
                         [=](T x, T y) { return mod_of(x, y, c_fmod); });
      });
    } else if (fn_ == BinaryFn::pow) {
      PowBaseDTypes::dispatch(a_dtype_, [&]<class B>(std::type_identity<B>) {
        ArithmeticDTypes::dispatch(b_dtype_, [&]<class E>(std::type_identity<E>) {
          broadcast_binary(plan_, static_cast<const B*>(a), static_cast<const E*>(b), static_cast<B*>(c),
                           [](B x, E y) { return pow_of(x, y); });
        });
      });
    } else if (is_comparison(fn_) || is_logic(fn_)) {
      // bool and u8 share a storage type but compare differently: dispatch on the dtype itself.
      AllDTypes::dispatch_dtype(a_dtype_, [&]<DType D>(std::integral_constant<DType, D>) {
        using T = storage_t<D>;
        run_predicate<T, D == DType::boolean>(static_cast<const T*>(a), static_cast<const T*>(b),
                                              static_cast<bool_t*>(c));
      });
    } else {
      ArithmeticDTypes::dispatch(a_dtype_, [&]<class T>(std::type_identity<T>) {
        run_arithmetic(static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c));
      });
    }
  }

 private:
  // The output has the base's dtype. Float bases compute in double and round once; integer bases
  // raise exactly by squaring (integer exponent) or truncate the real power (float exponent).
  template <class B, class E>
  static B pow_of(B base, E exponent) {
    if constexpr (std::is_floating_point_v<B>)
      return static_cast<B>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    else if constexpr (std::is_integral_v<E>)
      return int_pow(base, static_cast<std::int64_t>(exponent));
    else
      return saturate_to_int<B>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }

  // Mod: integers take x % y (0 for y = 0, as integer Div), moved to the divisor's sign unless
  // c_fmod (unsigned ones have no sign to move); floats compute std::fmod in their compute type
  // (f32 for f16) and move it the same way.
  template <class T>
  static T mod_of(T x, T y, bool c_fmod) {
    if constexpr (std::is_integral_v<T>) {
      if (y == 0) return T{0};
      if constexpr (std::is_signed_v<T>) {
        if (y == -1) return T{0};  // x % -1 is 0, and INT_MIN % -1 would trap
        T r = static_cast<T>(x % y);
        if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
        return r;
      } else {
        return static_cast<T>(x % y);
      }
    } else {
      using C = compute_t<T>;
      const C a = load(x), b = load(y);
      C r = std::fmod(a, b);
      if (!c_fmod && r != C{0} && ((r < C{0}) != (b < C{0}))) r += b;
      return store<T>(r);
    }
  }

  template <class T>
  void run_arithmetic(const T* a, const T* b, T* c) const {
    if constexpr (std::is_integral_v<T>) {
      switch (fn_) {
        case BinaryFn::add:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return wrap_add(x, y); });
        case BinaryFn::sub:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return wrap_sub(x, y); });
        case BinaryFn::mul:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return wrap_mul(x, y); });
        case BinaryFn::div:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return int_div(x, y); });
        default:
          return;  // floats only (PRelu) or handled elsewhere
      }
    } else {
      switch (fn_) {
        case BinaryFn::add:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return x + y; });
        case BinaryFn::sub:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return x - y; });
        case BinaryFn::mul:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return x * y; });
        case BinaryFn::div:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) { return x / y; });
        case BinaryFn::prelu:
          return broadcast_binary(plan_, a, b, c, [](T x, T slope) { return x < T{0} ? slope * x : x; });
        default:
          return;
      }
    }
  }

  template <class T, bool kBool>
  void run_predicate(const T* a, const T* b, bool_t* c) const {
    if constexpr (kBool) {
      // Any nonzero byte is true.
      switch (fn_) {
        case BinaryFn::equal:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return !x == !y; });
        case BinaryFn::logical_and:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return x && y; });
        case BinaryFn::logical_or:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return x || y; });
        case BinaryFn::logical_xor:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return !x != !y; });
        default:
          return;  // orderings reject bool at creation
      }
    } else {
      switch (fn_) {
        case BinaryFn::equal:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return load(x) == load(y); });
        case BinaryFn::less:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return load(x) < load(y); });
        case BinaryFn::greater:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return load(x) > load(y); });
        case BinaryFn::less_equal:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return load(x) <= load(y); });
        case BinaryFn::greater_equal:
          return broadcast_binary(plan_, a, b, c, [](T x, T y) -> bool_t { return load(x) >= load(y); });
        default:
          return;  // logic ops are bool only
      }
    }
  }

  BinaryFn fn_ = BinaryFn::add;
  bool fmod_ = false;
  DType a_dtype_ = DType::f32;
  DType b_dtype_ = DType::f32;
  BroadcastPlan<2> plan_;
};

}  // namespace

std::unique_ptr<OpKernel> make_unary_kernel(const KernelSpec& spec) { return std::make_unique<UnaryKernel>(spec); }
std::unique_ptr<OpKernel> make_float_class_kernel(const KernelSpec& spec) {
  return std::make_unique<FloatClassKernel>(spec);
}
std::unique_ptr<OpKernel> make_binary_kernel(const KernelSpec& spec) { return std::make_unique<BinaryKernel>(spec); }

}  // namespace loom::backend::cpu
