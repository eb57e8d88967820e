// What the command-line tools share, so that every tool spells and checks its flags and reports
// its errors the same way: CLI11 validators, the usage-error type and the guarded main body.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "loom/error.hpp"

namespace loom::cli {

// One number through a printf format, e.g. format("%.3f", x): the tools' table cells.
inline std::string format(const char* fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

// A mistake in the flags that only shows after parsing (e.g. once the device is known): exit 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs a tool's body: a UsageError exits 2, a loom::Error or other exception exits 1, each with
// "<tool>: error ..." on stderr naming the cause.
template <class Body>
int run_guarded(const char* tool, Body&& body) {
  try {
    return body();
  } catch (const UsageError& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 2;
  } catch (const loom::Error& e) {
    std::fprintf(stderr, "%s: error [%s]: %s\n", tool, std::string(loom::error_code_name(e.code())).c_str(), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", tool, e.what());
    return 1;
  }
}

// auto | cpu | cpu:accel | cuda | cuda:N, as ExecutorOptions::device takes it (cpu:accel: a second
// CPU backend standing in for an accelerator, a test and debug device).
inline CLI::Validator device_name() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value == "auto" || value == "cpu" || value == "cpu:accel" || value == "cuda") return {};
        if (value.rfind("cuda:", 0) == 0 && value.size() > 5 &&
            value.find_first_not_of("0123456789", 5) == std::string::npos)
          return {};
        return "expected auto, cpu, cpu:accel, cuda or cuda:N, got '" + value + "'";
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

// A whole number >= 0, without sign or exponent.
inline CLI::Validator non_negative_integer() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
          return "expected a whole number of at least 0, got '" + value + "'";
        return {};
      },
      "");
}

// A finite number >= 0.
inline CLI::Validator non_negative_number() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          std::size_t used = 0;
          const double number = std::stod(value, &used);
          if (used == value.size() && std::isfinite(number) && number >= 0) return {};
        } catch (const std::exception&) {
        }
        return "expected a number of at least 0, got '" + value + "'";
      },
      "");
}

}  // namespace loom::cli
