// How the simulator's JSON readers (workload files, GPU descriptions) show a value in an error.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace loom::sim::detail {

// Scalars with their text (cut to 40 characters); an array or object by its size, since dump()
// recurses once per level of nesting and a file nested a million deep would overflow the stack.
inline std::string describe_json(const nlohmann::json& value) {
  if (value.is_structured()) return std::string(value.type_name()) + " of " + std::to_string(value.size()) + " entries";
  std::string text = value.dump();
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return std::string(value.type_name()) + " " + text;
}

}  // namespace loom::sim::detail
