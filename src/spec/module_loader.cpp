// Loading plugins (cntkio/plugin.hpp): `module = "name"` finds a shared library, checks its ABI version and
// lets it register its types. A module is loaded once per process and never unloaded (its code backs the
// types it registered).
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/plugin.hpp"
#include "core/text.hpp"

namespace cntkio {
namespace {

// CNTK's reader modules: their types are built into cntkio (spec config.md: `module` names the DLL).
constexpr const char* kBuiltinModules[] = {"CNTKTextFormatReader",
                                           "CNTKBinaryReader",
                                           "HTKDeserializers",
                                           "HTKMLFReader",
                                           "ImageReader",
                                           "Cntk.Deserializers.TextFormat",
                                           "Cntk.Deserializers.Binary",
                                           "Cntk.Deserializers.HTK",
                                           "Cntk.Deserializers.Image",
                                           "CompositeDataReader"};

class Registrar final : public PluginRegistrar {
 public:
  void add_deserializer(DeserializerType type) override { register_deserializer(std::move(type)); }
  void add_transform(TransformType type) override { register_transform(std::move(type)); }
  void add_reader_type(ReaderType type) override { register_reader_type(std::move(type)); }
};

std::mutex g_modules_mutex;
std::map<std::string, void*> g_loaded;  // module name as given -> handle

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::vector<std::string> split_path_list(const char* list) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  std::string item;
  for (const char* p = list;; ++p) {
    if (*p == ':' || *p == '\0') {
      if (!item.empty()) out.push_back(item);
      item.clear();
      if (*p == '\0') break;
    } else {
      item += *p;
    }
  }
  return out;
}

[[noreturn]] void refuse(const std::string& module, const std::string& why) {
  throw ConfigError("Cannot load module '" + module + "': " + why, "module");
}

}  // namespace

bool is_builtin_module(std::string_view module) {
  for (const char* name : kBuiltinModules) {
    if (core::iequals(module, name)) return true;
  }
  return false;
}

void load_module(const std::string& module, const std::string& config_directory) {
  if (module.empty() || is_builtin_module(module)) return;
  std::lock_guard<std::mutex> lock(g_modules_mutex);
  if (g_loaded.count(module) != 0) return;

  // Where to look, in order, and what each attempt said.
  std::vector<std::string> candidates;
  if (module.find('/') != std::string::npos) {
    candidates.push_back(module);
  } else {
    std::vector<std::string> folders;
    if (!config_directory.empty()) folders.push_back(config_directory);
    for (const std::string& folder : split_path_list(std::getenv("CNTKIO_PLUGIN_PATH")))
      folders.push_back(folder);
    for (const std::string& folder : folders) {
      for (const std::string& name : {"lib" + module + ".so", module + ".so", module}) {
        candidates.push_back(folder + "/" + name);
      }
    }
  }
  std::string searched;
  void* handle = nullptr;
  std::string loaded_from;
  for (const std::string& path : candidates) {
    searched += "\n  " + path;
    if (!is_file(path)) {
      searched += " (not there)";
      continue;
    }
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      loaded_from = path;
      break;
    }
    const char* error = ::dlerror();
    searched += std::string(" (") + (error != nullptr ? error : "dlopen failed") + ")";
  }
  if (handle == nullptr && module.find('/') == std::string::npos) {
    for (const std::string& name : {"lib" + module + ".so", module}) {
      handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      searched += "\n  " + name + " through the system loader (LD_LIBRARY_PATH, ld.so.cache, /lib, /usr/lib)";
      if (handle != nullptr) {
        loaded_from = name;
        break;
      }
      const char* error = ::dlerror();
      searched += std::string(" (") + (error != nullptr ? error : "not found") + ")";
    }
  }
  if (handle == nullptr) {
    refuse(module,
           "no loadable shared library was found. Searched, in order (the config's folder, then "
           "CNTKIO_PLUGIN_PATH, then the system loader):" +
               searched);
  }
  using AbiVersion = int (*)();
  using Register = void (*)(PluginRegistrar&);
  auto abi = reinterpret_cast<AbiVersion>(::dlsym(handle, "cntkio_plugin_abi_version"));
  auto entry = reinterpret_cast<Register>(::dlsym(handle, "cntkio_plugin_register"));
  if (abi == nullptr || entry == nullptr) {
    ::dlclose(handle);
    refuse(module,
           "'" + loaded_from +
               "' is not a cntkio plugin: it has no cntkio_plugin_abi_version / cntkio_plugin_register "
               "entry point (define them with CNTKIO_PLUGIN, cntkio/plugin.hpp).");
  }
  const int abi_version = abi();
  if (abi_version != CNTKIO_PLUGIN_ABI_VERSION) {
    ::dlclose(handle);
    refuse(module, "'" + loaded_from + "' was built for plugin ABI version " + std::to_string(abi_version) +
                       ", but this cntkio (" + std::string(::cntkio::version()) + ") has version " +
                       std::to_string(CNTKIO_PLUGIN_ABI_VERSION) + ": rebuild it against this cntkio.");
  }
  Registrar registrar;
  entry(registrar);
  g_loaded[module] = handle;
}

}  // namespace cntkio
