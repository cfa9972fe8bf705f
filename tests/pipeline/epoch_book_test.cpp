// EpochBook alone: the configurations it makes from v1 and v2 arguments, its checks, its modes; and that a
// packer over a randomizer ends those epochs exactly where the spec says (pipeline.md §4, §8.3).
#include "pipeline/epoch_book.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::MockDeserializer;

TEST(EpochBook, AV1EpochCarriesTheCallersSettings) {
  EpochBook book(7);
  const EpochConfiguration c = book.v1_epoch(5, 3, 100, 1, 2);
  EXPECT_EQ(c.minibatch_size_in_samples, 5u);
  EXPECT_EQ(c.epoch_index, 3u);
  EXPECT_EQ(c.total_epoch_size_in_samples, 100u);
  EXPECT_EQ(c.total_epoch_size_in_sweeps, kInfinitelyRepeat);
  EXPECT_EQ(c.worker_rank, 1u);
  EXPECT_EQ(c.num_workers, 2u);
  EXPECT_FALSE(c.allow_minibatches_to_cross_sweeps);
  EXPECT_EQ(c.truncation_length, 7u);
}

TEST(EpochBook, AV1EpochRefusesZeroSizesAndRanksNotBelowTheWorkers) {
  EpochBook book(0);
  EXPECT_THROW(book.v1_epoch(5, 0, 0, 0, 1), UsageError);
  EXPECT_THROW(book.v1_epoch(0, 0, 10, 0, 1), UsageError);
  EXPECT_THROW(book.v1_epoch(5, 0, 10, 2, 2), UsageError);
  EXPECT_THROW(book.v1_epoch(5, 0, 10, 0, 0), UsageError);
  EXPECT_THROW(EpochBook::check_v2_request(0, 1, 0), UsageError);
  EXPECT_THROW(EpochBook::check_v2_request(5, 2, 2), UsageError);
  EXPECT_NO_THROW(EpochBook::check_v2_request(5, 2, 1));
}

TEST(EpochBook, V2LimitsBecomeTheSizeOfOneEpochThatCrossesSweeps) {
  EpochBook book(3);
  EpochConfiguration c = book.v2_epoch(8, 4, 2);  // no limits: as CNTK, SIZE_MAX / 2 samples
  EXPECT_EQ(c.total_epoch_size_in_samples, std::numeric_limits<size_t>::max() / 2);
  EXPECT_EQ(c.total_epoch_size_in_sweeps, kInfinitelyRepeat);
  EXPECT_EQ(c.epoch_index, 0u);
  EXPECT_TRUE(c.allow_minibatches_to_cross_sweeps);
  EXPECT_EQ(c.minibatch_size_in_samples, 8u);
  EXPECT_EQ(c.num_workers, 4u);
  EXPECT_EQ(c.worker_rank, 2u);
  EXPECT_EQ(c.truncation_length, 3u);

  book.set_v2_limits(kFullDataSweep, kInfinitelyRepeat);
  EXPECT_EQ(book.v2_epoch(8, 1, 0).total_epoch_size_in_samples, kRequestDataSize);
  book.set_v2_limits(123, kInfinitelyRepeat);
  EXPECT_EQ(book.v2_epoch(8, 1, 0).total_epoch_size_in_samples, 123u);
  book.set_v2_limits(kInfinitelyRepeat, 2);
  c = book.v2_epoch(8, 1, 0);
  EXPECT_EQ(c.total_epoch_size_in_sweeps, 2u);
  EXPECT_EQ(c.total_epoch_size_in_samples, kRequestDataSize);
}

TEST(EpochBook, V2LimitsRefuseBothOrZero) {
  EpochBook book(0);
  EXPECT_THROW(book.set_v2_limits(10, 1), UsageError);
  EXPECT_THROW(book.set_v2_limits(0, kInfinitelyRepeat), UsageError);
  EXPECT_THROW(book.set_v2_limits(kInfinitelyRepeat, 0), UsageError);
  EXPECT_TRUE(book.v1());  // nothing changed
}

TEST(EpochBook, ItsModeSaysWhatTheNextReadAndARestoreDo) {
  EpochBook book(0);
  EXPECT_TRUE(book.v1());
  EXPECT_TRUE(book.restore_waits());  // nothing configured yet
  EXPECT_TRUE(book.v2_start_due());
  book.configure(book.v1_epoch(4, 0, 10, 0, 1));
  book.mark_v1();
  EXPECT_FALSE(book.restore_waits());
  book.set_v2_limits(100, kInfinitelyRepeat);
  EXPECT_FALSE(book.v1());
  EXPECT_TRUE(book.restore_waits());  // waits for the first v2 read
  EXPECT_TRUE(book.v2_start_due());
  book.configure(book.v2_epoch(4, 1, 0));
  book.mark_v2_reading();
  EXPECT_FALSE(book.restore_waits());
  EXPECT_FALSE(book.v2_start_due());
  book.set_v2_limits(50, kInfinitelyRepeat);
  EXPECT_TRUE(book.v2_start_due());  // new limits start the epoch again
  book.mark_v1();
  EXPECT_TRUE(book.v1());
  EXPECT_TRUE(book.v2_start_due());
}

TEST(EpochBook, AnEpochIsOverUntilOpenedAndAfterItsEnd) {
  EpochBook book(0);
  EXPECT_TRUE(book.epoch_over());
  book.configure(book.v1_epoch(4, 0, 10, 0, 1));
  EXPECT_TRUE(book.epoch_over());
  book.open();
  EXPECT_FALSE(book.epoch_over());
  book.end_epoch();
  EXPECT_TRUE(book.epoch_over());
}

TEST(EpochBook, AV2ResplitChangesOnlyTheMinibatchSizeAndWorkers) {
  EpochBook book(0);
  book.set_v2_limits(100, kInfinitelyRepeat);
  book.configure(book.v2_epoch(4, 2, 1));
  EXPECT_FALSE(book.v2_split_changes(4, 2, 1));
  EXPECT_TRUE(book.v2_split_changes(5, 2, 1));
  EXPECT_TRUE(book.v2_split_changes(4, 3, 1));
  EXPECT_TRUE(book.v2_split_changes(4, 2, 0));
  const EpochConfiguration& c = book.resplit_v2(6, 3, 0);
  EXPECT_EQ(&c, &book.config());
  EXPECT_EQ(c.minibatch_size_in_samples, 6u);
  EXPECT_EQ(c.num_workers, 3u);
  EXPECT_EQ(c.worker_rank, 0u);
  EXPECT_EQ(c.total_epoch_size_in_samples, 100u);
  EXPECT_TRUE(c.allow_minibatches_to_cross_sweeps);
  EXPECT_FALSE(book.v2_split_changes(6, 3, 0));
}

struct Read {
  size_t samples;
  bool end_of_sweep;
  bool end_of_epoch;
  friend bool operator==(const Read&, const Read&) = default;
};

// The minibatches of the epoch `config` over 3 chunks of 4 one-sample sequences (a sweep is 12 samples).
std::vector<Read> read_epoch(const EpochConfiguration& config) {
  auto enumerator = std::make_shared<NoRandomizer>(MockDeserializer::uniform(3, 4));
  auto packer = make_sequence_packer(enumerator, false);
  enumerator->start_epoch(config);
  packer->set_configuration(config);
  std::vector<Read> reads;
  for (int i = 0; i < 100; ++i) {
    const Minibatch mb = packer->read_minibatch();
    reads.push_back({mb.empty() ? 0 : mb.streams[0].layout.num_samples(), mb.end_of_sweep, mb.end_of_epoch});
    if (mb.end_of_epoch) break;
  }
  return reads;
}

TEST(EpochBook, AV2SampleLimitEndsExactlyWithMinibatchesAcrossSweeps) {
  EpochBook book(0);
  book.set_v2_limits(30, kInfinitelyRepeat);
  EXPECT_EQ(read_epoch(book.v2_epoch(5, 1, 0)), (std::vector<Read>{{5, false, false},
                                                                   {5, false, false},
                                                                   {5, true, false},
                                                                   {5, false, false},
                                                                   {5, true, false},
                                                                   {5, false, true}}));
}

TEST(EpochBook, AV2SweepLimitEndsAtTheLastSweepsEnd) {
  EpochBook book(0);
  book.set_v2_limits(kInfinitelyRepeat, 2);
  EXPECT_EQ(read_epoch(book.v2_epoch(5, 1, 0)),
            (std::vector<Read>{
                {5, false, false}, {5, false, false}, {5, true, false}, {5, false, false}, {4, true, true}}));
  book.set_v2_limits(kFullDataSweep, kInfinitelyRepeat);
  EXPECT_EQ(read_epoch(book.v2_epoch(5, 1, 0)),
            (std::vector<Read>{{5, false, false}, {5, false, false}, {2, true, true}}));
}

TEST(EpochBook, AV1EpochCutsMinibatchesAtTheSweepEnd) {
  EpochBook book(0);
  EXPECT_EQ(read_epoch(book.v1_epoch(5, 0, kFullSweep, 0, 1)),
            (std::vector<Read>{{5, false, false}, {5, false, false}, {2, true, true}}));
  // Epoch 1 of 16 samples: [16, 32) crosses the sweep end at 24, where its minibatch is cut.
  EXPECT_EQ(read_epoch(book.v1_epoch(5, 1, 16, 0, 1)),
            (std::vector<Read>{{5, false, false}, {3, true, false}, {5, false, false}, {3, false, true}}));
}

}  // namespace
}  // namespace cntkio::pipeline
