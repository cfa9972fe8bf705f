#include "remote/lazy_mapping.hpp"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "cntkio/errors.hpp"

namespace cntkio::remote {
namespace {

int open_userfaultfd() {
  int fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
#ifdef UFFD_USER_MODE_ONLY
  // Without the right to handle kernel faults (vm.unprivileged_userfaultfd = 0), user faults are enough:
  // readers touch the mapping only with loads.
  if (fd < 0) fd = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
#endif
  return fd;
}

class LazyMapping;

// The live mappings, for fork(): a child gets neither the handler threads nor the userfaultfd registration,
// so the blocks not yet filled would read as zeros there. The child marks such mappings broken, and the
// reader's next check_intact() says why instead.
std::mutex g_live_mutex;
std::set<LazyMapping*>& live_mappings() {
  static std::set<LazyMapping*> live;
  return live;
}

// The filled blocks of every mapping, oldest first (under g_live_mutex). Their memory is anonymous: no page
// cache gives it back as it does for a local file's pages, so a whole remote corpus read through its mappings
// would stay in memory. Past a budget the oldest blocks are dropped (MADV_DONTNEED) and fetched again when
// touched again: the ETag check keeps the bytes the same.
struct FilledBlock {
  LazyMapping* mapping;
  uint64_t block;
  uint64_t bytes;
};
std::deque<FilledBlock>& filled_blocks() {
  static std::deque<FilledBlock> filled;
  return filled;
}
uint64_t g_filled_bytes = 0;

// CNTKIO_REMOTE_MAP_BYTES, else half the machine's memory.
uint64_t filled_budget() {
  static const uint64_t budget = [] {
    if (const char* text = std::getenv("CNTKIO_REMOTE_MAP_BYTES")) {
      char* end = nullptr;
      const unsigned long long value = std::strtoull(text, &end, 10);
      if (end != text && *end == '\0' && value > 0) return static_cast<uint64_t>(value);
    }
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return uint64_t{1} << 30;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) / 2;
  }();
  return budget;
}
void before_fork();
void after_fork_in_parent();
void after_fork_in_child();

class LazyMapping final : public FileMapping {
 public:
  LazyMapping(uint64_t size, uint64_t block_size, BlockReader read)
      : size_(size), block_size_(block_size), read_(std::move(read)) {}

  bool start() {
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (block_size_ % page != 0) return false;
    mapped_ = (size_ + page - 1) / page * page;
    void* region =
        ::mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (region == MAP_FAILED) return false;
    base_ = static_cast<char*>(region);
    uffd_ = open_userfaultfd();
    if (uffd_ < 0) return false;
    uffdio_api api{};
    api.api = UFFD_API;
    if (::ioctl(uffd_, UFFDIO_API, &api) != 0) return false;
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(base_);
    reg.range.len = mapped_;
    reg.mode = UFFDIO_REGISTER_MODE_MISSING;
    if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) return false;
    stop_ = ::eventfd(0, EFD_CLOEXEC);
    if (stop_ < 0) return false;
    state_.assign((size_ + block_size_ - 1) / block_size_, kMissing);
    // Several handlers: threads parsing parts of one chunk fault on different blocks at once.
    for (int i = 0; i < kHandlers; ++i) handlers_.emplace_back([this] { serve(); });
    static std::once_flag fork_handlers;
    std::call_once(fork_handlers,
                   [] { ::pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child); });
    std::lock_guard<std::mutex> lock(g_live_mutex);
    live_mappings().insert(this);
    return true;
  }

  ~LazyMapping() override {
    {
      std::lock_guard<std::mutex> lock(g_live_mutex);
      live_mappings().erase(this);
      std::deque<FilledBlock>& filled = filled_blocks();
      for (auto it = filled.begin(); it != filled.end();) {
        if (it->mapping == this) {
          g_filled_bytes -= it->bytes;
          it = filled.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!handlers_.empty()) {
      const uint64_t one = 1;  // never read: it keeps every handler's poll awake
      [[maybe_unused]] const ssize_t n = ::write(stop_, &one, sizeof one);
      for (std::thread& handler : handlers_) handler.join();
    }
    if (base_ != nullptr) ::munmap(base_, mapped_);
    if (uffd_ >= 0) ::close(uffd_);
    if (stop_ >= 0) ::close(stop_);
  }

  const char* data() const override { return base_; }
  size_t size() const override { return size_; }
  bool intact() const override { return !broken_.load(); }
  std::string failure() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return failure_;
  }

  // In a child process after fork() (its lock was taken before the fork, in before_fork()).
  void break_if_incomplete_after_fork() {
    const bool complete =
        std::all_of(state_.begin(), state_.end(), [](BlockState s) { return s == kFilled; });
    if (!complete && !broken_.load()) {
      failure_ =
          "a remote file's mapping does not survive fork(): blocks it had not fetched yet would read as "
          "zeros in the child; open the file in the child process instead";
      broken_.store(true);
    }
    // The handler threads are the parent's: here their std::thread objects name no thread, and neither
    // joining nor destroying them is possible, so they are left alone (a few bytes).
    new std::vector<std::thread>(std::move(handlers_));
    handlers_.clear();
  }
  std::mutex& mutex() { return mutex_; }

  // Gives block `b`'s memory back (under g_live_mutex); its next touch fetches it again.
  void drop(uint64_t b) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_[b] != kFilled) return;
    const uint64_t start = b * block_size_;
    ::madvise(base_ + start, std::min<uint64_t>(block_size_, mapped_ - start), MADV_DONTNEED);
    state_[b] = kMissing;
  }

 private:
  void serve() {
    std::vector<char> buffer(block_size_);
    for (;;) {
      pollfd fds[2] = {{uffd_, POLLIN, 0}, {stop_, POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      uffd_msg message{};
      const ssize_t got = ::read(uffd_, &message, sizeof message);
      if (got != sizeof message) continue;  // EAGAIN: another wake-up took it
      if (message.event != UFFD_EVENT_PAGEFAULT) continue;
      const uint64_t at = message.arg.pagefault.address - reinterpret_cast<uint64_t>(base_);
      fill(at / block_size_, buffer);
    }
  }

  // Copies block `b` into place (waking the faulting threads), or zeros when it cannot be read.
  void fill(uint64_t b, std::vector<char>& buffer) {
    const uint64_t start = b * block_size_;
    const uint64_t length = std::min<uint64_t>(block_size_, mapped_ - start);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (state_[b] == kFilling) return;  // another handler is copying it: the copy wakes this fault too
      if (state_[b] == kFilled) {         // a fault that raced with the copy: wake its thread
        uffdio_range range{reinterpret_cast<uint64_t>(base_) + start, length};
        ::ioctl(uffd_, UFFDIO_WAKE, &range);
        return;
      }
      state_[b] = kFilling;
    }
    const uint64_t bytes = std::min<uint64_t>(block_size_, size_ - start);
    BlockBytes block;
    bool ok = !broken_.load();
    if (ok) {
      try {
        block = read_(b);
        ok = block.size == bytes;
        if (!ok) throw IoError("short block " + std::to_string(b) + " of", "the mapped file", EIO);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);
        failure_ = e.what();
        ok = false;
      }
    }
    const char* source = block.data;
    if (!ok || bytes < length) {  // zeros where the block failed, and past the end of the file
      std::memset(buffer.data(), 0, length);
      if (ok) std::memcpy(buffer.data(), block.data, bytes);
      source = buffer.data();
      if (!ok) broken_.store(true);
    }
    // Accounted before the copy wakes the faulting thread: what the budget drops is gone when it reads on.
    account_filled(b, length);
    uffdio_copy copy{};
    copy.dst = reinterpret_cast<uint64_t>(base_) + start;
    copy.src = reinterpret_cast<uint64_t>(source);
    copy.len = length;
    copy.mode = 0;
    if (::ioctl(uffd_, UFFDIO_COPY, &copy) != 0 && errno == EEXIST) {
      uffdio_range range{copy.dst, length};
      ::ioctl(uffd_, UFFDIO_WAKE, &range);
    }
    std::lock_guard<std::mutex> lock(mutex_);
    state_[b] = kFilled;
  }

  // Records block `b` as filled (it is the newest: never dropped here) and drops the oldest blocks of all
  // mappings past the budget.
  void account_filled(uint64_t b, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    std::deque<FilledBlock>& filled = filled_blocks();
    filled.push_back({this, b, bytes});
    g_filled_bytes += bytes;
    while (g_filled_bytes > filled_budget() && filled.size() > 1) {
      const FilledBlock oldest = filled.front();
      filled.pop_front();
      g_filled_bytes -= oldest.bytes;
      oldest.mapping->drop(oldest.block);
    }
  }

  uint64_t size_;
  uint64_t block_size_;
  BlockReader read_;
  uint64_t mapped_ = 0;
  char* base_ = nullptr;
  int uffd_ = -1;
  int stop_ = -1;
  static constexpr int kHandlers = 3;
  enum BlockState : unsigned char { kMissing, kFilling, kFilled };
  std::vector<std::thread> handlers_;
  std::vector<BlockState> state_;  // under mutex_
  std::atomic<bool> broken_{false};
  mutable std::mutex mutex_;
  std::string failure_;
};

void before_fork() {
  g_live_mutex.lock();
  for (LazyMapping* mapping : live_mappings()) mapping->mutex().lock();
}

void after_fork_in_parent() {
  for (LazyMapping* mapping : live_mappings()) mapping->mutex().unlock();
  g_live_mutex.unlock();
}

void after_fork_in_child() {
  for (LazyMapping* mapping : live_mappings()) {
    mapping->break_if_incomplete_after_fork();
    mapping->mutex().unlock();
  }
  g_live_mutex.unlock();
}

}  // namespace

std::unique_ptr<FileMapping> make_lazy_mapping(uint64_t size, uint64_t block_size, BlockReader read) {
  if (size == 0) return nullptr;
  auto mapping = std::make_unique<LazyMapping>(size, block_size, std::move(read));
  if (!mapping->start()) return nullptr;
  return mapping;
}

}  // namespace cntkio::remote
