// Minibatches read ahead in groups, fetched and packed on the loader threads at once (ReadAhead's group
// reader): the same minibatches, errors and states as reading them one at a time on one thread, randomized
// (BlockRandomizer) or in order (NoRandomizer).
#include <gtest/gtest.h>

#include <algorithm>
#include <any>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/registry.hpp"

using namespace cntkio;

namespace {

// What the test deserializer holds: chunks of sequences of 1..4 samples of one dense value (the key), some
// of them invalid (as a composite's sequence whose secondary data could not be read) and some malformed
// (get_sequence throws FormatError, as CBF does for a record with a negative count).
struct Data {
  size_t chunks = 12;
  size_t per_chunk = 40;
  std::set<uint64_t> invalid;
  std::set<uint64_t> malformed;
  uint32_t length(uint64_t key) const { return 1 + static_cast<uint32_t>((key * 5) % 4); }
};

class TestChunk : public Chunk {
 public:
  TestChunk(std::shared_ptr<const Data> data, uint32_t chunk_id) : data_(std::move(data)) {
    first_ = uint64_t{chunk_id} * data_->per_chunk;
    for (size_t i = 0; i < data_->per_chunk; ++i) {
      values_.emplace_back(data_->length(first_ + i), static_cast<float>(first_ + i));
    }
  }
  void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
    const uint64_t key = first_ + index;
    if (data_->malformed.count(key) > 0) {
      SourceLocation where;
      where.file = "test-data";
      where.sequence_key = std::to_string(key);
      throw FormatError("malformed record", where);
    }
    SequenceData d;
    d.number_of_samples = static_cast<uint32_t>(values_[index].size());
    d.values = values_[index].data();
    d.valid = data_->invalid.count(key) == 0;
    out.push_back(d);
  }

 private:
  std::shared_ptr<const Data> data_;
  uint64_t first_ = 0;
  std::vector<std::vector<float>> values_;
};

class TestDeserializer : public Deserializer {
 public:
  explicit TestDeserializer(std::shared_ptr<const Data> data) : data_(std::move(data)) {
    StreamInfo s;
    s.name = "x";
    s.sample_shape = {1};
    streams_.push_back(s);
  }
  const std::vector<StreamInfo>& streams() const override { return streams_; }
  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    for (uint32_t c = 0; c < data_->chunks; ++c) {
      ChunkInfo info;
      info.id = c;
      info.number_of_sequences = data_->per_chunk;
      for (size_t i = 0; i < data_->per_chunk; ++i)
        info.number_of_samples += data_->length(c * data_->per_chunk + i);
      out.push_back(info);
    }
    return out;
  }
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    for (uint32_t i = 0; i < data_->per_chunk; ++i) {
      SequenceInfo info;
      info.index_in_chunk = i;
      info.chunk_id = chunk_id;
      info.key.sequence = uint64_t{chunk_id} * data_->per_chunk + i;
      info.number_of_samples = data_->length(info.key.sequence);
      out.push_back(info);
    }
  }
  ChunkPtr load_chunk(uint32_t chunk_id) override { return std::make_shared<TestChunk>(data_, chunk_id); }

 private:
  std::shared_ptr<const Data> data_;
  std::vector<StreamInfo> streams_;
};

void register_test_type() {
  static const bool registered = [] {
    DeserializerType type;
    type.name = "GroupReadTestDeserializer";
    type.create = [](const DeserializerSpec& spec,
                     const DeserializerContext&) -> std::shared_ptr<Deserializer> {
      return std::make_shared<TestDeserializer>(std::any_cast<std::shared_ptr<const Data>>(spec.options));
    };
    register_deserializer(std::move(type));
    return true;
  }();
  (void)registered;
}

std::unique_ptr<MinibatchSource> make_source(std::shared_ptr<const Data> data, size_t threads, bool prefetch,
                                             size_t max_errors, Packing packing, bool randomize = true) {
  register_test_type();
  ReaderSpec spec;
  spec.source.randomize = randomize;
  spec.source.randomization_window = 3;
  spec.source.seed = 7;
  spec.source.threads = threads;
  spec.source.prefetch = prefetch;
  spec.source.max_errors = max_errors;
  spec.source.packing = packing;
  DeserializerSpec d;
  d.type = "GroupReadTestDeserializer";
  d.options = data;
  spec.deserializers.push_back(d);
  return MinibatchSource::create(spec);
}

// Every outcome of reading `epochs` epochs, in order: a minibatch (its keys and values), an error (its
// text), and the reader's state after each minibatch.
std::vector<std::string> outcomes(MinibatchSource& source, size_t minibatch_size, size_t epochs) {
  std::vector<std::string> out;
  for (size_t epoch = 0; epoch < epochs; ++epoch) {
    source.start_epoch(minibatch_size, epoch, kFullSweep);
    for (size_t reads = 0; reads < 10000; ++reads) {
      Minibatch mb;
      try {
        if (!source.next_minibatch(mb)) break;
      } catch (const Error& e) {
        out.push_back(std::string("error: ") + e.what());
        continue;
      }
      std::string text;
      for (const std::string& k : mb.keys) text += k + ",";
      const StreamBatch& x = mb.streams[0];
      text += "|";
      for (size_t c = 0; c < x.layout.num_columns(); ++c) text += std::to_string(x.value_at(0, c)) + " ";
      out.push_back(text);
      out.push_back("position " + std::to_string(source.current_sample_position()));
    }
  }
  return out;
}

struct Case {
  const char* name;
  std::set<uint64_t> invalid;
  std::set<uint64_t> malformed;
  size_t max_errors;
  Packing packing;
  bool fails;  // reading it meets an error (the reference is checked for one, or its absence)
};

}  // namespace

TEST(GroupRead, MinibatchesErrorsAndPositionsAreThoseOfAReaderWithoutThreads) {
  const std::vector<Case> cases = {
      {"clean", {}, {}, 0, Packing::kSequences, false},
      {"invalid sequences tolerated", {3, 77, 200, 201, 333}, {}, 10, Packing::kSequences, false},
      {"too many invalid sequences", {3, 77, 200, 201, 333, 400, 401, 402}, {}, 2, Packing::kSequences, true},
      {"malformed records", {}, {5, 150, 151, 470}, 0, Packing::kSequences, true},
      {"both", {9, 10, 300}, {44, 250}, 1, Packing::kSequences, true},
      // Frame mode: every sequence longer than one sample fails in the packer.
      {"frames", {}, {}, 0, Packing::kFrames, true},
  };
  for (const Case& c : cases) {
    auto data = std::make_shared<Data>();
    data->invalid = c.invalid;
    data->malformed = c.malformed;
    for (const bool randomize : {true, false}) {
      for (const size_t minibatch_size : {7u, 64u, 500u}) {
        auto alone = make_source(data, 0, false, c.max_errors, c.packing, randomize);
        const std::vector<std::string> expected = outcomes(*alone, minibatch_size, 2);
        ASSERT_GT(expected.size(), 2u);
        const bool failed = std::any_of(expected.begin(), expected.end(),
                                        [](const std::string& o) { return o.rfind("error: ", 0) == 0; });
        EXPECT_EQ(failed, c.fails) << c.name << (randomize ? ", randomized" : ", in order");
        for (const std::string& o : expected) {
          for (const uint64_t key : c.invalid) {  // an invalid sequence is never delivered
            EXPECT_EQ(("," + o).find("," + std::to_string(key) + ","), std::string::npos)
                << c.name << ": " << o;
          }
        }
        for (const size_t threads : {1u, 2u, 4u}) {
          auto grouped = make_source(data, threads, true, c.max_errors, c.packing, randomize);
          EXPECT_EQ(outcomes(*grouped, minibatch_size, 2), expected)
              << c.name << (randomize ? ", randomized" : ", in order") << ", minibatch size "
              << minibatch_size << ", " << threads << " threads";
        }
      }
    }
  }
}

// A restore to any minibatch's state, with groups read ahead past it, continues as the reader that never
// stopped.
TEST(GroupRead, RestoringAnyStateContinuesTheSameMinibatches) {
  auto data = std::make_shared<Data>();
  for (const bool randomize : {true, false}) {
    auto reference = make_source(data, 2, true, 0, Packing::kSequences, randomize);
    reference->start_epoch(16, 0, kFullSweep);
    std::vector<ReaderState> states;
    std::vector<std::vector<std::string>> keys;
    Minibatch mb;
    while (reference->next_minibatch(mb)) {
      states.push_back(reference->state());
      keys.push_back(mb.keys);
    }
    ASSERT_GT(keys.size(), 20u);
    for (size_t at = 0; at + 1 < keys.size(); at += 5) {
      auto source = make_source(data, 2, true, 0, Packing::kSequences, randomize);
      source->start_epoch(16, 0, kFullSweep);
      source->restore(states[at]);
      for (size_t k = at + 1; k < keys.size(); ++k) {
        ASSERT_TRUE(source->next_minibatch(mb)) << "restored at " << at << (randomize ? "" : ", in order");
        EXPECT_EQ(mb.keys, keys[k]) << "restored at " << at << ", minibatch " << k;
      }
    }
  }
}
