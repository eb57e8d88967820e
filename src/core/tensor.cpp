// DType facts, 16-bit float conversions and the host Tensor.
#include "loom/tensor.hpp"

#include <bit>
#include <cstring>

namespace loom {

std::size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::f16:
      return 2;
    case DType::bf16:
      return 2;
    case DType::i64:
      return 8;
    case DType::i32:
      return 4;
    case DType::boolean:
      return 1;
  }
  return 0;
}

std::string_view dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::boolean:
      return "bool";
  }
  return "?";
}

DType dtype_from_name(std::string_view name) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i64, DType::i32, DType::boolean})
    if (dtype_name(d) == name) return d;
  if (name == "fp32" || name == "float32" || name == "float") return DType::f32;
  if (name == "fp16" || name == "float16" || name == "half") return DType::f16;
  if (name == "bfloat16") return DType::bf16;
  throw Error(ErrorCode::invalid_argument,
              "unknown dtype '" + std::string(name) + "' (known: f32, f16, bf16, i64, i32, bool)");
}

// The codes are onnx.proto's TensorProto.DataType values (src/onnx checks them against the
// protobuf enum); written as numbers so the graph and the backends need no protobuf.
std::optional<DType> dtype_from_onnx_code(std::int64_t code) noexcept {
  switch (code) {
    case 1:
      return DType::f32;
    case 6:
      return DType::i32;
    case 7:
      return DType::i64;
    case 9:
      return DType::boolean;
    case 10:
      return DType::f16;
    case 16:
      return DType::bf16;
    default:
      return std::nullopt;
  }
}

bool is_floating(DType dtype) noexcept { return dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16; }

// IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits. Conversion by bit manipulation so results
// do not depend on the compiler's _Float16 support.
f16_t float_to_f16(float value) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) {  // inf or NaN (keep NaN quiet)
    return {static_cast<std::uint16_t>(sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u : 0u))};
  }
  if (abs >= 0x477FF000u) return {static_cast<std::uint16_t>(sign | 0x7C00u)};  // rounds to inf
  if (abs < 0x38800000u) {                                                      // subnormal or zero in f16
    if (abs < 0x33000000u) return {static_cast<std::uint16_t>(sign)};
    const std::uint32_t exponent = abs >> 23;
    const std::uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
    const std::uint32_t shift = 126u - exponent;  // 14 + (127 - 1 - exponent) - 14 ... to 10 bits
    std::uint32_t result = mantissa >> (shift);
    const std::uint32_t remainder = mantissa & ((1u << shift) - 1u);
    const std::uint32_t halfway = 1u << (shift - 1u);
    if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
    return {static_cast<std::uint16_t>(sign | result)};
  }
  std::uint32_t result = ((abs - 0x38000000u) >> 13);
  const std::uint32_t remainder = abs & 0x1FFFu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) ++result;
  return {static_cast<std::uint16_t>(sign | result)};
}

float f16_to_float(f16_t value) noexcept {
  const std::uint32_t h = value.bits;
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1Fu;
  std::uint32_t mantissa = h & 0x3FFu;
  std::uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 113;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      bits = sign | (exponent << 23) | ((mantissa & 0x3FFu) << 13);
    }
  } else {
    bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
  }
  return std::bit_cast<float>(bits);
}

bf16_t float_to_bf16(float value) noexcept {
  std::uint32_t x = std::bit_cast<std::uint32_t>(value);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<std::uint16_t>((x >> 16) | 0x40u)};
  x += 0x7FFFu + ((x >> 16) & 1u);
  return {static_cast<std::uint16_t>(x >> 16)};
}

float bf16_to_float(bf16_t value) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

std::int64_t Shape::numel() const noexcept {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) n *= d;
  return n;
}

std::string Shape::to_string() const {
  if (dims_.empty()) return "scalar";
  std::string s;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(dims_[i]);
  }
  return s;
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (std::int64_t d : shape_.dims())
    if (d < 0) throw Error(ErrorCode::shape_mismatch, "Tensor: negative dimension in " + shape_.to_string());
  storage_.resize(static_cast<std::size_t>(shape_.numel()) * dtype_size(dtype_));
}

void Tensor::check_type(DType requested) const {
  if (requested != dtype_)
    throw Error(ErrorCode::dtype_mismatch, "tensor holds " + std::string(dtype_name(dtype_)) + ", accessed as " +
                                               std::string(dtype_name(requested)));
}

namespace {
float load_float(const std::byte* p, DType dtype) {
  switch (dtype) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f16: {
      f16_t v;
      std::memcpy(&v, p, 2);
      return f16_to_float(v);
    }
    case DType::bf16: {
      bf16_t v;
      std::memcpy(&v, p, 2);
      return bf16_to_float(v);
    }
    default:
      return 0;
  }
}
void store_float(std::byte* p, DType dtype, float value) {
  switch (dtype) {
    case DType::f32:
      std::memcpy(p, &value, 4);
      break;
    case DType::f16: {
      f16_t v = float_to_f16(value);
      std::memcpy(p, &v, 2);
      break;
    }
    case DType::bf16: {
      bf16_t v = float_to_bf16(value);
      std::memcpy(p, &v, 2);
      break;
    }
    default:
      break;
  }
}
}  // namespace

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out(dtype, shape_);
  const std::size_t n = static_cast<std::size_t>(numel());
  if (is_floating(dtype_) && is_floating(dtype)) {
    for (std::size_t i = 0; i < n; ++i)
      store_float(out.storage_.data() + i * dtype_size(dtype), dtype,
                  load_float(storage_.data() + i * dtype_size(dtype_), dtype_));
    return out;
  }
  if (dtype_ == DType::i64 && dtype == DType::i32) {
    auto src = values<std::int64_t>();
    auto dst = out.values<std::int32_t>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<std::int32_t>(src[i]);
    return out;
  }
  if (dtype_ == DType::i32 && dtype == DType::i64) {
    auto src = values<std::int32_t>();
    auto dst = out.values<std::int64_t>();
    for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
    return out;
  }
  throw Error(ErrorCode::unsupported, "Tensor::to: no conversion from " + std::string(dtype_name(dtype_)) + " to " +
                                          std::string(dtype_name(dtype)));
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape.numel() != shape_.numel())
    throw Error(ErrorCode::shape_mismatch, "Tensor::reshaped: " + shape_.to_string() + " has " +
                                               std::to_string(shape_.numel()) + " elements, " + shape.to_string() +
                                               " needs " + std::to_string(shape.numel()));
  Tensor out = *this;
  out.shape_ = std::move(shape);
  return out;
}

}  // namespace loom
