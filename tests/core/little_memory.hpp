// Runs a check in a child process whose address space may grow by only a little: for code that must fail
// cleanly (an error, not an abort or the machine's memory) when memory or thread stacks run out.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>

namespace cntkio::test {

/// True when `fn`, run in a forked child whose address space may grow by at most `extra_bytes`, returned
/// true (and the child neither threw nor died).
inline bool within_little_memory(const std::function<bool()>& fn, rlim_t extra_bytes = rlim_t{256} << 20) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t now = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE));
    const rlimit limit{now + extra_bytes, now + extra_bytes};
    ::setrlimit(RLIMIT_AS, &limit);
    bool ok = false;
    try {
      ok = fn();
    } catch (...) {
      ok = false;
    }
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace cntkio::test
