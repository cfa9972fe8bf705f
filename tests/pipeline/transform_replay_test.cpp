// TransformReplay alone, over a transform stage whose one random transform adds its slot's draw count to
// every value: epoch starts are recorded, a fresh reader replays the epochs before the one asked for, an
// earlier epoch again only repositions, restores and v2 reading clear or keep the book as they should.
#include "pipeline/transform_replay.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/transform.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/randomizer_mock.hpp"
#include "pipeline/transform_stage.hpp"

namespace cntkio::pipeline {
namespace {

using testing::MockDeserializer;

// One random transform; the engine of slot j has given draws_[j] outputs. Each value becomes value + 1000 *
// (the slot's draw count before this item).
class CountingTransformer final : public SequenceTransformer {
 public:
  StreamInfo output_stream(const StreamInfo& input) const override { return input; }
  void start_batch(size_t batch_size) override {
    if (draws_.size() < batch_size) draws_.resize(batch_size, 0);
  }
  SequenceData apply(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) override {
    auto values = std::make_shared<std::vector<float>>(input.number_of_samples);
    const float draw = static_cast<float>(draws_[slot]++);
    for (size_t i = 0; i < values->size(); ++i) {
      (*values)[i] = static_cast<const float*>(input.values)[i] + 1000 * draw;
    }
    SequenceData out = input;
    out.values = values->data();
    owner = values;
    return out;
  }
  size_t random_transforms() const override { return 1; }
  std::vector<std::vector<uint64_t>> random_draws() const override { return {draws_}; }
  void reposition_random_draws(const std::vector<std::vector<uint64_t>>& draws) override {
    if (draws.size() != 1) throw UsageError("one random transform");
    draws_ = draws[0];
  }

 private:
  std::vector<uint64_t> draws_;
};

// Epochs of 5 one-sample sequences (of 12 in a sweep) in minibatches of 2, through the transform.
struct Reader {
  explicit Reader(bool random = true) {
    std::vector<SequenceTransformerPtr> transformers{nullptr};
    if (random) transformers[0] = std::make_shared<CountingTransformer>();
    enumerator =
        with_transforms(std::make_shared<NoRandomizer>(MockDeserializer::uniform(3, 4)), transformers);
    packer = make_sequence_packer(enumerator, false);
    replay = std::make_unique<TransformReplay>(
        enumerator->state().transform_draws, 1,
        [this](core::LogLevel, std::string_view line) { warnings.emplace_back(line); });
  }

  EpochConfiguration config(size_t epoch) const {
    EpochConfiguration c = testing::epoch_config(5, kInfinitelyRepeat, epoch);
    c.minibatch_size_in_samples = 2;
    return c;
  }

  void begin(size_t epoch) {
    enumerator->start_epoch(config(epoch));
    enumerator->skip_delivered({});
    packer->set_configuration(config(epoch));
  }

  // start_epoch as the source does it: the book first, then the epoch, then the replay if one is due.
  void start(size_t epoch) {
    replay->start_v1_epoch(epoch, *enumerator);
    begin(epoch);
    if (replay->replay_due() && replay->position_engines(*enumerator, *packer, config(epoch))) begin(epoch);
  }

  // The values of the next minibatch (its end of epoch recorded as the source does).
  std::string read(size_t epoch) {
    const Minibatch mb = packer->read_minibatch();
    if (mb.end_of_epoch) replay->epoch_ended(epoch, true, enumerator->state().transform_draws);
    std::string text;
    if (!mb.empty()) {
      for (size_t c = 0; c < mb.streams[0].layout.num_columns(); ++c) {
        text += std::to_string(static_cast<int>(mb.streams[0].value_at(0, c))) + " ";
      }
    }
    return text + (mb.end_of_epoch ? "| end" : "|");
  }

  std::vector<std::string> read_epoch(size_t epoch) {
    std::vector<std::string> out;
    do {
      out.push_back(read(epoch));
    } while (!out.back().ends_with("end"));
    return out;
  }

  std::shared_ptr<SequenceEnumerator> enumerator;
  std::unique_ptr<Packer> packer;
  std::unique_ptr<TransformReplay> replay;
  std::vector<std::string> warnings;
};

TEST(TransformReplay, AnUninterruptedRunRecordsEveryEpochStartAndNeverReplays) {
  Reader reader;
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    reader.replay->start_v1_epoch(epoch, *reader.enumerator);
    EXPECT_FALSE(reader.replay->replay_due()) << "epoch " << epoch;
    reader.begin(epoch);
    reader.read_epoch(epoch);
  }
  EXPECT_TRUE(reader.warnings.empty());
}

TEST(TransformReplay, AFreshReaderReadsTheEpochsBeforeTheOneAskedForAgain) {
  Reader uninterrupted;
  std::vector<std::string> epoch2;
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    uninterrupted.start(epoch);
    epoch2 = uninterrupted.read_epoch(epoch);
  }
  Reader fresh;
  fresh.replay->start_v1_epoch(2, *fresh.enumerator);
  ASSERT_TRUE(fresh.replay->replay_due());
  fresh.begin(2);
  Reader unpositioned;  // what the fresh reader would read without the replay
  unpositioned.begin(2);
  EXPECT_NE(unpositioned.read_epoch(2), epoch2);

  EXPECT_TRUE(fresh.replay->position_engines(*fresh.enumerator, *fresh.packer, fresh.config(2)));
  EXPECT_FALSE(fresh.replay->replay_due());
  fresh.begin(2);
  EXPECT_EQ(fresh.read_epoch(2), epoch2);
  ASSERT_EQ(fresh.warnings.size(), 1u);
  EXPECT_NE(fresh.warnings[0].find("reading epochs 0 to 1 again"), std::string::npos) << fresh.warnings[0];
  // The replayed epochs' starts are known now: epoch 1 again only repositions.
  fresh.replay->start_v1_epoch(1, *fresh.enumerator);
  ASSERT_TRUE(fresh.replay->replay_due());
  EXPECT_FALSE(fresh.replay->position_engines(*fresh.enumerator, *fresh.packer, fresh.config(1)));
  EXPECT_EQ(fresh.warnings.size(), 1u);
}

TEST(TransformReplay, AnEarlierEpochAgainRepositionsTheEnginesWithoutReading) {
  Reader reader;
  reader.start(0);
  const std::vector<std::string> epoch0 = reader.read_epoch(0);
  reader.start(1);
  reader.read(1);  // epoch 1 cut short
  reader.replay->start_v1_epoch(0, *reader.enumerator);
  ASSERT_TRUE(reader.replay->replay_due());
  reader.begin(0);
  EXPECT_FALSE(reader.replay->position_engines(*reader.enumerator, *reader.packer, reader.config(0)));
  EXPECT_EQ(reader.read_epoch(0), epoch0);
  EXPECT_TRUE(reader.warnings.empty());
}

TEST(TransformReplay, ARestoreOrV2ReadingLeavesNoReplayDue) {
  Reader reader;
  reader.replay->start_v1_epoch(2, *reader.enumerator);
  ASSERT_TRUE(reader.replay->replay_due());
  reader.replay->restored(ReaderState{});
  EXPECT_FALSE(reader.replay->replay_due());
  reader.replay->start_v1_epoch(2, *reader.enumerator);
  ASSERT_TRUE(reader.replay->replay_due());
  reader.replay->start_v2();
  EXPECT_FALSE(reader.replay->replay_due());
}

TEST(TransformReplay, OnlyEpochsBegunWithKnownEnginesRecordTheNextStart) {
  const std::vector<std::vector<uint64_t>> draws{{4, 4}};
  ReaderState with_draws;
  with_draws.transform_draws = draws;
  ReaderState merged = with_draws;  // a merged state cannot record draws
  merged.worker_positions = {0, 0};
  for (const ReaderState& state : {ReaderState{}, merged}) {
    Reader reader;
    reader.replay->restored(state);
    reader.replay->epoch_ended(0, true, draws);
    reader.enumerator->reposition_transforms(draws);
    reader.replay->start_v1_epoch(1, *reader.enumerator);
    EXPECT_TRUE(reader.replay->replay_due());
  }
  Reader restored;
  restored.replay->restored(with_draws);
  restored.replay->epoch_ended(0, true, draws);
  restored.enumerator->reposition_transforms(draws);
  restored.replay->start_v1_epoch(1, *restored.enumerator);
  EXPECT_FALSE(restored.replay->replay_due());

  Reader v2_started;  // the v2 epoch begins where the engines are, not where an uninterrupted run has them
  v2_started.replay->start_v1_epoch(0, *v2_started.enumerator);
  v2_started.replay->start_v2();
  v2_started.replay->epoch_ended(0, true, draws);
  v2_started.enumerator->reposition_transforms(draws);
  v2_started.replay->start_v1_epoch(1, *v2_started.enumerator);
  EXPECT_TRUE(v2_started.replay->replay_due());

  Reader v2_ended;  // the end of the v2 epoch starts no v1 epoch
  v2_ended.replay->start_v1_epoch(0, *v2_ended.enumerator);
  v2_ended.replay->epoch_ended(0, false, draws);
  v2_ended.enumerator->reposition_transforms(draws);
  v2_ended.replay->start_v1_epoch(1, *v2_ended.enumerator);
  EXPECT_TRUE(v2_ended.replay->replay_due());
}

TEST(TransformReplay, AReaderWithoutRandomTransformsRefusesStatesWithDrawsAndNeverReplays) {
  Reader plain(false);
  ReaderState state;
  state.transform_draws = std::vector<std::vector<uint64_t>>{{1}};
  EXPECT_THROW(plain.replay->check_restorable(state), UsageError);
  state.transform_draws = std::vector<std::vector<uint64_t>>{};
  EXPECT_NO_THROW(plain.replay->check_restorable(state));
  plain.replay->start_v1_epoch(3, *plain.enumerator);
  EXPECT_FALSE(plain.replay->replay_due());

  Reader random;
  state.transform_draws = std::vector<std::vector<uint64_t>>{{1}};
  EXPECT_NO_THROW(random.replay->check_restorable(state));
}

}  // namespace
}  // namespace cntkio::pipeline
