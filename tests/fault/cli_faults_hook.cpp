// Linked into `cntkio_faults` (the CLI built for the fault tests only, never installed): before main() runs,
// installs a FaultEnv scripted by the environment variable CNTKIO_TEST_FAULTS, a `;`-separated list of
// `<op>,<nth>,<errno>,<path part>` (op: read, write, sync or rename), so that a test can check what the
// command line does under a fault of the storage (exit status 5, nothing left at the output's name).
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "cntkio/env.hpp"
#include "core/env/fault_env.hpp"

namespace {

const bool g_installed = [] {
  const char* script = std::getenv("CNTKIO_TEST_FAULTS");
  if (script == nullptr || *script == '\0') return false;
  auto env = std::make_shared<cntkio::core::FaultEnv>();
  std::istringstream faults(script);
  std::string item;
  while (std::getline(faults, item, ';')) {
    std::istringstream fields(item);
    std::string op, nth, error;
    cntkio::core::Fault f;
    std::getline(fields, op, ',');
    std::getline(fields, nth, ',');
    std::getline(fields, error, ',');
    std::getline(fields, f.path_contains);
    f.op = op == "write"    ? cntkio::core::Fault::Op::kWrite
           : op == "sync"   ? cntkio::core::Fault::Op::kSync
           : op == "rename" ? cntkio::core::Fault::Op::kRename
                            : cntkio::core::Fault::Op::kRead;
    f.nth = std::stoull(nth);
    f.error = std::stoi(error);
    env->add(f);
  }
  cntkio::Env::install(env);
  return true;
}();

}  // namespace
