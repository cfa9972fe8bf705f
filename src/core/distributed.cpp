#include "cntkio/distributed.hpp"

#include <cerrno>
#include <cstdlib>
#include <limits>

#include "cntkio/errors.hpp"

namespace cntkio {
namespace {

bool read_number(const char* name, size_t& value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long parsed = std::strtoull(text, &end, 10);
  if (*end != '\0' || *text < '0' || *text > '9') {
    throw UsageError(std::string("Environment variable ") + name + "='" + text +
                     "' is not a non-negative integer.");
  }
  // strtoull saturates: 10^23 would become 2^64-1 workers.
  if (errno == ERANGE || parsed > std::numeric_limits<size_t>::max()) {
    throw UsageError(std::string("Environment variable ") + name + "='" + text +
                     "' is out of range (at most " + std::to_string(std::numeric_limits<size_t>::max()) +
                     ").");
  }
  value = static_cast<size_t>(parsed);
  return true;
}

}  // namespace

WorkerInfo worker_from_environment() {
  struct Scheme {
    const char* source;
    const char* rank;
    const char* size;
    const char* local_rank;
  };
  static const Scheme kSchemes[] = {
      {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"},
      {"torch", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
  };
  WorkerInfo info;
  info.source = "none";
  for (const Scheme& s : kSchemes) {
    size_t rank = 0, size = 0;
    bool has_rank = read_number(s.rank, rank);
    bool has_size = read_number(s.size, size);
    if (!has_rank && !has_size) continue;
    if (!has_rank || !has_size || size == 0 || rank >= size) {
      throw UsageError(std::string("Inconsistent ") + s.source + " environment: " + s.rank + " and " +
                       s.size + " must both be set, with the rank below the size.");
    }
    info.rank = rank;
    info.count = size;
    if (!read_number(s.local_rank, info.local_rank)) info.local_rank = rank;
    info.source = s.source;
    return info;
  }
  return info;
}

}  // namespace cntkio
