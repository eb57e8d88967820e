// Fingerprints of compiled models: what makes two models' Step costs the same.
#pragma once

#include <string>

#include "plan/compiled_model.hpp"

namespace loom::profile {

// The canonical text model_fingerprint() hashes (one line per input, node, Step and output; see
// fingerprint.cpp). Exposed for tests and for debugging a mismatch.
std::string canonical_text(const plan::CompiledModel& compiled);

// model_fingerprint() of an already compiled model: the executor has the plan at hand.
std::string plan_fingerprint(const plan::CompiledModel& compiled);

}  // namespace loom::profile
