// A fixed-size pool of worker threads running tasks in submission order (FIFO), and run_parts(), which
// spreads the parts of one job over the calling thread and the idle workers of a pool.
//
// Thread-safety: submit(), idle() and run_parts() may be called from any thread, including the pool's own
// workers. The destructor discards tasks not yet started (their futures report broken_promise) and joins
// the workers after their current task.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace cntkio::core {

class ThreadPool {
 public:
  /// `threads` workers (0 is allowed: submit() then runs the task on the caller's thread).
  explicit ThreadPool(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }
  /// Per worker: the seconds it has spent running tasks so far (for `cntkio bench`'s utilisation).
  std::vector<double> busy_seconds() const;

  /// Queues `task`; the future holds its result or exception.
  template <typename F>
  auto submit(F&& task) -> std::future<decltype(task())> {
    using R = decltype(task());
    auto packaged = std::make_shared<std::packaged_task<R()>>(std::forward<F>(task));
    std::future<R> result = packaged->get_future();
    if (workers_.empty()) {
      (*packaged)();
      return result;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.emplace_back([packaged] { (*packaged)(); });
    }
    ready_.notify_one();
    return result;
  }

  /// Workers waiting for a task that no queued task will take: a hint, it may change at once.
  size_t idle() const;

  /// The pool whose worker runs the calling thread, or the pool a ScopedCurrent on this thread names;
  /// null otherwise. Work that can use idle threads (one chunk's parse) finds its pool this way.
  static ThreadPool* current();

  /// Makes `pool` the current() pool of this thread for the guard's lifetime (the thread that loads a
  /// chunk itself while the pool's workers may be idle). A null `pool` leaves current() as it is.
  class ScopedCurrent {
   public:
    explicit ScopedCurrent(ThreadPool* pool);
    ~ScopedCurrent();
    ScopedCurrent(const ScopedCurrent&) = delete;
    ScopedCurrent& operator=(const ScopedCurrent&) = delete;

   private:
    ThreadPool* previous_;
  };

  /// Number of hardware threads (at least 1).
  static size_t hardware_threads();

 private:
  void work(size_t index);

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  size_t waiting_ = 0;  // workers blocked in work() waiting for the queue
  bool stopping_ = false;
  std::vector<std::thread> workers_;
  std::unique_ptr<std::atomic<uint64_t>[]> busy_ns_;  // per worker
};

/// Runs `part(0)` .. `part(parts - 1)`, each exactly once, on the calling thread and on up to `helpers`
/// workers of `pool` (null: the caller alone), and returns when all have finished. Parts are claimed one at
/// a time, so a helper that starts late (or never, when the pool is busy or being destroyed) only means
/// the caller runs more of them: it never waits for a part that has not started. Rethrows the exception
/// of the lowest-numbered part that threw, after all parts have finished.
void run_parts(ThreadPool* pool, size_t helpers, size_t parts, const std::function<void(size_t)>& part);

}  // namespace cntkio::core
