// Loading the format components (spec/components.hpp). A component holds only its format's code: the rest of
// cntkio (the registry, the Env, the errors) it takes from the program or library that holds cntkio, its
// host, which exports those symbols (cmake/image_component.cmake). Like the plugin loader, this calls the
// file system directly: dlopen() needs a local path.
#include "spec/components.hpp"

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "cntkio/errors.hpp"
#include "core/text.hpp"

// Defined when the image format is linked into this program (the unit tests link its objects): its types
// are then registered from there, and no file is loaded.
extern "C" void cntkio_component_register_image() __attribute__((weak));

namespace cntkio::spec_detail {
namespace {

struct Component {
  const char* name;      // "image": the entry points are cntkio_component_{version,register}_<name>
  const char* file;      // the shared module's file name
  void (*linked_in)();   // its registration function when linked into this program, else null
  const char* provides;  // for messages
  std::vector<std::string_view> deserializers;
  std::vector<std::string_view> transforms;
  std::vector<std::string_view> readers;
  bool loaded = false;
};

std::vector<Component>& components() {
  static std::vector<Component> list = {
#ifdef CNTKIO_IMAGE_COMPONENT
      {"image",
       "cntkio_image.so",
       &cntkio_component_register_image,
       "the image format: ImageDeserializer, Base64ImageDeserializer, readerType ImageReader and the image "
       "transforms",
       {"ImageDeserializer", "Base64ImageDeserializer"},
       {"Crop", "Scale", "Color", "Intensity", "Mean", "Transpose", "Cast"},
       {"ImageReader"}},
#endif
  };
  return list;
}

std::recursive_mutex g_mutex;  // recursive: a component's registration may look names up
thread_local bool t_registering = false;

const std::vector<std::string_view>& names_of(const Component& c, NameKind kind) {
  switch (kind) {
    case NameKind::kDeserializer:
      return c.deserializers;
    case NameKind::kTransform:
      return c.transforms;
    case NameKind::kReader:
      break;
  }
  return c.readers;
}

bool provides(const Component& c, NameKind kind, std::string_view name) {
  for (std::string_view known : names_of(c, kind)) {
    if (kind == NameKind::kReader ? core::iequals(known, name) : known == name) return true;
  }
  return false;
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// Marks this function's address: it lies in the host, whatever name the dynamic linker binds to.
void host_marker() {}

// The file holding this code (the program, the Python module or libcntkio.so) and its link map entry.
std::string host_file(link_map*& map) {
  Dl_info info{};
  map = nullptr;
  std::string path = "/proc/self/exe";
  if (::dladdr1(reinterpret_cast<void*>(&host_marker), &info, reinterpret_cast<void**>(&map),
                RTLD_DL_LINKMAP) != 0 &&
      map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    path = map->l_name;
  }
  char resolved[PATH_MAX];
  return ::realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

// Folders searched in order: CNTKIO_COMPONENT_PATH's, then beside the host (the build tree, the Python
// package), <libdir>/cntkio for libcntkio.so in <libdir>, and <libdir>/cntkio for a program in <bindir>.
std::vector<std::string> folders(const std::string& host) {
  std::vector<std::string> out = core::split_path_list(std::getenv("CNTKIO_COMPONENT_PATH"));
  const std::string dir = host.substr(0, host.find_last_of('/'));
  out.push_back(dir);
  out.push_back(dir + "/cntkio");
  out.push_back(dir + "/" CNTKIO_BIN_TO_LIBDIR "/cntkio");
  return out;
}

void register_with(void (*entry)()) {
  t_registering = true;
  try {
    entry();
  } catch (...) {
    t_registering = false;
    throw;
  }
  t_registering = false;
}

void load(Component& c) {
  link_map* map = nullptr;
  const std::string host = host_file(map);
  // The component resolves cntkio's symbols in the host, which must therefore be in the global scope: the
  // Python module was loaded RTLD_LOCAL (a program and the libraries it links are global already).
  if (map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0') {
    ::dlopen(map->l_name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);  // kept: the component stays loaded
  }
  const char* component_path = std::getenv("CNTKIO_COMPONENT_PATH");
  std::string tried =
      component_path == nullptr || *component_path == '\0' ? "CNTKIO_COMPONENT_PATH (not set)" : "";
  void* handle = nullptr;
  bool unexported = false;  // a component was found, but the host does not export cntkio's symbols
  std::string path;
  for (const std::string& folder : folders(host)) {
    path = folder + "/" + c.file;
    if (!is_file(path)) {
      tried += (tried.empty() ? "" : "; ") + path + " (not there)";
      continue;
    }
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved) != nullptr) path = resolved;  // bin/../lib: lib
    handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) break;
    const char* error = ::dlerror();
    tried += (tried.empty() ? "" : "; ") + path + " (" + (error != nullptr ? error : "dlopen failed") + ")";
    if (error != nullptr &&
        std::string_view(error).find("undefined symbol: _ZN6cntkio") != std::string_view::npos) {
      unexported = true;
    }
  }
  const std::string what = std::string("the ") + c.name + " component, which provides " + c.provides + ",";
  if (handle == nullptr) {
    if (unexported) {
      throw IoError("Cannot load " + what + " for " + host + ": looked for, in order: " + tried + ". " +
                        host +
                        " holds cntkio but does not export its symbols, which the component uses: link "
                        "libcntkio.so instead, or the static library whole and exported (-Wl,--whole-archive "
                        "-lcntkio -Wl,--no-whole-archive -rdynamic); file",
                    c.file, 0);
    }
    throw IoError("Cannot load " + what + " for " + host + ": looked for, in order: " + tried +
                      ". Install it beside cntkio or name its folder in CNTKIO_COMPONENT_PATH; file",
                  c.file, ENOENT);
  }
  using Version = const char* (*)();
  using Register = void (*)();
  const std::string suffix = c.name;
  auto version = reinterpret_cast<Version>(::dlsym(handle, ("cntkio_component_version_" + suffix).c_str()));
  auto entry = reinterpret_cast<Register>(::dlsym(handle, ("cntkio_component_register_" + suffix).c_str()));
  if (version == nullptr || entry == nullptr) {
    ::dlclose(handle);
    throw IoError("Cannot load " + what + " the file has no cntkio_component_*_" + suffix + " entry points",
                  path, 0);
  }
  if (std::string_view(version()) != CNTKIO_VERSION) {
    const std::string built_for = version();
    ::dlclose(handle);
    throw IoError("Cannot load " + what + " the file was built for cntkio " + built_for +
                      ", this is cntkio " + CNTKIO_VERSION,
                  path, 0);
  }
  c.loaded = true;  // before registering: the registration may look names up
  try {
    register_with(entry);
  } catch (...) {
    c.loaded = false;  // tried again on the next lookup, and fails again as loudly
    throw;
  }
}

}  // namespace

bool load_component_providing(NameKind kind, std::string_view name) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  for (Component& c : components()) {
    if (c.loaded || !provides(c, kind, name)) continue;
    if (c.linked_in != nullptr) {
      c.loaded = true;
      register_with(c.linked_in);
    } else {
      load(c);
    }
    return true;
  }
  return false;
}

std::vector<std::string> unloaded_component_names(NameKind kind) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  std::vector<std::string> out;
  for (const Component& c : components()) {
    if (c.loaded) continue;
    for (std::string_view name : names_of(c, kind)) out.emplace_back(name);
  }
  return out;
}

bool registering_component() {
  return t_registering;
}

}  // namespace cntkio::spec_detail
