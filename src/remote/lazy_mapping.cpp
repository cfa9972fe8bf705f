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
#include <condition_variable>
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
    if (const char* text = std::getenv("CNTKIO_REMOTE_MAP_BYTES"); text != nullptr && *text != '\0') {
      char* end = nullptr;
      errno = 0;
      const unsigned long long value = std::strtoull(text, &end, 10);
      if (errno != 0 || *end != '\0' || *text < '0' || *text > '9' || value == 0) {
        throw UsageError(std::string("the environment variable CNTKIO_REMOTE_MAP_BYTES='") + text +
                         "' is not a whole number of bytes above 0");
      }
      return static_cast<uint64_t>(value);
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
  LazyMapping(uint64_t size, uint64_t block_size, BlockSource source)
      : size_(size), block_size_(block_size), source_(std::move(source)) {}

  bool start() {
    page_ = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (block_size_ % page_ != 0) return false;
    mapped_ = (size_ + page_ - 1) / page_ * page_;
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
    hinted_.assign(state_.size(), 0);
    // One handler: it only starts fetches (it never waits for one) and copies blocks the cache holds.
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
      // Fetches in flight stop at their next bytes; they end before the memory goes.
      std::unique_lock<std::mutex> lock(mutex_);
      closing_ = true;
      runs_done_.wait(lock, [&] { return runs_in_flight_ == 0; });
    }
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

  // Starts the fetches of the blocks of the range that are neither there nor coming: a chunk's parts then
  // find their bytes arriving instead of each discovering them fault by fault.
  void will_need(uint64_t offset, uint64_t size) const override {
    if (size == 0 || offset >= size_) return;
    const uint64_t last = (std::min(size_, offset + size) - 1) / block_size_;
    const_cast<LazyMapping*>(this)->start_fetches(offset / block_size_, last, Origin::kHint);
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
    // The handler and fetch threads are the parent's: here their std::thread objects name no thread, and
    // neither joining nor destroying them is possible, so they are left alone (a few bytes).
    new std::vector<std::thread>(std::move(handlers_));
    handlers_.clear();
    runs_in_flight_ = 0;
  }
  std::mutex& mutex() { return mutex_; }

  // Gives block `b`'s memory back (under g_live_mutex); its next touch fetches it again. A block still
  // coming is kept (kBusy); one no longer there (a hint's fetch failed) only leaves the accounting (kGone).
  enum class Drop { kDropped, kBusy, kGone };
  Drop drop(uint64_t b) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_[b] == kFilling) return Drop::kBusy;
    if (state_[b] == kMissing) return Drop::kGone;
    const uint64_t start = b * block_size_;
    ::madvise(base_ + start, std::min<uint64_t>(block_size_, mapped_ - start), MADV_DONTNEED);
    state_[b] = kMissing;
    return Drop::kDropped;
  }

 private:
  // Who started a fetch: a fault (a thread waits on it: a failure gives zeros and breaks the mapping) or a
  // hint (a failure leaves the blocks missing, so that a fault tries them again and reports).
  enum class Origin { kFault, kHint };

  void serve() {
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
      on_fault(at / block_size_);
    }
  }

  // A fault on a block that is coming needs nothing (its page's copy wakes the thread) but may extend the
  // read-ahead: like the kernel's read-ahead for a file, the window grows with the walk, here measured as the
  // blocks before `b` that faults brought in (those of a hint are a chunk's, not a walk's).
  void on_fault(uint64_t b) {
    uint64_t walked = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (state_[b] == kFilled) {  // a fault that raced with the copy: wake its thread
        wake(b * block_size_, block_length(b));
        return;
      }
      while (walked < source_.read_ahead_blocks && walked < b && state_[b - walked - 1] != kMissing &&
             !hinted_[b - walked - 1]) {
        ++walked;
      }
      if (state_[b] == kFilling) {
        // Blocks on their way ahead of this one: the window is extended only once half of it is used, so
        // that it grows in runs of many blocks (one request each), not a block at a time.
        uint64_t coming = 1;
        while (coming <= walked && b + coming < state_.size() && state_[b + coming] != kMissing) ++coming;
        if (b + coming >= state_.size() || coming > walked / 2) return;
      }
    }
    start_fetches(b, b + walked, Origin::kFault);
  }

  uint64_t block_length(uint64_t b) const {
    return std::min<uint64_t>(block_size_, mapped_ - b * block_size_);
  }

  void wake(uint64_t start, uint64_t length) {
    uffdio_range range{reinterpret_cast<uint64_t>(base_) + start, length};
    ::ioctl(uffd_, UFFDIO_WAKE, &range);
  }

  // Claims the missing blocks of [first, last]: those the cache holds are copied now, the others fetched in
  // runs of consecutive blocks, one request each, by threads of their own.
  void start_fetches(uint64_t first, uint64_t last, Origin origin) {
    std::vector<uint64_t> claimed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (origin == Origin::kHint && (closing_.load() || broken_.load())) return;
      for (uint64_t b = first; b <= last && b < state_.size(); ++b) {
        if (state_[b] != kMissing) continue;
        state_[b] = kFilling;
        hinted_[b] = origin == Origin::kHint;
        claimed.push_back(b);
      }
    }
    if (claimed.empty()) return;
    account_filled(claimed);
    std::vector<std::pair<uint64_t, uint64_t>> runs;  // first block, count
    for (const uint64_t b : claimed) {
      const BlockBytes cached = broken_.load() ? BlockBytes{} : source_.cached(b);
      if (cached.data != nullptr && cached.size == std::min<uint64_t>(block_size_, size_ - b * block_size_)) {
        place_block(b, cached.data, cached.size);
        continue;
      }
      if (!runs.empty() && runs.back().first + runs.back().second == b &&
          runs.back().second < source_.blocks_per_fetch) {
        ++runs.back().second;
      } else {
        runs.emplace_back(b, 1);
      }
    }
    if (runs.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      runs_in_flight_ += runs.size();
    }
    for (const auto& [run_first, count] : runs) {
      std::thread([this, run_first, count, origin] {
        fetch_run(run_first, count, origin);
        std::lock_guard<std::mutex> lock(mutex_);
        if (--runs_in_flight_ == 0) runs_done_.notify_all();
      }).detach();
    }
  }

  // Copies `length` bytes (whole pages) from `source` to `offset` of the mapping, waking the threads waiting
  // there; pages already there (a fetch tried again) are skipped. False when the mapping cannot take them.
  bool place(uint64_t offset, const char* source, uint64_t length) {
    while (length > 0) {
      uffdio_copy copy{};
      copy.dst = reinterpret_cast<uint64_t>(base_) + offset;
      copy.src = reinterpret_cast<uint64_t>(source);
      copy.len = length;
      copy.mode = 0;
      if (::ioctl(uffd_, UFFDIO_COPY, &copy) == 0) return true;
      const int error = errno;
      uint64_t done = copy.copy > 0 ? static_cast<uint64_t>(copy.copy) : 0;
      if (error == EEXIST && done == 0) {
        wake(offset, page_);
        done = page_;
      } else if (error != EAGAIN && error != EEXIST) {
        return false;
      }
      offset += done;
      source += done;
      length -= done;
    }
    return true;
  }

  // Block `b` from bytes at hand (its last page padded with zeros where the file ends).
  void place_block(uint64_t b, const char* data, uint64_t bytes) {
    const uint64_t length = block_length(b);
    if (bytes < length) {
      std::vector<char> padded(length, 0);
      std::memcpy(padded.data(), data, bytes);
      place(b * block_size_, padded.data(), length);
    } else {
      place(b * block_size_, data, length);
    }
    mark_filled(b);
  }

  void mark_filled(uint64_t b) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_[b] = kFilled;
  }

  // One request for blocks [first, first + count): pages are copied into place as they arrive (whole pages
  // straight from the transfer's buffer, the others through `carry`), each block marked filled once complete.
  void fetch_run(uint64_t first, uint64_t count, Origin origin) {
    const uint64_t begin = first * block_size_;
    const uint64_t end = std::min(mapped_, (first + count) * block_size_);  // whole pages
    std::vector<char> carry(page_);
    uint64_t carried = 0;
    uint64_t placed = 0;     // bytes from `begin` copied into place
    uint64_t completed = 0;  // blocks of the run marked filled
    bool stopped = false;
    auto complete_blocks = [&] {
      while (completed < count && begin + placed >= std::min(end, (first + completed + 1) * block_size_)) {
        mark_filled(first + completed);
        ++completed;
      }
    };
    const Sink sink = [&](uint64_t offset, const char* data, size_t n) {
      if (closing_.load()) return false;
      // Asked whether the transfer is still wanted: not once the mapping is broken (its reader fails at its
      // next check, so a thread waiting on these pages had better get zeros now than after time-outs).
      if (data == nullptr) return !broken_.load();
      if (offset == 0 && (placed != 0 || carried != 0)) {  // tried again from the start: the pages there stay
        placed = 0;
        carried = 0;
      }
      while (n > 0) {
        if (carried > 0 || n < page_) {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(page_ - carried, n));
          std::memcpy(carry.data() + carried, data, take);
          carried += take;
          data += take;
          n -= take;
          if (carried == page_) {
            if (!place(begin + placed, carry.data(), page_)) {
              stopped = true;
              return false;
            }
            placed += page_;
            carried = 0;
          }
        } else {
          const uint64_t whole = n / page_ * page_;
          if (!place(begin + placed, data, whole)) {
            stopped = true;
            return false;
          }
          placed += whole;
          data += whole;
          n -= static_cast<size_t>(whole);
        }
        complete_blocks();
      }
      return true;
    };
    try {
      // A broken mapping is refused by its reader's next check: its faults get zeros at once.
      if (broken_.load())
        throw IoError("not fetched (the mapping is broken) at byte " + std::to_string(begin) + " of",
                      "the mapped file", EIO);
      source_.fetch(begin, std::min(size_, end) - 1, sink);
      if (stopped)
        throw IoError("the mapping took no more pages at byte " + std::to_string(begin + placed) + " of",
                      "the mapped file", EIO);
      if (carried > 0) {  // the file's last page
        std::memset(carry.data() + carried, 0, page_ - carried);
        place(begin + placed, carry.data(), page_);
        placed += page_;
      }
      if (begin + placed < end) {
        throw IoError("short answer (" + std::to_string(placed) + " bytes) for the blocks at byte " +
                          std::to_string(begin) + " of",
                      "the mapped file", EIO);
      }
      complete_blocks();
    } catch (const std::exception& e) {
      if (closing_.load()) return;
      if (origin == Origin::kHint) {
        // Missing again: a thread waiting on one of them faults again, and that fault fetches it (or
        // reports).
        std::lock_guard<std::mutex> lock(mutex_);
        for (uint64_t b = first + completed; b < first + count; ++b) state_[b] = kMissing;
        wake(begin, end - begin);
        return;
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (failure_.empty()) failure_ = e.what();
      }
      broken_.store(true);
      // Zeros where the bytes did not come: the threads waiting there go on, and check_intact() refuses what
      // they read.
      const std::vector<char> zeros(block_size_, 0);
      for (uint64_t b = first + completed; b < first + count; ++b) {
        const uint64_t from = std::max(begin + placed, b * block_size_);
        place(from, zeros.data(), b * block_size_ + block_length(b) - from);
        mark_filled(b);
      }
    }
  }

  // Records blocks as filled, in the order they were claimed (the order the reader asked for them: their
  // pages may arrive in another), and drops the oldest blocks of all mappings past the budget, but for blocks
  // still coming (a reader waits on them).
  void account_filled(const std::vector<uint64_t>& blocks) {
    std::lock_guard<std::mutex> lock(g_live_mutex);
    std::deque<FilledBlock>& filled = filled_blocks();
    const size_t old_entries = filled.size();
    for (const uint64_t b : blocks) {
      filled.push_back({this, b, block_length(b)});
      g_filled_bytes += block_length(b);
    }
    size_t i = 0;
    for (size_t left = old_entries; left > 0 && g_filled_bytes > filled_budget(); --left) {
      const FilledBlock oldest = filled[i];
      if (oldest.mapping->drop(oldest.block) == Drop::kBusy) {
        ++i;
        continue;
      }
      g_filled_bytes -= oldest.bytes;
      filled.erase(filled.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  uint64_t size_;
  uint64_t block_size_;
  BlockSource source_;
  uint64_t page_ = 4096;
  uint64_t mapped_ = 0;
  char* base_ = nullptr;
  int uffd_ = -1;
  int stop_ = -1;
  static constexpr int kHandlers = 1;
  enum BlockState : unsigned char { kMissing, kFilling, kFilled };
  std::vector<std::thread> handlers_;
  std::vector<BlockState> state_;  // under mutex_
  std::vector<char> hinted_;       // under mutex_: claimed by a hint (not part of a walk)
  std::atomic<bool> broken_{false};
  std::atomic<bool> closing_{false};
  size_t runs_in_flight_ = 0;  // under mutex_
  std::condition_variable runs_done_;
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

std::unique_ptr<FileMapping> make_lazy_mapping(uint64_t size, uint64_t block_size, BlockSource source) {
  if (size == 0) return nullptr;
  filled_budget();  // a malformed CNTKIO_REMOTE_MAP_BYTES is reported here, not where blocks are filled
  auto mapping = std::make_unique<LazyMapping>(size, block_size, std::move(source));
  if (!mapping->start()) return nullptr;
  return mapping;
}

}  // namespace cntkio::remote
