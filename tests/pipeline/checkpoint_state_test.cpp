// CheckpointState alone, over randomizers and packers on the mock deserializer: states round trip, truncated
// BPTT's slots are pulled again, another worker split restores the position alone, a v2 resplit continues
// from the last minibatch taken, and a deferred restore waits.
#include "pipeline/checkpoint_state.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cntkio/minibatch_source.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::epoch_config;
using testing::MockDeserializer;

// A randomizer (block-randomized over a small window) and a packer over 6 chunks of 5 jagged sequences.
struct Pipeline {
  explicit Pipeline(size_t truncation = 0) {
    enumerator = std::make_shared<BlockRandomizer>(MockDeserializer::jagged(6, 5), 2, false, 3);
    packer = truncation > 0 ? make_truncated_bptt_packer(enumerator, truncation)
                            : make_sequence_packer(enumerator, false);
    checkpoint = std::make_unique<CheckpointState>(*enumerator, *packer);
  }

  // Reads the next minibatch and records it as taken; its keys and layout as text.
  std::string take() {
    const Minibatch mb = packer->read_minibatch();
    checkpoint->record(enumerator->state(), packer->state());
    std::string text;
    for (const std::string& key : mb.keys) text += key + ",";
    if (!mb.empty()) {
      for (const Layout::Entry& e : mb.streams[0].layout.entries) {
        text += " " + std::to_string(e.sequence_index) + "@" + std::to_string(e.row) + ":" +
                std::to_string(e.t_begin) + "-" + std::to_string(e.t_end);
      }
    }
    return text + (mb.end_of_epoch ? " end" : "");
  }

  std::vector<std::string> take_all() {
    std::vector<std::string> out;
    for (int i = 0; i < 1000; ++i) {
      out.push_back(take());
      if (out.back().ends_with(" end")) break;
    }
    return out;
  }

  std::shared_ptr<SequenceEnumerator> enumerator;
  std::unique_ptr<Packer> packer;
  std::unique_ptr<CheckpointState> checkpoint;
};

// Every state taken between the minibatches of one epoch, restored into a fresh pipeline (through JSON),
// gives the rest of the uninterrupted stream.
void expect_every_restore_continues(size_t truncation, const EpochConfiguration& config) {
  Pipeline whole(truncation);
  whole.checkpoint->begin(config);
  std::vector<ReaderState> states{whole.checkpoint->reader_state(config)};
  std::vector<std::string> stream;
  do {
    stream.push_back(whole.take());
    states.push_back(whole.checkpoint->reader_state(config));
  } while (!stream.back().ends_with(" end"));
  ASSERT_GT(stream.size(), 4u);
  for (size_t k = 0; k < stream.size(); ++k) {
    SCOPED_TRACE("restored after minibatch " + std::to_string(k));
    Pipeline restored(truncation);
    restored.checkpoint->begin(config);
    restored.checkpoint->restore(ReaderState::from_json(states[k].to_json()), config);
    EXPECT_EQ(restored.checkpoint->reader_state(config), states[k]);
    EXPECT_EQ(restored.take_all(), std::vector<std::string>(stream.begin() + k, stream.end()));
  }
}

TEST(CheckpointState, EveryStateRestoresTheRestOfTheStream) {
  EpochConfiguration v1 = epoch_config(40, kInfinitelyRepeat, 1);  // epoch 1: [40, 80)
  v1.minibatch_size_in_samples = 5;
  expect_every_restore_continues(0, v1);
  EpochConfiguration v2 = epoch_config(kRequestDataSize, 2, 0, true);
  v2.minibatch_size_in_samples = 7;
  expect_every_restore_continues(0, v2);
}

TEST(CheckpointState, TruncatedBpttSlotsArePulledAgain) {
  EpochConfiguration config = epoch_config(kRequestDataSize, 2, 0, true);
  config.minibatch_size_in_samples = 6;  // 3 slots of 2 samples
  config.truncation_length = 2;
  expect_every_restore_continues(2, config);
}

TEST(CheckpointState, WithoutItsSlotsABpttStateLosesWhatTheyHeld) {
  // What the slots add: the position alone (CNTK's restore) does not continue the stream.
  EpochConfiguration config = epoch_config(kRequestDataSize, 1, 0, true);
  config.minibatch_size_in_samples = 6;
  config.truncation_length = 2;
  Pipeline whole(2);
  whole.checkpoint->begin(config);
  whole.take();
  whole.take();
  ReaderState state = whole.checkpoint->reader_state(config);
  ASSERT_TRUE(state.bptt.has_value());
  const std::vector<std::string> rest = whole.take_all();

  Pipeline with_slots(2);
  with_slots.checkpoint->begin(config);
  with_slots.checkpoint->restore(state, config);
  EXPECT_EQ(with_slots.take_all(), rest);
  state.bptt.reset();
  Pipeline position_alone(2);
  position_alone.checkpoint->begin(config);
  position_alone.checkpoint->restore(state, config);
  EXPECT_NE(position_alone.take_all(), rest);
}

TEST(CheckpointState, AnotherWorkerSplitRestoresThePositionAlone) {
  EpochConfiguration one = epoch_config(kRequestDataSize, 1, 0, true);
  one.minibatch_size_in_samples = 6;
  one.truncation_length = 2;
  Pipeline whole(2);
  whole.checkpoint->begin(one);
  whole.take();
  whole.take();
  const ReaderState state = whole.checkpoint->reader_state(one);
  ASSERT_TRUE(state.bptt.has_value());
  EpochConfiguration two = one;
  two.num_workers = 2;
  Pipeline other(2);
  other.checkpoint->begin(two);
  other.checkpoint->restore(state, two);
  const ReaderState restored = other.checkpoint->reader_state(two);
  EXPECT_EQ(restored.position, state.position);
  EXPECT_EQ(restored.num_workers, 2u);
  EXPECT_EQ(restored.worker_rank, 0u);
}

TEST(CheckpointState, AResplitContinuesFromTheLastMinibatchTaken) {
  auto mock = MockDeserializer::uniform(4, 5);
  auto enumerator = std::make_shared<NoRandomizer>(mock);
  auto packer = make_sequence_packer(enumerator, false);
  CheckpointState checkpoint(*enumerator, *packer);
  EpochConfiguration config = epoch_config(kRequestDataSize, 1, 0, true);
  config.minibatch_size_in_samples = 3;
  checkpoint.begin(config);
  for (int i = 0; i < 2; ++i) {
    packer->read_minibatch();
    checkpoint.record(enumerator->state(), packer->state());
  }
  packer->read_minibatch();  // read ahead, never taken
  config.minibatch_size_in_samples = 4;
  checkpoint.resplit(config, true);
  EXPECT_EQ(packer->read_minibatch().keys, (std::vector<std::string>{"6", "7", "8", "9"}));
}

// Truncated BPTT, a new minibatch size mid-stream (cntk.io's next_minibatch with another size): with as many
// slots the slots keep what they held and the stream goes on exactly; with another slot count (or another
// worker) the slots start empty as in CNTK, and what they held is not delivered.
TEST(CheckpointState, ABpttResplitToAsManySlotsKeepsWhatTheSlotsHeld) {
  EpochConfiguration config = epoch_config(kRequestDataSize, 1, 0, true);
  config.minibatch_size_in_samples = 6;  // 3 slots of 2 samples
  config.truncation_length = 2;
  Pipeline reference(2);
  reference.checkpoint->begin(config);
  reference.take();
  reference.take();
  const std::vector<std::string> rest = reference.take_all();

  Pipeline resized(2);
  resized.checkpoint->begin(config);
  resized.take();
  resized.take();
  resized.packer->read_minibatch();  // read ahead, never taken: the resplit goes back before it
  EpochConfiguration seven = config;
  seven.minibatch_size_in_samples = 7;  // still 3 slots
  resized.checkpoint->resplit(seven, true);
  EXPECT_EQ(resized.take_all(), rest);

  Pipeline more_slots(2);
  more_slots.checkpoint->begin(config);
  more_slots.take();
  more_slots.take();
  EpochConfiguration eight = config;
  eight.minibatch_size_in_samples = 8;  // 4 slots
  more_slots.checkpoint->resplit(eight, true);
  const std::vector<std::string> after = more_slots.take_all();
  EXPECT_NE(after, rest);
  EXPECT_EQ(after.front().find("@0:-"), std::string::npos)
      << "a slot kept a sequence begun before: " << after[0];
}

TEST(CheckpointState, TheReaderStateNamesTheWorkersOfTheConfiguration) {
  auto enumerator = std::make_shared<NoRandomizer>(MockDeserializer::uniform(4, 5));
  auto packer = make_sequence_packer(enumerator, false);
  CheckpointState checkpoint(*enumerator, *packer);
  EpochConfiguration config = epoch_config(kRequestDataSize, kInfinitelyRepeat, 0, false, 3, 2);
  config.minibatch_size_in_samples = 3;
  checkpoint.begin(config);
  packer->read_minibatch();
  checkpoint.record(enumerator->state(), packer->state());
  const ReaderState state = checkpoint.reader_state(config);
  EXPECT_EQ(state.num_workers, 3u);
  EXPECT_EQ(state.worker_rank, 2u);
  EXPECT_EQ(state.position, checkpoint.position());
  EXPECT_EQ(state.position, enumerator->current_sample_position());
  EXPECT_EQ(state.sequence_counter, enumerator->state().sequence_counter);
  EXPECT_FALSE(state.bptt.has_value());
  EXPECT_FALSE(state.transform_draws.has_value());
}

TEST(CheckpointState, ADeferredRestoreWaitsUntilTaken) {
  auto enumerator = std::make_shared<NoRandomizer>(MockDeserializer::uniform(2, 2));
  auto packer = make_sequence_packer(enumerator, false);
  CheckpointState checkpoint(*enumerator, *packer);
  EXPECT_FALSE(checkpoint.restore_pending());
  ReaderState first;
  first.position = 1;
  ReaderState second;
  second.position = 2;
  checkpoint.defer(first);
  checkpoint.defer(second);  // the later one counts
  EXPECT_TRUE(checkpoint.restore_pending());
  EXPECT_EQ(enumerator->current_sample_position(), 0u);  // nothing positioned yet
  EXPECT_EQ(checkpoint.take_pending(), second);
  EXPECT_FALSE(checkpoint.restore_pending());
  EXPECT_EQ(checkpoint.take_pending(), std::nullopt);
}

}  // namespace
}  // namespace cntkio::pipeline
