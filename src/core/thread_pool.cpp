#include "core/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <system_error>

#include "cntkio/errors.hpp"

namespace cntkio::core {
namespace {

thread_local ThreadPool* current_pool = nullptr;

}  // namespace

ThreadPool::ThreadPool(size_t threads) : busy_ns_(std::make_unique<std::atomic<uint64_t>[]>(threads)) {
  workers_.reserve(threads);
  try {
    for (size_t i = 0; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
  } catch (const std::system_error& e) {
    // The system refused a thread (its limit, or memory): the ones started are stopped, not left attached
    // (which would end the process).
    const size_t started = workers_.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : workers_) t.join();
    throw Error("Could not start loader thread " + std::to_string(started + 1) + " of " +
                std::to_string(threads) + " (" + e.what() + "): ask for fewer threads.");
  }
}

std::vector<double> ThreadPool::busy_seconds() const {
  std::vector<double> seconds;
  for (size_t i = 0; i < workers_.size(); ++i) {
    seconds.push_back(static_cast<double>(busy_ns_[i].load(std::memory_order_relaxed)) / 1e9);
  }
  return seconds;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  ready_.notify_all();
  for (std::thread& t : workers_) t.join();
}

size_t ThreadPool::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return waiting_ > queue_.size() ? waiting_ - queue_.size() : 0;
}

ThreadPool* ThreadPool::current() {
  return current_pool;
}

ThreadPool::ScopedCurrent::ScopedCurrent(ThreadPool* pool) : previous_(current_pool) {
  if (pool != nullptr) current_pool = pool;
}

ThreadPool::ScopedCurrent::~ScopedCurrent() {
  current_pool = previous_;
}

size_t ThreadPool::hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : n;
}

void ThreadPool::work(size_t index) {
  current_pool = this;
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ++waiting_;
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      --waiting_;
      if (stopping_) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto start = std::chrono::steady_clock::now();
    task();
    const auto busy = std::chrono::steady_clock::now() - start;
    busy_ns_[index].fetch_add(
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(busy).count()),
        std::memory_order_relaxed);
  }
}

namespace {

// Shared by the caller and the helpers of one run_parts(); helpers hold it by shared_ptr, so one that
// starts after the caller returned finds every part claimed and touches nothing else.
struct PartsJob {
  explicit PartsJob(size_t n, const std::function<void(size_t)>* f) : parts(n), part(f), errors(n) {}
  const size_t parts;
  const std::function<void(size_t)>* part;  // valid while a claimed part is unfinished
  std::atomic<size_t> next{0};
  std::mutex mutex;
  std::condition_variable all_done;
  size_t done = 0;
  std::vector<std::exception_ptr> errors;

  void run_claimed() {
    for (;;) {
      const size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= parts) return;
      try {
        (*part)(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (++done == parts) all_done.notify_all();
    }
  }
};

}  // namespace

void run_parts(ThreadPool* pool, size_t helpers, size_t parts, const std::function<void(size_t)>& part) {
  if (parts == 0) return;
  auto job = std::make_shared<PartsJob>(parts, &part);
  if (pool != nullptr && pool->size() > 0) {
    helpers = std::min(helpers, parts - 1);
    for (size_t h = 0; h < helpers; ++h) pool->submit([job] { job->run_claimed(); });
  }
  job->run_claimed();
  {
    std::unique_lock<std::mutex> lock(job->mutex);
    job->all_done.wait(lock, [&] { return job->done == job->parts; });
  }
  for (const std::exception_ptr& e : job->errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace cntkio::core
