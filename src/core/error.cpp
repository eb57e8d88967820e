// loom::Error and the names of its codes.
#include "loom/error.hpp"

namespace loom {

std::string_view error_code_name(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::invalid_argument:
      return "invalid argument";
    case ErrorCode::shape_mismatch:
      return "shape mismatch";
    case ErrorCode::dtype_mismatch:
      return "dtype mismatch";
    case ErrorCode::unknown_model:
      return "unknown model";
    case ErrorCode::invalid_model:
      return "invalid model";
    case ErrorCode::unsupported:
      return "unsupported";
    case ErrorCode::out_of_memory:
      return "out of memory";
    case ErrorCode::shutdown:
      return "shut down";
    case ErrorCode::backend:
      return "backend error";
    case ErrorCode::deadline_exceeded:
      return "deadline exceeded";
    case ErrorCode::internal:
      return "internal error";
  }
  return "error";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

}  // namespace loom
