// write_file_atomically(): beside the target, then renamed over it.
#include "core/atomic_file.hpp"

#include <filesystem>
#include <fstream>

#include "loom/error.hpp"

namespace loom::core {

void write_file_atomically(const std::string& path, const std::string& text, const std::string& document) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) throw Error(ErrorCode::invalid_argument, document + ": cannot open '" + temporary + "' for writing");
    out << text;
    out.close();
    if (!out) throw Error(ErrorCode::invalid_argument, document + ": writing '" + temporary + "' failed");
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::filesystem::remove(temporary, error);
    throw Error(ErrorCode::invalid_argument, document + ": cannot write the file");
  }
}

}  // namespace loom::core
