// Chunks across a sweep's end (BlockRandomizer::chunks_outlive_sweep): a chunk loaded at the end of a sweep
// stays for the next one when parsing it again could not change what is delivered, and is parsed again
// otherwise, as CNTK does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cntkio/env.hpp"
#include "pipeline/block_randomizer.hpp"
#include "randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::FileMock;

class SweepChunks : public testing::DataFileTest {
 protected:
  // Reads `sweeps` sweeps in one epoch that crosses sweeps (as cntk.io's v2 reading does); the keys read.
  static std::vector<uint64_t> read_sweeps(BlockRandomizer& randomizer, size_t sweeps, size_t per_sweep) {
    EpochConfiguration config;
    config.minibatch_size_in_samples = 3;
    config.total_epoch_size_in_samples = sweeps * per_sweep;
    config.allow_minibatches_to_cross_sweeps = true;
    randomizer.start_epoch(config);
    std::vector<uint64_t> keys;
    for (;;) {
      Sequences s = randomizer.get_next_sequences(3, 3);
      for (const SequenceKey& k : s.keys) keys.push_back(k.sequence);
      if (s.end_of_epoch || s.keys.empty()) break;
    }
    return keys;
  }
};

TEST_F(SweepChunks, AOneChunkCorpusIsParsedOnceForManySweepsWithTheSameSequences) {
  auto kept = std::make_shared<FileMock>(1, 10, path_);
  auto reparsed = std::make_shared<FileMock>(1, 10, "");  // no file: loaded again every sweep
  BlockRandomizer a(kept, 1, false, 7);
  BlockRandomizer b(reparsed, 1, false, 7);
  const std::vector<uint64_t> keys = read_sweeps(a, 4, 10);
  EXPECT_EQ(keys, read_sweeps(b, 4, 10));  // the same order either way
  EXPECT_EQ(keys.size(), 40u);
  EXPECT_EQ(kept->counters().loads, 1u);
  EXPECT_EQ(reparsed->counters().loads, 4u);
}

TEST_F(SweepChunks, ChunksOfManyChunksAreKeptOnlyWhereTheNextWindowNeedsThem) {
  auto kept = std::make_shared<FileMock>(6, 5, path_);
  auto reparsed = std::make_shared<FileMock>(6, 5, "");
  BlockRandomizer a(kept, 2, false, 3);  // a window of 2 chunks
  BlockRandomizer b(reparsed, 2, false, 3);
  EXPECT_EQ(read_sweeps(a, 3, 30), read_sweeps(b, 3, 30));
  EXPECT_LT(kept->counters().loads, reparsed->counters().loads);
  EXPECT_LE(kept->counters().max_live, reparsed->counters().max_live + 2);  // at most the window more
}

TEST_F(SweepChunks, ATolerantErrorOrAChangedFileMeansParsingAgainAsCntkDoes) {
  auto with_errors = std::make_shared<FileMock>(1, 10, path_);
  with_errors->errors = 1;  // CNTK counts a chunk's errors at every parse
  BlockRandomizer a(with_errors, 1, false, 7);
  read_sweeps(a, 3, 10);
  EXPECT_EQ(with_errors->counters().loads, 3u);

  auto changed = std::make_shared<FileMock>(1, 10, path_);
  std::ofstream(path_, std::ios::app) << " more";  // a new version since it was opened
  BlockRandomizer b(changed, 1, false, 7);
  read_sweeps(b, 3, 10);
  EXPECT_EQ(changed->counters().loads, 3u);
}

}  // namespace
}  // namespace cntkio::pipeline
