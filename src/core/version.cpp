// cntkio::version(): the CMake project version, compiled in as CNTKIO_VERSION.
#include "cntkio/version.hpp"

namespace cntkio {

const char* version() noexcept {
  return CNTKIO_VERSION;
}

}  // namespace cntkio
