// What the benchmarks share: wall-clock and CPU stopwatches, the median of repetitions, a scratch folder
// and an order-fixed float sum.
#pragma once

#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace bench {

// Elapsed wall-clock and CPU time. Thread CPU time leaves out the time the thread waited for a core, which
// matters on a shared machine; both include the kernel's work for the thread (page faults, munmap).
struct Seconds {
  double wall = 0;
  double cpu = 0;
};

inline double cpu_now(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// CPU time of the calling thread (the default), or of the whole process (CLOCK_PROCESS_CPUTIME_ID) where
// other threads work too.
class Stopwatch {
 public:
  explicit Stopwatch(clockid_t clock = CLOCK_THREAD_CPUTIME_ID)
      : clock_(clock), wall_(std::chrono::steady_clock::now()), cpu_(cpu_now(clock)) {}
  Seconds elapsed() const {
    return Seconds{std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_).count(),
                   cpu_now(clock_) - cpu_};
  }

 private:
  clockid_t clock_;
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

// The middle value; the mean of the two middle ones for an even count.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A fresh folder under the system's temporary directory.
inline std::filesystem::path make_temp_dir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "cntkio_bench_XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a temporary directory");
  return pattern;
}

// Sum of n floats in double, in eight fixed lanes (vectorisable; the same result on every run).
inline double sum_floats(const float* v, size_t n) {
  double acc[8] = {};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int k = 0; k < 8; ++k) acc[k] += v[i + k];
  }
  for (; i < n; ++i) acc[0] += v[i];
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace bench
