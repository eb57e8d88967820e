// Element types, shapes and owning host tensors: the values that cross the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/error.hpp"

namespace loom {

enum class DType : std::uint8_t { f32, f16, bf16, i64, i32, boolean };

std::size_t dtype_size(DType dtype) noexcept;
std::string_view dtype_name(DType dtype) noexcept;  // "f32", "f16", "bf16", "i64", "i32", "bool"
DType dtype_from_name(std::string_view name);       // throws Error(invalid_argument)
// The DType an ONNX TensorProto data-type code names (1 FLOAT, 6 INT32, 7 INT64, 9 BOOL,
// 10 FLOAT16, 16 BFLOAT16), e.g. Cast's `to`; nullopt for codes Loom has no dtype for.
std::optional<DType> dtype_from_onnx_code(std::int64_t code) noexcept;
bool is_floating(DType dtype) noexcept;

// 16-bit float storage types for host tensors; arithmetic happens after conversion to float.
struct f16_t {
  std::uint16_t bits = 0;
};
struct bf16_t {
  std::uint16_t bits = 0;
};
f16_t float_to_f16(float value) noexcept;  // round to nearest even
float f16_to_float(f16_t value) noexcept;
bf16_t float_to_bf16(float value) noexcept;  // round to nearest even
float bf16_to_float(bf16_t value) noexcept;

// The C++ type stored for each DType: bool is one byte (std::uint8_t), as in ONNX.
template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<f16_t> {
  static constexpr DType value = DType::f16;
};
template <>
struct dtype_of<bf16_t> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<std::int64_t> {
  static constexpr DType value = DType::i64;
};
template <>
struct dtype_of<std::int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<std::uint8_t> {
  static constexpr DType value = DType::boolean;
};

// Dimensions of a dense row-major tensor. A rank-0 shape is a scalar with one element.
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::int64_t> dims) : dims_(std::move(dims)) {}

  std::size_t rank() const noexcept { return dims_.size(); }
  std::int64_t operator[](std::size_t axis) const { return dims_.at(axis); }
  std::int64_t& operator[](std::size_t axis) { return dims_.at(axis); }
  std::int64_t numel() const noexcept;
  const std::vector<std::int64_t>& dims() const noexcept { return dims_; }
  auto begin() const noexcept { return dims_.begin(); }
  auto end() const noexcept { return dims_.end(); }
  std::string to_string() const;  // "1x3x224x224"; "scalar" for rank 0
  bool operator==(const Shape&) const = default;

 private:
  std::vector<std::int64_t> dims_;
};

// An owning, contiguous host tensor with value semantics (copies are deep, moves are cheap).
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  // zero-filled

  template <class T>
  static Tensor from(Shape shape, std::span<const T> values) {
    Tensor t(dtype_of<T>::value, std::move(shape));
    if (static_cast<std::size_t>(t.numel()) != values.size())
      throw Error(ErrorCode::shape_mismatch,
                  "Tensor::from: " + std::to_string(values.size()) + " values for shape " + t.shape().to_string());
    std::copy(values.begin(), values.end(), t.values<T>().begin());
    return t;
  }
  template <class T>
  static Tensor from(Shape shape, std::initializer_list<T> values) {
    return from<T>(std::move(shape), std::span<const T>(values.begin(), values.size()));
  }
  template <class T>
  static Tensor from(Shape shape, const std::vector<T>& values) {
    return from<T>(std::move(shape), std::span<const T>(values));
  }

  DType dtype() const noexcept { return dtype_; }
  const Shape& shape() const noexcept { return shape_; }
  std::int64_t numel() const noexcept { return shape_.numel(); }
  std::size_t bytes() const noexcept { return storage_.size(); }
  void* data() noexcept { return storage_.data(); }
  const void* data() const noexcept { return storage_.data(); }

  // Typed views; throw Error(dtype_mismatch) when T does not match dtype().
  template <class T>
  std::span<T> values() {
    check_type(dtype_of<T>::value);
    return {reinterpret_cast<T*>(storage_.data()), static_cast<std::size_t>(numel())};
  }
  template <class T>
  std::span<const T> values() const {
    check_type(dtype_of<T>::value);
    return {reinterpret_cast<const T*>(storage_.data()), static_cast<std::size_t>(numel())};
  }

  // Converts between floating types (f32, f16, bf16) and between integer types (i64, i32);
  // returns a copy when the type already matches. Throws Error(unsupported) otherwise.
  Tensor to(DType dtype) const;
  // Same data, new shape with the same element count; throws Error(shape_mismatch).
  Tensor reshaped(Shape shape) const;

 private:
  void check_type(DType requested) const;

  DType dtype_ = DType::f32;
  Shape shape_;
  std::vector<std::byte> storage_;
};

}  // namespace loom
