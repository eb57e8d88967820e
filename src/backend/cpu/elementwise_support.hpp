// What the CPU elementwise kernels share: numpy broadcasting over N inputs walked as long
// contiguous runs, storage <-> compute type conversion (16-bit floats compute in float), dtype
// dispatch, and the integer rules C leaves undefined (wrapping, division by 0, float -> int).
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {

// ---- storage and compute types ----

// bool tensors hold one byte per element (0 or 1).
using bool_t = std::uint8_t;

template <class T>
struct compute_of {
  using type = T;
};
template <>
struct compute_of<f16_t> {
  using type = float;
};
template <>
struct compute_of<bf16_t> {
  using type = float;
};
template <class T>
using compute_t = typename compute_of<T>::type;

template <class T>
inline compute_t<T> load(T v) {
  return widen(v);
}
template <class T>
inline T store(compute_t<T> v) {
  return narrow<T>(v);
}

// Calls f(std::type_identity<T>{}) for the first T among Ts that stores `dtype` (dtype_matches:
// std::uint8_t serves bool and u8 alike, so a kernel listing it must tell them apart itself, or
// accept only one of them at creation); returns false (calling nothing) when none matches. Only
// the listed types are instantiated.
template <class... Ts, class F>
bool dispatch(DType dtype, F&& f) {
  return ((dtype_matches<Ts>(dtype) ? (f(std::type_identity<Ts>{}), true) : false) || ...);
}

inline bool is_integer_dtype(DType dtype) { return dtype == DType::i64 || dtype == DType::i32; }

// The C++ type each DType is stored as (bool and u8 both as std::uint8_t).
template <DType D>
struct storage_of;
template <>
struct storage_of<DType::f32> {
  using type = float;
};
template <>
struct storage_of<DType::f16> {
  using type = f16_t;
};
template <>
struct storage_of<DType::bf16> {
  using type = bf16_t;
};
template <>
struct storage_of<DType::f64> {
  using type = double;
};
template <>
struct storage_of<DType::i8> {
  using type = std::int8_t;
};
template <>
struct storage_of<DType::u8> {
  using type = std::uint8_t;
};
template <>
struct storage_of<DType::i16> {
  using type = std::int16_t;
};
template <>
struct storage_of<DType::u16> {
  using type = std::uint16_t;
};
template <>
struct storage_of<DType::i32> {
  using type = std::int32_t;
};
template <>
struct storage_of<DType::u32> {
  using type = std::uint32_t;
};
template <>
struct storage_of<DType::i64> {
  using type = std::int64_t;
};
template <>
struct storage_of<DType::u64> {
  using type = std::uint64_t;
};
template <>
struct storage_of<DType::boolean> {
  using type = bool_t;
};
template <DType D>
using storage_t = typename storage_of<D>::type;

// A set of dtypes a kernel accepts, named once: `dtypes` for the check at creation
// (require_dtype_in), dispatch() to run a templated body on the storage type of the one that
// matches exactly (no bool/u8 ambiguity), dispatch_dtype() to hand it the DType itself
// (std::integral_constant<DType, D>) where bool and u8 must differ. Both return false when none
// matches.
template <DType... Ds>
struct DTypeList {
  static constexpr std::array<DType, sizeof...(Ds)> dtypes{Ds...};
  static constexpr bool contains(DType dtype) noexcept { return ((dtype == Ds) || ...); }
  template <class F>
  static bool dispatch(DType dtype, F&& f) {
    return ((dtype == Ds ? (f(std::type_identity<storage_t<Ds>>{}), true) : false) || ...);
  }
  template <class F>
  static bool dispatch_dtype(DType dtype, F&& f) {
    return ((dtype == Ds ? (f(std::integral_constant<DType, Ds>{}), true) : false) || ...);
  }
};
template <class A, class B>
struct concat_dtypes;
template <DType... As, DType... Bs>
struct concat_dtypes<DTypeList<As...>, DTypeList<Bs...>> {
  using type = DTypeList<As..., Bs...>;
};
template <class A, class B>
using concat_dtypes_t = typename concat_dtypes<A, B>::type;

using IntegerDTypes =
    DTypeList<DType::i8, DType::u8, DType::i16, DType::u16, DType::i32, DType::u32, DType::i64, DType::u64>;
using SignedIntegerDTypes = DTypeList<DType::i8, DType::i16, DType::i32, DType::i64>;
// The floats the CPU computes in: f32 and f64 (16-bit floats only where a kernel lists them).
using RealDTypes = DTypeList<DType::f32, DType::f64>;
using FloatDTypes = DTypeList<DType::f32, DType::f16, DType::bf16, DType::f64>;
// f32, f64 and every integer: the arithmetic ops' set.
using ArithmeticDTypes = concat_dtypes_t<RealDTypes, IntegerDTypes>;
// Every float and every integer: the ops exact in any dtype (Min, Max, Clip, comparisons).
using NumericDTypes = concat_dtypes_t<FloatDTypes, IntegerDTypes>;
using AllDTypes = concat_dtypes_t<NumericDTypes, DTypeList<DType::boolean>>;

// ---- integer rules ----

// The unsigned type wrapping arithmetic on T computes in: T's own unsigned type, widened to
// unsigned int for 8- and 16-bit T (whose unsigned types promote to a signed int, where a
// product could overflow).
template <class T>
using wrap_unsigned_t = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// Two's-complement wrapping arithmetic (signed overflow would be undefined behaviour); the
// result keeps T's low bits (C++20 conversions are modulo 2^N).
template <class T>
inline T wrap_add(T a, T b) {
  using U = wrap_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <class T>
inline T wrap_sub(T a, T b) {
  using U = wrap_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <class T>
inline T wrap_mul(T a, T b) {
  using U = wrap_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
}
template <class T>
inline T wrap_neg(T a) {
  return wrap_sub(T{0}, a);
}

// C division (truncating toward zero). x / 0 gives 0 and MIN / -1 wraps to MIN instead of
// trapping; ONNX leaves both undefined.
template <class T>
inline T int_div(T a, T b) {
  if (b == 0) return T{0};
  if constexpr (std::is_signed_v<T>)
    if (b == T{-1}) return wrap_neg(a);
  return static_cast<T>(a / b);
}

// base^exponent by squaring, wrapping on overflow. Negative exponents truncate 1/base^|e| as C
// would: 1 and -1 keep their magnitude, every other base gives 0.
template <class T>
inline T int_pow(T base, std::int64_t exponent) {
  if (exponent < 0) {
    if (base == 1) return T{1};
    if constexpr (std::is_signed_v<T>)
      if (base == T{-1}) return (exponent & 1) ? T{-1} : T{1};
    return T{0};
  }
  T result = 1;
  while (exponent > 0) {
    if (exponent & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exponent >>= 1;
  }
  return result;
}

// Float -> integer truncating toward zero, saturating at the type's limits, NaN -> 0 (C++ leaves
// out-of-range conversions undefined; this matches the CUDA conversion instructions).
template <class I>
inline I saturate_to_int(double v) {
  if (std::isnan(v)) return I{0};
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  return static_cast<I>(v);
}

// ---- broadcasting ----

// The output walked as row-major dims with, per input, the element stride along each dim (0 where
// that input is broadcast). Adjacent dims are merged wherever every input walks them contiguously,
// so a bias add becomes one long inner run per row.
template <std::size_t N>
struct BroadcastPlan {
  std::vector<std::int64_t> dims;
  std::array<std::vector<std::int64_t>, N> strides;
  std::int64_t count = 0;  // output elements
};

// Throws shape_mismatch unless every input broadcasts to `out`.
template <std::size_t N>
BroadcastPlan<N> plan_broadcast(const KernelSpec& spec, const Shape& out, const std::array<Shape, N>& inputs) {
  std::array<std::vector<std::int64_t>, N> full;
  for (std::size_t k = 0; k < N; ++k) {
    auto strides = broadcast_strides(inputs[k], out);
    if (!strides)
      throw_bad_shape(spec, "input " + inputs[k].to_string() + " does not broadcast to output " + out.to_string());
    full[k] = std::move(*strides);
  }
  BroadcastPlan<N> plan;
  plan.count = out.numel();
  for (std::size_t i = 0; i < out.rank(); ++i) {
    if (out[i] == 1) continue;  // contributes nothing to any offset
    const std::int64_t dim = out[i];
    bool mergeable = !plan.dims.empty();
    for (std::size_t k = 0; mergeable && k < N; ++k) mergeable = plan.strides[k].back() == full[k][i] * dim;
    if (mergeable) {
      plan.dims.back() *= dim;
      for (std::size_t k = 0; k < N; ++k) plan.strides[k].back() = full[k][i];
    } else {
      plan.dims.push_back(dim);
      for (std::size_t k = 0; k < N; ++k) plan.strides[k].push_back(full[k][i]);
    }
  }
  return plan;
}

// Calls run(out_offset, in_offsets, n, in_strides) once per innermost run of n output elements
// within output elements [begin, end) (runs cut at its ends): output elements [out_offset,
// out_offset + n) read input k at in_offsets[k] + j * in_strides[k].
template <std::size_t N, class Run>
void for_each_run_in(const BroadcastPlan<N>& plan, std::int64_t begin, std::int64_t end, Run&& run) {
  using Offsets = std::array<std::int64_t, N>;
  if (plan.count == 0 || begin >= end) return;
  if (plan.dims.empty()) {  // a single element
    run(std::int64_t{0}, Offsets{}, std::int64_t{1}, Offsets{});
    return;
  }
  const std::size_t rank = plan.dims.size();
  const std::int64_t n = plan.dims.back();
  Offsets inner{};
  for (std::size_t k = 0; k < N; ++k) inner[k] = plan.strides[k].back();
  // The multi-index over the outer dims of the run holding `begin`, and its inputs' offsets.
  std::int64_t o = begin / n;
  std::vector<std::int64_t> index(rank, 0);
  Offsets offsets{};
  for (std::size_t d = rank - 1, rest = static_cast<std::size_t>(o); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(plan.dims[d]));
    rest /= static_cast<std::size_t>(plan.dims[d]);
    for (std::size_t k = 0; k < N; ++k) offsets[k] += index[d] * plan.strides[k][d];
  }
  for (std::int64_t first = begin - o * n; o * n < end; ++o, first = 0) {
    Offsets at = offsets;
    for (std::size_t k = 0; k < N; ++k) at[k] += first * inner[k];
    run(o * n + first, at, std::min(n, end - o * n) - first, inner);
    // Advance the multi-index over the outer dims, odometer style.
    for (std::size_t d = rank - 1; d-- > 0;) {
      for (std::size_t k = 0; k < N; ++k) offsets[k] += plan.strides[k][d];
      if (++index[d] < plan.dims[d]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= plan.strides[k][d] * plan.dims[d];
      index[d] = 0;
    }
  }
}

// Every run of the output (for_each_run_in over all of it).
template <std::size_t N, class Run>
void for_each_run(const BroadcastPlan<N>& plan, Run&& run) {
  for_each_run_in(plan, 0, plan.count, std::forward<Run>(run));
}

// Output elements below which a broadcasting op stays on one thread.
constexpr std::int64_t kBroadcastChunkElements = std::int64_t{1} << 15;

// broadcast_binary over output elements [begin, end).
template <class A, class B, class C, class Op>
void broadcast_binary_in(const BroadcastPlan<2>& plan, std::int64_t begin, std::int64_t end, const A* a, const B* b,
                         C* c, Op op) {
  for_each_run_in(plan, begin, end,
                  [&](std::int64_t out, const std::array<std::int64_t, 2>& at, std::int64_t n,
                      const std::array<std::int64_t, 2>& step) {
                    const A* pa = a + at[0];
                    const B* pb = b + at[1];
                    C* pc = c + out;
                    if (step[0] == 1 && step[1] == 1) {
                      for (std::int64_t j = 0; j < n; ++j) pc[j] = op(pa[j], pb[j]);
                    } else if (step[0] == 1 && step[1] == 0) {
                      const B vb = pb[0];
                      for (std::int64_t j = 0; j < n; ++j) pc[j] = op(pa[j], vb);
                    } else if (step[0] == 0 && step[1] == 1) {
                      const A va = pa[0];
                      for (std::int64_t j = 0; j < n; ++j) pc[j] = op(va, pb[j]);
                    } else {
                      for (std::int64_t j = 0; j < n; ++j) pc[j] = op(pa[j * step[0]], pb[j * step[1]]);
                    }
                  });
}

// c[i] = op(a[.], b[.]) over a two-input plan, with the common stride patterns as separate
// loops (the ones the compiler vectorises); large outputs are split over the kernel's threads.
template <class A, class B, class C, class Op>
void broadcast_binary(const BroadcastPlan<2>& plan, const A* a, const B* b, C* c, Op op) {
  parallel_for(plan.count, kBroadcastChunkElements,
               [&](std::int64_t begin, std::int64_t end) { broadcast_binary_in(plan, begin, end, a, b, c, op); });
}

// Throws shape_mismatch unless `out` is exactly the numpy broadcast of `inputs`.
void require_broadcast_output(const KernelSpec& spec, const Shape& out, const std::vector<Shape>& inputs);

// Rejects dtypes outside `allowed` with a message listing them (f16/bf16 get the CUDA hint when
// they are not in the list).
void require_dtype_in(const KernelSpec& spec, DType dtype, std::span<const DType> allowed, const char* role);
inline void require_dtype_in(const KernelSpec& spec, DType dtype, std::initializer_list<DType> allowed,
                             const char* role) {
  require_dtype_in(spec, dtype, std::span<const DType>(allowed.begin(), allowed.size()), role);
}

}  // namespace loom::backend::cpu
