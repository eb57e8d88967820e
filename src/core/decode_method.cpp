// Decode loop methods by name, as the tools spell them (loom/decode_types.hpp).
#include <string>

#include "loom/decode_types.hpp"
#include "loom/error.hpp"

namespace loom::decode {

std::string_view method_name(DecodeMethod method) noexcept {
  switch (method) {
    case DecodeMethod::automatic:
      return "automatic";
    case DecodeMethod::persistent:
      return "persistent";
    case DecodeMethod::graph:
      return "graph";
    case DecodeMethod::host_loop:
      return "host_loop";
  }
  return "unknown";
}

DecodeMethod method_from_name(std::string_view name) {
  for (DecodeMethod method :
       {DecodeMethod::automatic, DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop})
    if (name == method_name(method)) return method;
  throw Error(ErrorCode::invalid_argument,
              "unknown decode method '" + std::string(name) + "' (expected automatic, persistent, graph or host_loop)");
}

}  // namespace loom::decode
