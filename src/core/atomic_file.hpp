// Writing a file so that a reader never sees half of it: the text goes to <path>.tmp, which is then
// renamed over <path>. Device profiles and function libraries are written this way.
#pragma once

#include <string>

namespace loom::core {

// Throws Error(invalid_argument) "<document>: ..." when the file cannot be written; `document`
// names it in messages, e.g. "profile 'profiles/h200.json'".
void write_file_atomically(const std::string& path, const std::string& text, const std::string& document);

}  // namespace loom::core
