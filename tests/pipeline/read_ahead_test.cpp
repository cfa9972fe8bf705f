// ReadAhead alone, over a scripted read function: order, failures, discarding, batch limits, holds.
#include "pipeline/read_ahead.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

constexpr size_t kNever = static_cast<size_t>(-1);

// Read n returns a minibatch whose `after.position` is n; read `fail_at` throws, read `epoch_end_at` ends the
// epoch; each minibatch holds `bytes` bytes of values.
struct Script {
  size_t fail_at = kNever;
  size_t epoch_end_at = kNever;
  size_t bytes = 0;
  std::chrono::milliseconds delay{0};
  std::atomic<size_t> reads{0};
  std::vector<std::thread::id> threads;  // of every read (only one read runs at a time)

  ReadAhead::ReadFunction function() {
    return [this] {
      const size_t n = reads++;
      threads.push_back(std::this_thread::get_id());
      std::this_thread::sleep_for(delay);
      if (n == fail_at) throw Error("read " + std::to_string(n) + " failed");
      ReadResult r;
      r.after.position = n;
      r.minibatch.end_of_epoch = n == epoch_end_at;
      r.minibatch.streams.emplace_back().values.resize(bytes);
      return r;
    };
  }
};

// No limit but the count.
ReadAheadLimits count_limit(size_t max_batch) {
  return {max_batch, kNever, std::chrono::hours(1)};
}

TEST(ReadAhead, HandsOutTheResultsInReadOrder) {
  Script script;
  script.epoch_end_at = 9;
  ReadAhead reader(script.function(), true, count_limit(4));
  reader.schedule();
  for (size_t n = 0; n < 10; ++n) {
    ReadResult r = reader.next();
    EXPECT_EQ(r.after.position, n);
    EXPECT_EQ(r.minibatch.end_of_epoch, n == 9);
  }
  reader.discard();
  EXPECT_EQ(script.reads, 10u);  // nothing is read past the epoch end
}

// How many reads the batch after the first (which holds one minibatch) made.
size_t second_batch_reads(Script& script, ReadAheadLimits limits) {
  ReadAhead reader(script.function(), true, limits);
  reader.schedule();
  reader.next();  // takes the first batch and starts the second
  reader.discard();
  return script.reads - 1;
}

TEST(ReadAhead, TheFirstBatchFromANewPositionHoldsOneMinibatch) {
  Script script;
  ReadAhead reader(script.function(), true, count_limit(4));
  reader.schedule();
  EXPECT_EQ(reader.next().after.position, 0u);  // read alone: the caller waits for it
  EXPECT_EQ(reader.next().after.position, 1u);  // the batch 1..4, started when 0 was taken
  reader.discard();
  EXPECT_EQ(script.reads, 9u);  // and 5..8, started when 1 was taken
  reader.schedule();            // from the position the caller set: one minibatch again
  EXPECT_EQ(reader.next().after.position, 9u);
  EXPECT_EQ(reader.next().after.position, 10u);  // of the batch 10..13
  reader.discard();
  EXPECT_EQ(script.reads, 18u);  // 14..17 started when 10 was taken
}

TEST(ReadAhead, ReadsOnItsOwnThreadOnlyWhenEnabled) {
  Script on;
  ReadAhead ahead(on.function(), true, count_limit(2));
  ahead.schedule();
  ahead.discard();
  ASSERT_EQ(on.reads, 1u);
  EXPECT_NE(on.threads[0], std::this_thread::get_id());

  Script off;
  ReadAhead inline_reader(off.function(), false, count_limit(2));
  inline_reader.schedule();
  EXPECT_EQ(off.reads, 0u);
  EXPECT_EQ(inline_reader.next().after.position, 0u);
  EXPECT_EQ(inline_reader.next().after.position, 1u);
  EXPECT_EQ(off.threads, std::vector<std::thread::id>(2, std::this_thread::get_id()));
}

TEST(ReadAhead, AFailureSurfacesAfterTheResultsReadBeforeIt) {
  Script script;
  script.fail_at = 3;
  ReadAhead reader(script.function(), true, count_limit(64));
  reader.schedule();
  for (size_t n = 0; n < 3; ++n) EXPECT_EQ(reader.next().after.position, n);
  try {
    reader.next();
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "read 3 failed");
  }
  EXPECT_EQ(script.reads, 4u);  // nothing was read ahead past the failure
  EXPECT_EQ(reader.next().after.position, 4u);
}

TEST(ReadAhead, DiscardDropsWhatWasReadAhead) {
  Script script;
  ReadAhead reader(script.function(), true, count_limit(4));
  reader.schedule();
  EXPECT_EQ(reader.next().after.position, 0u);  // takes the batch of 0 and starts reading 1..4
  reader.discard();
  EXPECT_EQ(script.reads, 5u);
  EXPECT_EQ(reader.next().after.position, 5u);  // 1..4 are gone; nothing is read ahead until schedule()
  EXPECT_EQ(script.reads, 6u);
}

TEST(ReadAhead, DiscardForgetsAFailureAndAnEpochEnd) {
  Script failing;
  failing.fail_at = 0;
  ReadAhead reader(failing.function(), true, count_limit(4));
  reader.schedule();
  reader.discard();
  EXPECT_EQ(reader.next().after.position, 1u);

  Script ending;
  ending.epoch_end_at = 0;
  ReadAhead ended(ending.function(), true, count_limit(4));
  ended.schedule();
  EXPECT_TRUE(ended.next().minibatch.end_of_epoch);
  ended.discard();
  ended.schedule();  // reads again after the caller repositioned (one minibatch: a new position)
  ended.discard();
  EXPECT_EQ(ending.reads, 2u);
}

TEST(ReadAhead, ABatchEndsAtItsCountBytesTimeOrTheEpochEnd) {
  Script by_count;
  EXPECT_EQ(second_batch_reads(by_count, count_limit(3)), 3u);

  Script by_bytes;
  by_bytes.bytes = 100;
  EXPECT_EQ(second_batch_reads(by_bytes, {64, 250, std::chrono::hours(1)}), 3u);  // 300 bytes when it stops

  Script by_time;
  by_time.delay = std::chrono::milliseconds(2);
  EXPECT_EQ(second_batch_reads(by_time, {64, kNever, std::chrono::milliseconds(1)}), 1u);

  Script by_end;
  by_end.epoch_end_at = 2;
  EXPECT_EQ(second_batch_reads(by_end, count_limit(64)), 2u);
}

TEST(ReadAhead, NothingIsReadAheadWhileHeld) {
  Script script;
  ReadAhead reader(script.function(), true, count_limit(2));
  {
    ReadAhead::Hold not_held = reader.hold(false);
    ReadAhead::Hold outer = reader.hold();
    { ReadAhead::Hold inner = reader.hold(); }
    reader.schedule();
    reader.discard();
    EXPECT_EQ(script.reads, 0u);
  }
  reader.schedule();
  reader.discard();
  EXPECT_EQ(script.reads, 1u);
}

TEST(ReadAhead, CountsTheBytesOfValuesIndicesAndDeferredValues) {
  Minibatch mb;
  StreamBatch& s = mb.streams.emplace_back();
  s.values.resize(10);
  s.row_indices.resize(2);
  s.col_starts.resize(3);
  auto deferred = std::make_shared<DeferredValues>();
  deferred->bytes = 1000;
  mb.deferred_values = deferred;
  EXPECT_EQ(minibatch_data_bytes(mb), 10 + 5 * sizeof(int32_t) + 1000);
}

}  // namespace
}  // namespace cntkio::pipeline
