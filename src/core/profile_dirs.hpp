// Where Loom looks for the files of profiles/: device profiles (find_profile) and the GPU model's
// descriptions (sim::gpu_device, in gpu/), in this order.
#pragma once

#include <filesystem>
#include <vector>

namespace loom::core {

// $LOOM_PROFILE_DIR when set, ./profiles, then the installed share/loom/profiles.
std::vector<std::filesystem::path> profile_directories();

}  // namespace loom::core
