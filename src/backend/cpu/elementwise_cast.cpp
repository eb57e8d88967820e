// Cast (and CastLike, which takes the target dtype from its second input) between every Loom
// dtype. Conversions follow C++ except where C++ is undefined: float ->
// integer truncates toward zero and saturates (NaN -> 0); anything -> bool is value != 0; i64 ->
// i32 keeps the low 32 bits; 16-bit floats round to nearest even.
//
// The planner stores every float value in the plan's compute dtype, so a Cast to f16 in an f32
// plan has an f32 output: the value is rounded to the named type first, then stored.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>

#include "backend/cpu/elementwise.hpp"
#include "backend/cpu/elementwise_support.hpp"
#include "graph/ops/elementwise_attrs.hpp"

namespace loom::backend::cpu {
namespace {

template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<D, S>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool_t>) {
    return load(v) != 0 ? 1 : 0;  // NaN != 0: true
  } else if constexpr (std::is_same_v<S, bool_t>) {
    return store<D>(static_cast<compute_t<D>>(v != 0 ? 1 : 0));
  } else if constexpr (std::is_integral_v<D>) {
    if constexpr (std::is_integral_v<S>)
      return static_cast<D>(v);  // C++20: modulo 2^N
    else
      return saturate_to_int<D>(static_cast<double>(load(v)));
  } else {
    // D is a float type: go through float (integers round to the nearest float first).
    return store<D>(static_cast<float>(load(v)));
  }
}

class CastKernel final : public OpKernel {
 public:
  explicit CastKernel(const KernelSpec& spec) : OpKernel(spec) {
    const bool like = spec.node->op_type == "CastLike";
    require_input_count(spec, like ? 2 : 1, like ? 2 : 1);
    require_output_count(spec, 1, 1);
    require_present(spec, 0, "input");
    DType target = DType::f32;
    if (like) {
      // CastLike: the target is the dtype `target_type` (input 1) is stored in; its values are unused.
      require_present(spec, 1, "target_type");
      target = spec.inputs[1].dtype;
    } else {
      const std::int64_t to = spec.node->attrs.get_int("to", -1);
      target = parse_for_node(spec, [&] { return graph::cast_target(to); });
    }
    const DType stored = spec.outputs[0].dtype;
    if (stored != target && !(is_floating(stored) && is_floating(target)))
      throw_unsupported(spec, "output dtype " + std::string(dtype_name(stored)) + " does not match the target " +
                                  std::string(dtype_name(target)));
    require_shape(spec, spec.outputs[0].shape, spec.inputs[0].shape, "output");
    from_ = spec.inputs[0].dtype;
    to_ = target;
    stored_ = stored;
    count_ = spec.inputs[0].shape.numel();
  }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void*, Stream&) override {
    dispatch<float, f16_t, bf16_t, std::int64_t, std::int32_t, bool_t>(from_, [&]<class S>(std::type_identity<S>) {
      dispatch<float, f16_t, bf16_t, std::int64_t, std::int32_t, bool_t>(to_, [&]<class D>(std::type_identity<D>) {
        const S* x = static_cast<const S*>(inputs[0]);
        if (stored_ == to_) {
          D* y = static_cast<D*>(outputs[0]);
          for (std::int64_t i = 0; i < count_; ++i) y[i] = convert<D>(x[i]);
          return;
        }
        dispatch<float, f16_t, bf16_t>(stored_, [&]<class O>(std::type_identity<O>) {
          O* y = static_cast<O*>(outputs[0]);
          for (std::int64_t i = 0; i < count_; ++i) y[i] = convert<O>(convert<D>(x[i]));
        });
      });
    });
  }

 private:
  DType from_ = DType::f32;
  DType to_ = DType::f32;      // the dtype the values take (ONNX `to`)
  DType stored_ = DType::f32;  // the output's storage: `to_`, or the plan's float dtype
  std::int64_t count_ = 0;
};

}  // namespace

std::unique_ptr<OpKernel> make_cast_kernel(const KernelSpec& spec) { return std::make_unique<CastKernel>(spec); }

}  // namespace loom::backend::cpu
