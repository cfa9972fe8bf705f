#include "core/local_cache.hpp"

#include <cstdio>
#include <cstdlib>

#include "cntkio/errors.hpp"

namespace cntkio::core {
namespace {

std::string env_text(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? std::string() : std::string(text);
}

uint64_t fnv1a(const std::string& text, uint64_t hash = 14695981039346656037ull) {
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

}  // namespace

std::string local_cache_dir() {
  std::string dir = env_text("CNTKIO_CACHE_DIR");
  if (!dir.empty()) return dir;
  dir = env_text("XDG_CACHE_HOME");
  if (!dir.empty()) return dir + "/cntkio";
  dir = env_text("HOME");
  if (!dir.empty()) return dir + "/.cache/cntkio";
  return "/tmp/cntkio-cache";
}

std::string local_cache_path(const std::string& url, const FileIdentity& identity,
                             const std::string& suffix) {
  const std::string dir = local_cache_dir();
  const std::shared_ptr<Env> env = Env::current();
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    try {
      env->create_dir(dir.substr(0, at));
    } catch (const Error&) {
      // there already (as a folder or not), not creatable, or not a local folder (a URL): the cache's writer
      // reports why it cannot write, and the data is read without a cache
    }
  }
  const uint64_t hash = fnv1a(url + '\n' + identity.etag + '\n' + std::to_string(identity.size));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  // The hash tells files apart; the name only helps a person: cut to stay far from the system's 255 bytes
  // (a presigned URL's query is longer).
  std::string name = url.substr(url.rfind('/') + 1, 100);
  for (char& c : name) {
    if (c == '?' || c == '&' || c == '=' || c == '%') c = '_';
  }
  return dir + "/" + hex + "-" + name + suffix;
}

}  // namespace cntkio::core
