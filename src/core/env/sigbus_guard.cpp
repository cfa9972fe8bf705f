#include "core/env/sigbus_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <mutex>

namespace cntkio::core::env {
namespace {

// The handler reads the table without locks (only atomics), registration takes a mutex.
constexpr int kGuardSlots = 4096;
struct GuardSlot {
  std::atomic<uintptr_t> begin{0};  // 0: free
  std::atomic<uintptr_t> end{0};
  std::atomic<uint32_t> faulted{0};
};
GuardSlot g_slots[kGuardSlots];
std::mutex g_registration;
struct sigaction g_previous {};
uintptr_t g_page_size = 4096;
std::atomic<uint64_t> g_faults{0};

void forward_to_previous(int signal_number, siginfo_t* info, void* context) {
  if ((g_previous.sa_flags & SA_SIGINFO) != 0) {
    if (g_previous.sa_sigaction != nullptr) g_previous.sa_sigaction(signal_number, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
      g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(signal_number);
    return;
  }
  // Default action: restore it. A fault re-runs the faulting instruction and dies as it would have without
  // cntkio; a signal sent by a process must be sent again.
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal_number, &fallback, nullptr);
  if (info == nullptr || info->si_code <= 0) ::raise(signal_number);
}

void on_sigbus(int signal_number, siginfo_t* info, void* context) {
  // si_code > 0: raised by the kernel for a memory access, so si_addr is the faulting address.
  if (info != nullptr && info->si_code > 0) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(info->si_addr);
    for (GuardSlot& slot : g_slots) {
      const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
      if (begin == 0 || address < begin || address >= slot.end.load(std::memory_order_acquire)) continue;
      const int saved_errno = errno;
      void* page = reinterpret_cast<void*>(address & ~(g_page_size - 1));
      void* zeros = ::mmap(page, g_page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      errno = saved_errno;
      if (zeros == MAP_FAILED) break;
      slot.faulted.store(1, std::memory_order_release);
      g_faults.fetch_add(1, std::memory_order_relaxed);
      return;  // the read is retried and now sees zeros
    }
  }
  forward_to_previous(signal_number, info, context);
}

// Installs the handler unless it is already the active one (someone may have replaced it since: Python's
// faulthandler, for one); the handler found is the one faults outside cntkio's mappings go to. Called with
// g_registration held.
void install_guard() {
  struct sigaction current {};
  if (::sigaction(SIGBUS, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) != 0 && current.sa_sigaction == &on_sigbus) return;
  g_page_size = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction ours {};
  ours.sa_sigaction = &on_sigbus;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  g_previous = current;
  ::sigaction(SIGBUS, &ours, nullptr);
}

}  // namespace

int register_mapping(const char* data, size_t size) {
  std::lock_guard<std::mutex> lock(g_registration);
  install_guard();
  for (int i = 0; i < kGuardSlots; ++i) {
    GuardSlot& slot = g_slots[i];
    if (slot.begin.load(std::memory_order_relaxed) != 0) continue;
    slot.faulted.store(0, std::memory_order_relaxed);
    slot.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_release);
    slot.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_mapping(int slot_index) {
  std::lock_guard<std::mutex> lock(g_registration);
  GuardSlot& slot = g_slots[slot_index];
  slot.begin.store(0, std::memory_order_release);
  slot.end.store(0, std::memory_order_release);
}

bool mapping_faulted(int slot_index) {
  return g_slots[slot_index].faulted.load(std::memory_order_acquire) != 0;
}

uint64_t guarded_faults() {
  return g_faults.load();
}

}  // namespace cntkio::core::env
