// Env::current(), Env::install() and Env::glob(), common to every Env.
#include "cntkio/env.hpp"

#include <fnmatch.h>

#include <mutex>

namespace cntkio {
namespace {

std::mutex g_env_mutex;
std::shared_ptr<Env> g_installed;  // null: default_env()

}  // namespace

std::shared_ptr<Env> Env::current() {
  {
    std::lock_guard<std::mutex> lock(g_env_mutex);
    if (g_installed) return g_installed;
  }
  return default_env();
}

std::shared_ptr<Env> Env::install(std::shared_ptr<Env> env) {
  std::lock_guard<std::mutex> lock(g_env_mutex);
  std::shared_ptr<Env> previous = std::move(g_installed);
  g_installed = std::move(env);
  return previous ? previous : default_env();
}

std::vector<std::string> Env::glob(const std::string& pattern) {
  const size_t slash = pattern.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : pattern.substr(0, slash);
  const std::string name = slash == std::string::npos ? pattern : pattern.substr(slash + 1);
  if (name.find_first_of("*?[") == std::string::npos) {
    if (file_exists(pattern)) return {pattern};
    return {};
  }
  std::vector<std::string> out;
  const std::string prefix = slash == std::string::npos ? "" : pattern.substr(0, slash + 1);
  for (const std::string& entry : list_dir(slash == std::string::npos ? "." : (dir.empty() ? "/" : dir))) {
    if (::fnmatch(name.c_str(), entry.c_str(), FNM_PERIOD) == 0) out.push_back(prefix + entry);
  }
  return out;  // list_dir() sorted the names
}

}  // namespace cntkio
