#include "core/output_path.hpp"

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>
#include <utility>

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

namespace {

std::atomic<bool> g_remember_inputs{false};
std::mutex g_inputs_mutex;
std::map<std::pair<uint64_t, uint64_t>, std::string> g_inputs;  // (device, inode) -> path as opened

}  // namespace

void remember_inputs() {
  g_remember_inputs.store(true);
}

void note_input(uint64_t device, uint64_t inode, const std::string& path) {
  if (!g_remember_inputs.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  g_inputs.emplace(std::make_pair(device, inode), path);
}

void check_not_an_input(const std::string& path) {
  if (!g_remember_inputs.load(std::memory_order_relaxed)) return;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // not there: nothing to replace
  std::lock_guard<std::mutex> lock(g_inputs_mutex);
  const auto it = g_inputs.find({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)});
  if (it == g_inputs.end()) return;
  throw UsageError(
      "The output '" + path + "' is " + (it->second == path ? "" : "'" + it->second + "', ") +
      "a file this command reads: writing it would replace the data being read. Write to another "
      "file.");
}

}  // namespace cntkio::core
