// Env::default_env(): the POSIX Env for local paths, and the Env registered for a URL scheme
// (Env::register_scheme) for paths `scheme://...`. The remote part (src/remote/) registers http, https and
// s3; core knows it only by the function it calls once, before the first URL is routed.
#include <cerrno>
#include <map>
#include <mutex>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"

#if CNTKIO_WITH_REMOTE
namespace cntkio::remote {
void register_remote_schemes();  // src/remote/remote_env.cpp
}
#endif

namespace cntkio {

std::shared_ptr<Env> make_posix_env();  // posix_env.cpp

namespace {

std::mutex g_schemes_mutex;
std::map<std::string, std::shared_ptr<Env>, std::less<>>& schemes() {
  static std::map<std::string, std::shared_ptr<Env>, std::less<>> registered;
  return registered;
}

void register_builtin_schemes() {
#if CNTKIO_WITH_REMOTE
  static std::once_flag once;
  std::call_once(once, [] { remote::register_remote_schemes(); });
#endif
}

bool is_remote_scheme(std::string_view scheme) {
  return scheme == "http" || scheme == "https" || scheme == "s3";
}

class RoutingEnv final : public Env {
 public:
  explicit RoutingEnv(std::shared_ptr<Env> local) : local_(std::move(local)) {}

  std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path,
                                                           std::string_view open_failure) override {
    return route(path)->new_random_access_file(path, open_failure);
  }
  std::unique_ptr<SequentialFile> new_sequential_file(const std::string& path) override {
    return route(path)->new_sequential_file(path);
  }
  std::unique_ptr<WritableFile> new_writable_file(const std::string& path,
                                                  const WritableFileOptions& options) override {
    return route(path)->new_writable_file(path, options);
  }
  bool file_exists(const std::string& path) override {
    try {
      return route(path)->file_exists(path);
    } catch (const Error&) {
      return false;
    }
  }
  FileIdentity file_identity(const std::string& path) override { return route(path)->file_identity(path); }
  std::vector<std::string> list_dir(const std::string& dir) override { return route(dir)->list_dir(dir); }
  void remove_file(const std::string& path) override { route(path)->remove_file(path); }
  void rename_file(const std::string& from, const std::string& to) override {
    route(to)->rename_file(from, to);
  }
  bool create_dir(const std::string& dir) override { return route(dir)->create_dir(dir); }
  void remove_dir(const std::string& dir) override { route(dir)->remove_dir(dir); }
  bool is_dir(const std::string& path) override {
    try {
      return route(path)->is_dir(path);
    } catch (const Error&) {
      return false;
    }
  }
  void sync_folder(const std::string& dir) override { route(dir)->sync_folder(dir); }
  void sync_storage(const std::string& path) override { route(path)->sync_storage(path); }

 private:
  std::shared_ptr<Env> route(const std::string& path) {
    const std::string_view scheme = url_scheme(path);
    if (scheme.empty()) return local_;
    register_builtin_schemes();
    std::shared_ptr<Env> env = scheme_env(scheme);
    if (env) return env;
    if (is_remote_scheme(scheme)) {
      throw IoError("cannot read " + std::string(scheme) +
                        ":// paths: this build of cntkio has no remote support (CNTKIO_WITH_REMOTE=OFF)",
                    path, ENOTSUP);
    }
    return local_;  // `name://x` with an unknown scheme is a local path, as it always was
  }

  std::shared_ptr<Env> local_;
};

}  // namespace

std::string_view Env::url_scheme(std::string_view path) {
  const size_t colon = path.find("://");
  if (colon == std::string_view::npos || colon == 0) return {};
  const std::string_view scheme = path.substr(0, colon);
  const auto is_lower = [](char c) { return c >= 'a' && c <= 'z'; };
  if (!is_lower(scheme[0])) return {};
  for (const char c : scheme) {
    if (!is_lower(c) && !(c >= '0' && c <= '9') && c != '+' && c != '-' && c != '.') return {};
  }
  return scheme;
}

void Env::register_scheme(const std::string& scheme, std::shared_ptr<Env> env) {
  std::lock_guard<std::mutex> lock(g_schemes_mutex);
  if (env) {
    schemes()[scheme] = std::move(env);
  } else {
    schemes().erase(scheme);
  }
}

std::shared_ptr<Env> Env::scheme_env(std::string_view scheme) {
  register_builtin_schemes();
  std::lock_guard<std::mutex> lock(g_schemes_mutex);
  const auto it = schemes().find(scheme);
  return it == schemes().end() ? nullptr : it->second;
}

std::shared_ptr<Env> Env::default_env() {
  static const std::shared_ptr<Env> env = std::make_shared<RoutingEnv>(make_posix_env());
  return env;
}

}  // namespace cntkio
