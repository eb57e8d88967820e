// The model repository as found on disk: REPO/<model>/<version>/model.onnx and the optional
// REPO/<model>/config.json (docs/serve.md, "Repository" and "Model config"). Reads files only;
// loading is the Service's.
#pragma once

#include <string>
#include <vector>

#include "serve/service.hpp"

namespace loom::serve {

// The keys config.json may hold, as messages and --help list them: "priority, max_batch_size, ...".
inline constexpr const char* kModelConfigKeys =
    "priority, max_batch_size, batch_dim, max_queue_delay_us, dims, dim_ranges, device, timeout_ms, stream_priority";

// Parses a config.json document. Throws std::runtime_error naming `file` and the key for
// malformed JSON, an unknown key, a wrong type or a bad value.
ModelConfig parse_model_config(const std::string& text, const std::string& file);

// One model folder of the repository: name, the version served, path and config filled; `error`
// set (and ready false) when the folder holds no usable version or its config.json is refused.
// Models in name order. Throws Error(invalid_argument) when `repository` is not a readable folder.
std::vector<ModelEntry> scan_repository(const std::string& repository);

}  // namespace loom::serve
