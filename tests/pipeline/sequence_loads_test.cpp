// Sequences loaded alone (Deserializer::load_sequences): the block randomizer delivers the sequences of a
// minibatch whose chunks are still loading without waiting for those chunks, and the data is the same as
// from the chunks.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/randomizer_common.hpp"
#include "randomizer_mock.hpp"

namespace cntkio::pipeline {
namespace {

using testing::DataFileTest;
using testing::MockDeserializer;

// A chunk of some sequences of a mock chunk: the value of each sample is the sequence's key.
struct ListedChunk : Chunk {
  std::map<uint32_t, std::vector<float>> values;  // by index in the whole chunk
  void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
    const std::vector<float>& v = values.at(index);
    SequenceData d;
    d.number_of_samples = static_cast<uint32_t>(v.size());
    d.values = v.data();
    out.push_back(d);
  }
};

// The mock whose chunk loads wait until the test opens the gate, and which loads sequences alone at once.
class GatedMock : public MockDeserializer {
 public:
  GatedMock(size_t chunks, size_t per_chunk)
      : MockDeserializer(std::vector<std::vector<uint32_t>>(chunks, std::vector<uint32_t>(per_chunk, 2))),
        per_chunk_(per_chunk),
        gate_(opened_.get_future().share()) {}
  ~GatedMock() override { open(); }

  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!is_open_) opened_.set_value();
    is_open_ = true;
  }
  // Loaded on the pool's threads: chunks of their own (the mock's count loads without a lock).
  ChunkPtr load_chunk(uint32_t chunk_id) override {
    gate_.wait();
    std::vector<uint32_t> all(per_chunk_);
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    return load_sequences(chunk_id, all);
  }
  bool loads_sequences_alone() const override { return true; }
  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices) override {
    auto chunk = std::make_shared<ListedChunk>();
    for (uint32_t i : indices) {
      chunk->values[i] = std::vector<float>(2, static_cast<float>(chunk_id * per_chunk_ + i));
    }
    return chunk;
  }

 private:
  size_t per_chunk_;
  std::mutex mutex_;
  bool is_open_ = false;
  std::promise<void> opened_;
  std::shared_future<void> gate_;
};

// The first minibatch of `mb` samples of `reader`, read while `gated`'s chunk loads are held; empty if it
// did not come within 20 s (it waited for a chunk). The gate is open when this returns.
std::optional<Sequences> first_minibatch_while_loads_wait(GatedMock& gated, SequenceEnumerator& reader,
                                                          size_t mb) {
  auto first = std::async(std::launch::async, [&] { return reader.get_next_sequences(mb, mb); });
  const bool came = first.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  gated.open();  // whatever happened: no load may stay blocked
  if (!came) {
    first.wait();
    return std::nullopt;
  }
  return first.get();
}

// Keys and values of a whole sweep read in minibatches of `mb` samples; every value must be its key.
std::vector<uint64_t> read_sweep(BlockRandomizer& randomizer, size_t mb) {
  EpochConfiguration config;
  config.minibatch_size_in_samples = mb;
  config.total_epoch_size_in_samples = randomizer.sweep_size();
  randomizer.start_epoch(config);
  std::vector<uint64_t> keys;
  for (;;) {
    Sequences s = randomizer.get_next_sequences(mb, mb);
    for (size_t k = 0; k < s.keys.size(); ++k) {
      keys.push_back(s.keys[k].sequence);
      const SequenceData& d = s.data[0][k];
      for (uint32_t t = 0; t < d.number_of_samples; ++t) {
        EXPECT_EQ(static_cast<const float*>(d.values)[t], static_cast<float>(s.keys[k].sequence));
      }
    }
    if (s.end_of_epoch || s.keys.empty()) break;
  }
  return keys;
}

TEST(SequenceLoads, AWindowsFirstMinibatchComesWhileItsChunksAreStillLoading) {
  auto gated = std::make_shared<GatedMock>(8, 10);
  auto pool = std::make_shared<core::ThreadPool>(2);
  BlockRandomizer randomizer(gated, 8, false, 5, 0, pool);
  EpochConfiguration config;
  config.minibatch_size_in_samples = 10;
  config.total_epoch_size_in_samples = randomizer.sweep_size();
  randomizer.start_epoch(config);
  std::optional<Sequences> first = first_minibatch_while_loads_wait(*gated, randomizer, 10);
  ASSERT_TRUE(first) << "the first minibatch waited for the chunks";
  const Sequences& s = *first;
  ASSERT_EQ(s.keys.size(), 5u);
  for (size_t k = 0; k < s.keys.size(); ++k) {
    EXPECT_EQ(static_cast<const float*>(s.data[0][k].values)[0], static_cast<float>(s.keys[k].sequence));
  }
  EXPECT_EQ(randomizer.sequences_loaded_alone(), 5u);
}

TEST(SequenceLoads, ASweepGivesTheSameSequencesAsOneThatWaitsForItsChunks) {
  for (const size_t window : {1, 3, 8}) {
    auto gated = std::make_shared<GatedMock>(8, 10);
    auto plain = MockDeserializer::uniform(8, 10, 2);
    auto pool = std::make_shared<core::ThreadPool>(2);
    BlockRandomizer a(gated, window, false, 9, 0, pool);
    BlockRandomizer b(plain, window, false, 9);  // loads on this thread: the mock counts without a lock
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      gated->open();
    });
    const std::vector<uint64_t> keys = read_sweep(a, 8);
    opener.join();
    EXPECT_EQ(keys, read_sweep(b, 8)) << "window " << window;
    EXPECT_EQ(keys.size(), 80u);
  }
}

// Keys of the rest of an epoch read in minibatches of `mb` samples as worker `rank` of `workers`, from the
// enumerator's position; every value must be its key.
std::vector<uint64_t> read_rest(SequenceEnumerator& e, size_t mb, size_t max_calls = 1000) {
  std::vector<uint64_t> keys;
  for (size_t call = 0; call < max_calls; ++call) {
    Sequences s = e.get_next_sequences(mb, mb);
    for (size_t k = 0; k < s.keys.size(); ++k) {
      keys.push_back(s.keys[k].sequence);
      const SequenceData& d = s.data[0][k];
      for (uint32_t t = 0; t < d.number_of_samples; ++t) {
        EXPECT_EQ(static_cast<const float*>(d.values)[t], static_cast<float>(s.keys[k].sequence));
      }
    }
    if (s.end_of_epoch) break;
  }
  return keys;
}

EpochConfiguration sweep_config(size_t sweep, size_t mb, size_t workers = 1, size_t rank = 0) {
  EpochConfiguration config;
  config.minibatch_size_in_samples = mb;
  config.total_epoch_size_in_samples = sweep;
  config.num_workers = workers;
  config.worker_rank = rank;
  return config;
}

TEST(SequenceLoads, WithoutRandomizationTheFirstMinibatchComesWhileItsChunkIsStillLoading) {
  auto gated = std::make_shared<GatedMock>(4, 10);
  auto pool = std::make_shared<core::ThreadPool>(2);
  NoRandomizer reader(gated, 0, pool);
  reader.start_epoch(sweep_config(reader.sweep_size(), 6));
  std::optional<Sequences> first = first_minibatch_while_loads_wait(*gated, reader, 6);
  ASSERT_TRUE(first) << "the first minibatch waited for its chunk";
  const Sequences& s = *first;
  ASSERT_EQ(s.keys.size(), 3u);
  for (size_t k = 0; k < s.keys.size(); ++k) {
    EXPECT_EQ(s.keys[k].sequence, k);
    EXPECT_EQ(static_cast<const float*>(s.data[0][k].values)[1], static_cast<float>(k));
  }
  EXPECT_EQ(reader.sequences_loaded_alone(), 3u);
  EXPECT_EQ(read_rest(reader, 6).size(), 37u);
}

// Sweeps and restores mid-sweep, for one worker and for each of two: the same sequences as a reader that
// waits for its chunks (the mock loads on the reading thread there: no pool).
TEST(SequenceLoads, WithoutRandomizationSweepsAndRestoresAreThoseOfAReaderThatWaits) {
  for (const size_t workers : {1, 2}) {
    for (size_t rank = 0; rank < workers; ++rank) {
      for (const size_t mb : {6, 20, 64}) {
        auto plain = MockDeserializer::uniform(5, 10, 2);
        NoRandomizer waiting(plain, 0);
        waiting.start_epoch(sweep_config(waiting.sweep_size(), mb, workers, rank));
        const std::vector<uint64_t> expected = read_rest(waiting, mb);

        auto gated = std::make_shared<GatedMock>(5, 10);
        gated->open();
        auto pool = std::make_shared<core::ThreadPool>(2);
        NoRandomizer reader(gated, 0, pool);
        reader.start_epoch(sweep_config(reader.sweep_size(), mb, workers, rank));
        std::vector<uint64_t> keys = read_rest(reader, mb, 2);  // two minibatches, then a restore
        const EnumeratorState state = reader.state();
        NoRandomizer restored(gated, 0, pool);
        restored.start_epoch(sweep_config(restored.sweep_size(), mb, workers, rank));
        restored.restore(state);
        const std::vector<uint64_t> rest = read_rest(restored, mb);
        keys.insert(keys.end(), rest.begin(), rest.end());
        EXPECT_EQ(keys, expected) << workers << " workers, rank " << rank << ", minibatch " << mb;
        EXPECT_GT(reader.sequences_loaded_alone() + restored.sequences_loaded_alone(), 0u);
      }
    }
  }
}

// The load_chunk of `inner`, held until the gate opens; everything else as `inner`.
class GatedCtf : public Deserializer {
 public:
  explicit GatedCtf(std::shared_ptr<Deserializer> inner, bool alone)
      : inner_(std::move(inner)), alone_(alone), gate_(opened_.get_future().share()) {}
  ~GatedCtf() override { open(); }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!is_open_) opened_.set_value();
    is_open_ = true;
  }
  const std::vector<StreamInfo>& streams() const override { return inner_->streams(); }
  std::vector<ChunkInfo> chunk_infos() const override { return inner_->chunk_infos(); }
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    inner_->sequence_infos_for_chunk(chunk_id, out);
  }
  ChunkPtr load_chunk(uint32_t chunk_id) override {
    gate_.wait();
    return inner_->load_chunk(chunk_id);
  }
  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices) override {
    return alone_ ? inner_->load_sequences(chunk_id, indices) : nullptr;
  }
  bool loads_sequences_alone() const override { return alone_ && inner_->loads_sequences_alone(); }
  void add_skips(SkipReport& report) const override { inner_->add_skips(report); }

 private:
  std::shared_ptr<Deserializer> inner_;
  bool alone_;
  std::mutex mutex_;
  bool is_open_ = false;
  std::promise<void> opened_;
  std::shared_future<void> gate_;
};

class CtfSequenceLoads : public DataFileTest {
 public:  // for expect_the_same_sweeps
  // 300 sequences of 1-3 rows, a dense stream of 2 values and a sparse one; `bad_row` (if any) malformed.
  void write_ctf(int bad_row = -1) {
    std::ofstream out(path_);
    int row = 0;
    for (int k = 0; k < 300; ++k) {
      for (int r = 0; r <= k % 3; ++r, ++row) {
        out << k << " |a " << k << " " << (r + 0.5) << " |b " << (k % 7) << ":" << (r + 1);
        if (row == bad_row) out << " |a x1";
        out << "\n";
      }
    }
  }
  std::shared_ptr<Deserializer> open_ctf(uint64_t max_errors = 0) {
    CtfOptions options;
    options.file = path_;
    options.streams = {{"a", "a", 2, StorageFormat::kDense, false},
                       {"b", "b", 10, StorageFormat::kSparseCsc, false}};
    options.chunk_size_in_bytes = 512;  // many chunks
    options.max_errors = max_errors;
    options.log_sink = [this](int, std::string_view line) { log_.emplace_back(line); };
    return make_ctf_deserializer(options);
  }
  // Values of a sweep, sequence by sequence, as text; the gate opens after the first minibatch.
  template <class Enumerator>
  std::vector<std::string> read(GatedCtf& gated, Enumerator& randomizer) {
    EpochConfiguration config;
    config.minibatch_size_in_samples = 16;
    config.total_epoch_size_in_samples = randomizer.sweep_size();
    randomizer.start_epoch(config);
    std::vector<std::string> out;
    for (bool first = true;; first = false) {
      std::future<Sequences> next =
          std::async(std::launch::async, [&] { return randomizer.get_next_sequences(16, 16); });
      if (first && next.wait_for(std::chrono::milliseconds(300)) != std::future_status::ready) gated.open();
      const Sequences s = next.get();
      gated.open();  // the chunks load for the rest of the sweep
      for (size_t k = 0; k < s.keys.size(); ++k) out.push_back(text_of(s, k));
      if (s.end_of_epoch || s.keys.empty()) break;
    }
    return out;
  }
  static std::string text_of(const Sequences& s, size_t k) {
    std::string text = std::to_string(s.keys[k].sequence) + ":";
    const SequenceData& a = s.data[0][k];
    for (uint32_t i = 0; i < 2 * a.number_of_samples; ++i) {
      text += " " + std::to_string(static_cast<const float*>(a.values)[i]);
    }
    const SequenceData& b = s.data[1][k];
    text += " |";
    for (size_t i = 0; i < b.total_nnz; ++i) {
      text +=
          " " + std::to_string(b.indices[i]) + "=" + std::to_string(static_cast<const float*>(b.values)[i]);
    }
    for (uint32_t i = 0; i < b.number_of_samples; ++i) text += " #" + std::to_string(b.nnz_counts[i]);
    return text;
  }
  std::vector<std::string> log_;
};

TEST_F(CtfSequenceLoads, TheSequencesOfAChunkLoadedAloneAreThoseOfTheChunk) {
  write_ctf();
  auto ctf = open_ctf();
  ASSERT_GT(ctf->chunk_infos().size(), 10u);
  const std::vector<uint32_t> wanted{0, 2, 3};
  ChunkPtr whole = ctf->load_chunk(4);
  ChunkPtr alone = ctf->load_sequences(4, wanted);
  ASSERT_NE(alone, nullptr);
  Sequences a;
  Sequences b;
  a.data.resize(2);
  b.data.resize(2);
  std::vector<SequenceData> scratch;
  for (uint32_t i : wanted) {
    append_sequence(a, whole, 4, i, SequenceKey{i, 0}, scratch);
    append_sequence(b, alone, 4, i, SequenceKey{i, 0}, scratch);
  }
  for (size_t k = 0; k < wanted.size(); ++k) EXPECT_EQ(text_of(a, k), text_of(b, k));
  std::vector<SequenceData> out;
  EXPECT_THROW(alone->get_sequence(1, out), Error);  // not asked for
}

TEST_F(CtfSequenceLoads, AMalformedSequenceIsNotLoadedAloneAndNothingIsCountedOrLogged) {
  write_ctf(40);
  auto ctf = open_ctf(5);
  // Find the chunk and index of the sequence holding row 40 by loading every chunk alone, whole.
  bool refused = false;
  for (uint32_t c = 0; c < ctf->chunk_infos().size(); ++c) {
    std::vector<uint32_t> all(ctf->chunk_infos()[c].number_of_sequences);
    for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
    if (!ctf->load_sequences(c, all)) refused = true;
  }
  EXPECT_TRUE(refused);
  EXPECT_EQ(ctf_error_summary(*ctf).errors, 0u);
  EXPECT_TRUE(log_.empty());
}

// Reads a sweep of the CTF file with `bad_row` (if any) malformed (3 errors tolerated) through readers
// `make_reader(deserializer, pool)` made, over a deserializer that loads sequences alone and over one that
// does not: the same values and skip counts. Returns how many sequences each loaded alone.
template <class MakeReader>
std::pair<uint64_t, uint64_t> expect_the_same_sweeps(CtfSequenceLoads& test, int bad_row,
                                                     MakeReader make_reader) {
  test.write_ctf(bad_row);
  auto pool = std::make_shared<core::ThreadPool>(2);
  std::vector<std::string> sweeps[2];
  SkipReport skips[2];
  uint64_t alone[2];
  for (int with_alone = 0; with_alone < 2; ++with_alone) {
    auto gated = std::make_shared<GatedCtf>(test.open_ctf(3), with_alone == 1);
    auto reader = make_reader(gated, pool);
    sweeps[with_alone] = test.read(*gated, *reader);
    gated->add_skips(skips[with_alone]);
    alone[with_alone] = reader->sequences_loaded_alone();
  }
  EXPECT_EQ(sweeps[0], sweeps[1]) << "bad row " << bad_row;
  EXPECT_EQ(sweeps[0].size(), 300u);
  EXPECT_EQ(skips[0].errors, skips[1].errors);
  EXPECT_EQ(skips[1].errors, bad_row < 0 ? 0u : 1u);
  return {alone[0], alone[1]};
}

TEST_F(CtfSequenceLoads, ARandomizedSweepIsTheSameWithAndWithoutLoadsAlone) {
  for (const int bad_row : {-1, 57}) {
    const auto [without, with] = expect_the_same_sweeps(*this, bad_row, [](auto gated, auto pool) {
      return std::make_unique<BlockRandomizer>(gated, 1000, false, 2, 0, pool);  // one window: the corpus
    });
    EXPECT_EQ(without, 0u);
    EXPECT_GT(with, 0u);
  }
}

TEST_F(CtfSequenceLoads, AnUnrandomizedSweepIsTheSameWithAndWithoutLoadsAlone) {
  for (const int bad_row : {-1, 0, 1, 57}) {  // rows 0 and 1: in the first minibatch
    const auto [without, with] = expect_the_same_sweeps(
        *this, bad_row, [](auto gated, auto pool) { return std::make_unique<NoRandomizer>(gated, 0, pool); });
    EXPECT_EQ(without, 0u);
    EXPECT_EQ(with > 0, bad_row < 0 || bad_row > 1) << "bad row " << bad_row;
  }
}

TEST_F(CtfSequenceLoads, AMalformedSequenceStillFailsAStrictReader) {
  write_ctf(57);
  auto pool = std::make_shared<core::ThreadPool>(2);
  auto gated = std::make_shared<GatedCtf>(open_ctf(0), true);
  BlockRandomizer randomizer(gated, 1000, false, 2, 0, pool);
  EXPECT_THROW(read(*gated, randomizer), FormatError);
  write_ctf(1);  // in the first minibatch of a reader that does not randomize
  auto unrandomized = std::make_shared<GatedCtf>(open_ctf(0), true);
  NoRandomizer reader(unrandomized, 0, pool);
  EXPECT_THROW(read(*unrandomized, reader), FormatError);
}

}  // namespace
}  // namespace cntkio::pipeline
