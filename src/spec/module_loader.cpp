// Loading plugins (cntkio/plugin.hpp): `module = "name"` finds a shared library, checks its ABI version and
// lets it register its types. A module is loaded once per process and never unloaded (its code backs the
// types it registered).
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/plugin.hpp"
#include "core/input_file.hpp"
#include "core/text.hpp"
#include "spec/plugin_guard.hpp"

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

// What a plugin registers is checked as it is used (spec/plugin_guard.hpp); a type that takes the name of
// one already registered replaces it, which is allowed but said.
class Registrar final : public PluginRegistrar {
 public:
  explicit Registrar(std::string module) : module_(std::move(module)) {}
  void add_deserializer(DeserializerType type) override {
    if (find_deserializer_type(type.name)) replacing("deserializer", type.name);
    register_deserializer(spec_detail::guard_plugin_deserializer_type(std::move(type), module_));
  }
  void add_transform(TransformType type) override {
    if (find_transform_type(type.name)) replacing("transform", type.name);
    register_transform(spec_detail::guard_plugin_transform_type(std::move(type), module_));
  }
  void add_reader_type(ReaderType type) override { register_reader_type(std::move(type)); }

 private:
  void replacing(const char* kind, const std::string& name) const {
    std::fprintf(
        stderr,
        "WARNING: module '%s' registers the %s type '%s', which replaces the one registered before.\n",
        module_.c_str(), kind, name.c_str());
  }

  std::string module_;
};

std::mutex g_modules_mutex;
std::map<std::string, void*> g_loaded;  // module name as given -> handle

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string last_dl_error(const char* fallback) {
  const char* error = ::dlerror();
  return error != nullptr ? error : fallback;
}

// The search for one module: every place tried, in order, with what was found there.
struct Search {
  std::string module;
  std::string places;       // "place (outcome); ..." in order (one line: the CLI prints an error as one)
  void* handle = nullptr;   // the library taken, or null
  std::string loaded_from;  // where it was taken from

  void note(const std::string& place, const std::string& outcome) {
    places += (places.empty() ? " " : "; ") + place + " (" + outcome + ")";
  }
};

// Tries the names a plugin may have in `folder`; true when one loaded.
bool search_folder(Search& search, const std::string& folder) {
  for (const std::string& name : {"lib" + search.module + ".so", search.module + ".so", search.module}) {
    const std::string path = folder + "/" + name;
    if (!is_file(path)) {
      search.note(path, "not there");
      continue;
    }
    search.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (search.handle != nullptr) {
      search.loaded_from = path;
      return true;
    }
    search.note(path, last_dl_error("dlopen failed"));
  }
  return false;
}

// The folders of the search in order: the config's folder, then CNTKIO_PLUGIN_PATH's.
void search_folders(Search& search, const std::string& config_directory) {
  if (!config_directory.empty() && search_folder(search, config_directory)) return;
  const char* plugin_path = std::getenv("CNTKIO_PLUGIN_PATH");
  const std::vector<std::string> folders = core::split_path_list(plugin_path);
  if (folders.empty()) search.note("CNTKIO_PLUGIN_PATH", "not set or empty");
  for (const std::string& folder : folders) {
    if (search_folder(search, folder)) return;
  }
}

// The system's loader, with its own search path.
void search_system(Search& search) {
  const char* library_path = std::getenv("LD_LIBRARY_PATH");
  const std::string where =
      std::string(" through the system loader (LD_LIBRARY_PATH ") +
      (library_path != nullptr && *library_path != '\0' ? "'" + std::string(library_path) + "'" : "not set") +
      ", then ld.so.cache, /lib, /usr/lib)";
  for (const std::string& name : {"lib" + search.module + ".so", search.module}) {
    search.handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (search.handle != nullptr) {
      search.loaded_from = name;
      return;
    }
    search.note(name + where, last_dl_error("not found"));
  }
}

// The file a library found by the system loader came from, for messages.
std::string file_of(void* symbol, const std::string& fallback) {
  Dl_info info{};
  if (::dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) return info.dli_fname;
  return fallback;
}

[[noreturn]] void refuse(const Search& search, const std::string& why) {
  throw ConfigError("Cannot load module '" + search.module + "': " + why +
                        " Searched, in order (the config's folder, then CNTKIO_PLUGIN_PATH, then the system "
                        "loader):" +
                        search.places,
                    "module");
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
  core::check_input_path(module);
  if (!config_directory.empty()) core::check_input_path(config_directory);
  std::lock_guard<std::mutex> lock(g_modules_mutex);
  if (g_loaded.count(module) != 0) return;

  Search search;
  search.module = module;
  if (module.find('/') != std::string::npos) {
    // A path: loaded as it is.
    search.handle = is_file(module) ? ::dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (search.handle == nullptr)
      search.note(module, is_file(module) ? last_dl_error("dlopen failed") : "not there");
    search.loaded_from = module;
  } else {
    search_folders(search, config_directory);
    if (search.handle == nullptr) search_system(search);
  }
  if (search.handle == nullptr) refuse(search, "no loadable shared library was found.");

  using AbiVersion = int (*)();
  using Register = void (*)(PluginRegistrar&);
  auto abi = reinterpret_cast<AbiVersion>(::dlsym(search.handle, "cntkio_plugin_abi_version"));
  auto entry = reinterpret_cast<Register>(::dlsym(search.handle, "cntkio_plugin_register"));
  const std::string file =
      abi != nullptr ? file_of(reinterpret_cast<void*>(abi), search.loaded_from) : search.loaded_from;
  search.note(file, "taken");
  if (abi == nullptr || entry == nullptr) {
    ::dlclose(search.handle);
    refuse(search,
           "'" + file +
               "' is not a cntkio plugin: it has no cntkio_plugin_abi_version / cntkio_plugin_register "
               "entry point (define them with CNTKIO_PLUGIN, cntkio/plugin.hpp).");
  }
  const int abi_version = abi();
  if (abi_version != CNTKIO_PLUGIN_ABI_VERSION) {
    ::dlclose(search.handle);
    refuse(search, "'" + file + "' was built for plugin ABI version " + std::to_string(abi_version) +
                       ", but this cntkio (" + std::string(::cntkio::version()) + ") has version " +
                       std::to_string(CNTKIO_PLUGIN_ABI_VERSION) + ": rebuild it against this cntkio.");
  }
  Registrar registrar(module);
  try {
    entry(registrar);
  } catch (const std::exception& e) {
    // Types registered before the failure stay registered (the library stays loaded for them).
    refuse(search, "its registration function failed: " + std::string(e.what()));
  } catch (...) {
    refuse(search, "its registration function threw an exception that is not a std::exception.");
  }
  g_loaded[module] = search.handle;
}

}  // namespace cntkio
