// core::ThreadPool::idle/current and core::run_parts: every part runs once, whoever runs it.
#include "core/thread_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/little_memory.hpp"

using cntkio::core::run_parts;
using cntkio::core::ThreadPool;

TEST(ThreadPoolRunParts, EveryPartRunsExactlyOnceWithAnyPoolAndHelpers) {
  for (size_t workers : {0, 1, 3}) {
    ThreadPool pool(workers);
    for (size_t helpers : {0, 1, 8}) {
      for (size_t parts : {1, 2, 7, 100}) {
        std::vector<std::atomic<int>> runs(parts);
        run_parts(&pool, helpers, parts, [&](size_t i) { runs[i].fetch_add(1); });
        for (size_t i = 0; i < parts; ++i)
          EXPECT_EQ(runs[i].load(), 1) << workers << " " << helpers << " " << i;
      }
    }
  }
  std::vector<int> runs(5, 0);
  run_parts(nullptr, 4, 5, [&](size_t i) { ++runs[i]; });
  EXPECT_EQ(runs, std::vector<int>(5, 1));
}

TEST(ThreadPoolRunParts, ABusyPoolLeavesEveryPartToTheCaller) {
  ThreadPool pool(1);
  std::atomic<bool> release{false};
  auto blocker = pool.submit([&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  const auto caller = std::this_thread::get_id();
  std::atomic<int> by_caller{0};
  run_parts(&pool, 1, 10, [&](size_t) {
    if (std::this_thread::get_id() == caller) ++by_caller;
  });
  EXPECT_EQ(by_caller.load(), 10);  // the only worker is blocked: run_parts did not wait for it
  release = true;
  blocker.get();
}

TEST(ThreadPoolRunParts, RethrowsTheLowestPartsErrorAfterAllParts) {
  ThreadPool pool(2);
  std::atomic<int> finished{0};
  try {
    run_parts(&pool, 2, 20, [&](size_t i) {
      ++finished;
      if (i == 13 || i == 4) throw std::runtime_error("part " + std::to_string(i));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 4");
  }
  EXPECT_EQ(finished.load(), 20);
}

TEST(ThreadPoolCurrent, NamesThePoolOfTheWorkerOrOfTheScope) {
  ThreadPool pool(1);
  EXPECT_EQ(ThreadPool::current(), nullptr);
  EXPECT_EQ(pool.submit([] { return ThreadPool::current(); }).get(), &pool);
  {
    ThreadPool::ScopedCurrent scope(&pool);
    EXPECT_EQ(ThreadPool::current(), &pool);
    ThreadPool::ScopedCurrent keep(nullptr);
    EXPECT_EQ(ThreadPool::current(), &pool);
  }
  EXPECT_EQ(ThreadPool::current(), nullptr);
  // The idle worker is counted once it waits; a queued task takes it.
  for (int i = 0; i < 1000 && pool.idle() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(pool.idle(), 1u);
}

// A pool the system cannot give all its threads (here: too little address space for their stacks) is an
// error; the threads already started are stopped, where leaving them attached would end the process.
TEST(ThreadPool, ThreadsTheSystemRefusesAreAnErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "an address-space limit does not suit the sanitizers' shadow memory";
#else
  EXPECT_TRUE(cntkio::test::within_little_memory(
      [] {
        try {
          ThreadPool pool(256);  // 256 stacks of 8 MiB
          return false;          // the limit did not bite
        } catch (const cntkio::Error& e) {
          return std::string(e.what()).find("Could not start loader thread") == 0;
        }
      },
      rlim_t{64} << 20));
#endif
}
