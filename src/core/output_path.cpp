#include "core/output_path.hpp"

#include <filesystem>
#include <system_error>

#include "cntkio/errors.hpp"

namespace cntkio::core {

void check_output_name(const std::string& path) {
  const size_t nul = path.find('\0');
  if (nul == std::string::npos) return;
  throw UsageError("The output path '" + path.substr(0, nul) + "\\0" + path.substr(nul + 1) +
                   "' holds a NUL byte at position " + std::to_string(nul) + "; a path cannot contain one.");
}

void check_output_path(const std::string& path, const std::string& temp_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status) || fs::is_regular_file(status)) return;  // absent or a plain file
  const char* what = fs::is_symlink(status)                                       ? "a symbolic link"
                     : fs::is_directory(status)                                   ? "a directory"
                     : fs::is_fifo(status)                                        ? "a FIFO"
                     : fs::is_character_file(status) || fs::is_block_file(status) ? "a device"
                                                                                  : "not a regular file";
  throw UsageError("The output '" + path + "' exists and is " + what + ": cntkio writes '" +
                   (temp_path.empty() ? path + ".partial" : temp_path) +
                   "' and renames it into place, which would replace it. "
                   "Give the path of a regular file (for a link, its target).");
}

}  // namespace cntkio::core
