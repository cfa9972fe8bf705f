// The checks the randomized settings tests (SourceThreads.Random..., ImageCheckpointTest.Random...,
// HtkReader.Random...) run on one worker of one combination: its minibatches read without loader threads are
// the reference; loader threads and prefetch must give the same, and a reader restored from the JSON state
// after any minibatch must continue with exactly the reference's rest.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cntkio/minibatch_source.hpp"

namespace cntkio::settings_test {

/// How a test reads one worker's share.
struct WorkerReading {
  /// A new reader with these loader settings (e.g. "loaderThreads = 0\n prefetch = false"), limits set.
  std::function<std::unique_ptr<MinibatchSource>(const std::string& loaders)> make;
  /// Starts its reading for worker `rank` (a v1 epoch; nothing for v2 reading).
  std::function<void(MinibatchSource& source, size_t rank)> start;
  /// The next minibatch of worker `rank`.
  std::function<bool(MinibatchSource& source, size_t rank, Minibatch& mb)> next;
  /// A minibatch as text: what must be equal.
  std::function<std::string(const Minibatch& mb)> render;
};

/// Reads worker `rank`'s minibatches with `plain` loaders (calling `each` on every one), then checks them
/// against `threads` loaders and a restore after a minibatch `rng` picks. Returns the reference.
inline std::vector<std::string> check_worker(const WorkerReading& r, size_t rank, const std::string& plain,
                                             const std::string& threads, std::mt19937_64& rng,
                                             const std::function<void(const Minibatch&)>& each = {}) {
  std::vector<std::string> reference;
  std::vector<std::string> states;
  Minibatch mb;
  {
    auto source = r.make(plain);
    r.start(*source, rank);
    states.push_back(source->state().to_json());
    while (r.next(*source, rank, mb)) {
      reference.push_back(r.render(mb));
      states.push_back(source->state().to_json());
      if (each) each(mb);
    }
  }
  auto threaded = r.make(threads);
  r.start(*threaded, rank);
  std::vector<std::string> got;
  while (r.next(*threaded, rank, mb)) got.push_back(r.render(mb));
  EXPECT_EQ(got, reference) << "rank " << rank << " with loader threads";

  const size_t cut = static_cast<size_t>(rng() % (reference.size() + 1));  // states[cut]: after `cut`
  auto resumed = r.make(rng() % 2 == 0 ? threads : plain);
  r.start(*resumed, rank);
  resumed->restore(ReaderState::from_json(states[cut]));
  std::vector<std::string> rest;
  while (r.next(*resumed, rank, mb)) rest.push_back(r.render(mb));
  EXPECT_EQ(rest, std::vector<std::string>(reference.begin() + static_cast<ptrdiff_t>(cut), reference.end()))
      << "rank " << rank << " restored after " << cut << " minibatches";
  return reference;
}

/// CNTKIO_RANDOM_ROUNDS from the environment, else `default_rounds`.
inline size_t rounds(size_t default_rounds) {
  const char* text = std::getenv("CNTKIO_RANDOM_ROUNDS");
  return text != nullptr ? std::stoul(text) : default_rounds;
}

}  // namespace cntkio::settings_test
