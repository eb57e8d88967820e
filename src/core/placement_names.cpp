// The placement pass's classes and reasons by name, as reports and tools spell them.
#include "loom/placement_types.hpp"

namespace loom {

std::string_view work_class_name(WorkClass work_class) noexcept {
  return work_class == WorkClass::scalar ? "scalar" : "tensor";
}

std::string_view placement_reason_name(PlacementReason reason) noexcept {
  switch (reason) {
    case PlacementReason::passed:
      return "passed";
    case PlacementReason::next_processor:
      return "next_processor";
    case PlacementReason::fused_with_previous:
      return "fused_with_previous";
    case PlacementReason::min_cost_fallback:
      return "min_cost_fallback";
    case PlacementReason::folded_at_load:
      return "folded_at_load";
    case PlacementReason::removed_at_load:
      return "removed_at_load";
  }
  return "passed";
}

}  // namespace loom
