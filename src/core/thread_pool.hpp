// A fixed-size pool of worker threads running tasks in submission order (FIFO).
//
// Thread-safety: submit() may be called from any thread. The destructor discards tasks not yet started
// (their futures report broken_promise) and joins the workers after their current task.
#pragma once

#include <condition_variable>
#include <cstddef>
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

  /// Number of hardware threads (at least 1).
  static size_t hardware_threads();

 private:
  void work();

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace cntkio::core
