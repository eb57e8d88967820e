// Small helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

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

}  // namespace loom::test_support
