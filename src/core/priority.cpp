// Request priority classes by name, as the tools spell them.
#include <string>

#include "loom/error.hpp"
#include "loom/model_info.hpp"

namespace loom {

std::string_view priority_name(Priority priority) noexcept {
  switch (priority) {
    case Priority::background:
      return "background";
    case Priority::normal:
      return "normal";
    case Priority::urgent:
      return "urgent";
  }
  return "normal";
}

Priority priority_from_name(std::string_view name) {
  for (Priority p : {Priority::background, Priority::normal, Priority::urgent})
    if (name == priority_name(p)) return p;
  throw Error(ErrorCode::invalid_argument,
              "unknown priority '" + std::string(name) + "' (known: background, normal, urgent)");
}

}  // namespace loom
