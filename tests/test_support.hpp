// Small helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "loom/error.hpp"

namespace loom::test_support {

// The code of the loom::Error that `f` throws; records a test failure when it throws none.
template <class F>
ErrorCode code_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no loom::Error thrown";
  return ErrorCode::internal;
}

// Expects `f` to throw loom::Error with `code` and a message containing every one of `parts`.
template <class F>
void expect_error(F&& f, ErrorCode code, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no loom::Error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace loom::test_support
