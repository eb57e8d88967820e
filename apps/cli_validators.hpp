// CLI11 validators the command-line tools share, so that every tool spells and checks its flags
// the same way. Header-only: each tool is one translation unit.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace loom::cli {

// auto | cpu | cuda | cuda:N, as ExecutorOptions::device takes it.
inline CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value == "auto" || value == "cpu" || value == "cuda") return {};
        if (value.rfind("cuda:", 0) == 0 && value.size() > 5 &&
            value.find_first_not_of("0123456789", 5) == std::string::npos)
          return {};
        return "expected auto, cpu, cuda or cuda:N, got '" + value + "'";
      },
      "");
}

// A whole number >= 1, without sign or exponent.
inline CLI::Validator positive_integer() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos ||
            value.find_first_not_of('0') == std::string::npos)
          return "expected a whole number of at least 1, got '" + value + "'";
        return {};
      },
      "");
}

}  // namespace loom::cli
