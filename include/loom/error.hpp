// The one exception type the library throws; the code says what kind of failure it was.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace loom {

enum class ErrorCode {
  invalid_argument,   // a bad option or argument value
  shape_mismatch,     // a tensor's shape differs from what the model or op expects
  dtype_mismatch,     // a tensor's element type differs from what the model or op expects
  unknown_model,      // no loaded model has that name
  invalid_model,      // the graph is malformed: missing value, bad attribute, cycle
  unsupported,        // an op, dtype or attribute value this backend does not implement
  out_of_memory,      // device or pool allocation failed
  shutdown,           // the executor no longer accepts work
  backend,            // CUDA, cuBLAS or cuDNN reported an error
  deadline_exceeded,  // a request's deadline passed before it started
  internal,           // a broken invariant inside Loom
};

std::string_view error_code_name(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace loom
