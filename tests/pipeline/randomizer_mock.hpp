// Test helpers for the randomizer tests: a mock deserializer whose sequence values equal their keys, with
// counters of loaded and live chunks, and readers that drain an enumerator.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/env.hpp"
#include "cntkio/skip_report.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline::testing {

/// Counts shared by the mock and the chunks it creates (chunks may outlive the mock). Updated under `mutex`:
/// a randomizer with a pool loads and drops chunks on its threads.
struct ChunkCounters {
  std::mutex mutex;
  size_t loads = 0;
  size_t live = 0;
  size_t max_live = 0;
  std::vector<uint32_t> loaded_ids;
};

/// n chunks; chunk c holds sequences with consecutive keys; sequence key k has one dense float stream of
/// dimension 1 whose every sample is k.
class MockDeserializer : public Deserializer {
 public:
  /// lengths[c][i] = scheduling (and parsed) length of sequence i of chunk c.
  explicit MockDeserializer(std::vector<std::vector<uint32_t>> lengths)
      : lengths_(std::move(lengths)), counters_(std::make_shared<ChunkCounters>()) {
    StreamInfo s;
    s.name = "features";
    s.sample_shape = {1};
    streams_.push_back(s);
    uint64_t key = 0;
    for (const auto& chunk : lengths_) {
      first_key_.push_back(key);
      key += chunk.size();
    }
  }

  /// `chunks` chunks of `per_chunk` sequences of length `length`: chunk c holds keys c*k .. c*k+k-1.
  static std::shared_ptr<MockDeserializer> uniform(size_t chunks, size_t per_chunk, uint32_t length = 1) {
    return std::make_shared<MockDeserializer>(
        std::vector<std::vector<uint32_t>>(chunks, std::vector<uint32_t>(per_chunk, length)));
  }

  /// Jagged lengths: sequence key k has length 1 + (k * 7) % 5.
  static std::shared_ptr<MockDeserializer> jagged(size_t chunks, size_t per_chunk) {
    std::vector<std::vector<uint32_t>> lengths(chunks);
    uint64_t key = 0;
    for (auto& chunk : lengths) {
      for (size_t i = 0; i < per_chunk; ++i, ++key) chunk.push_back(static_cast<uint32_t>(1 + (key * 7) % 5));
    }
    return std::make_shared<MockDeserializer>(lengths);
  }

  void set_invalid(uint64_t key) { invalid_.insert(key); }
  const ChunkCounters& counters() const { return *counters_; }
  uint32_t length_of(uint64_t key) const {
    for (size_t c = 0; c < lengths_.size(); ++c) {
      if (key < first_key_[c] + lengths_[c].size()) return lengths_[c][key - first_key_[c]];
    }
    return 0;
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> infos;
    for (size_t c = 0; c < lengths_.size(); ++c) {
      ChunkInfo info;
      info.id = static_cast<uint32_t>(c);
      info.number_of_sequences = lengths_[c].size();
      for (uint32_t l : lengths_[c]) info.number_of_samples += l;
      infos.push_back(info);
    }
    return infos;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    for (size_t i = 0; i < lengths_[chunk_id].size(); ++i) {
      SequenceInfo info;
      info.index_in_chunk = static_cast<uint32_t>(i);
      info.number_of_samples = lengths_[chunk_id][i];
      info.chunk_id = chunk_id;
      info.key.sequence = first_key_[chunk_id] + i;
      out.push_back(info);
    }
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    auto chunk = std::make_shared<MockChunk>(counters_);
    for (size_t i = 0; i < lengths_[chunk_id].size(); ++i) {
      const uint64_t key = first_key_[chunk_id] + i;
      chunk->values.emplace_back(lengths_[chunk_id][i], static_cast<float>(key));
      chunk->valid.push_back(invalid_.count(key) == 0);
    }
    std::lock_guard<std::mutex> lock(counters_->mutex);
    ++counters_->loads;
    counters_->loaded_ids.push_back(chunk_id);
    return chunk;
  }

 private:
  struct MockChunk : Chunk {
    explicit MockChunk(std::shared_ptr<ChunkCounters> c) : counters(std::move(c)) {
      std::lock_guard<std::mutex> lock(counters->mutex);
      ++counters->live;
      counters->max_live = std::max(counters->max_live, counters->live);
    }
    ~MockChunk() override {
      std::lock_guard<std::mutex> lock(counters->mutex);
      --counters->live;
    }
    void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
      SequenceData d;
      d.number_of_samples = static_cast<uint32_t>(values[index].size());
      d.values = values[index].data();
      d.valid = valid[index];
      out.push_back(d);
    }
    std::shared_ptr<ChunkCounters> counters;
    std::vector<std::vector<float>> values;
    std::vector<bool> valid;
  };

  std::vector<std::vector<uint32_t>> lengths_;
  std::vector<uint64_t> first_key_;
  std::vector<StreamInfo> streams_;
  std::set<uint64_t> invalid_;
  std::shared_ptr<ChunkCounters> counters_;
};

/// One get_next_sequences result, reduced to what the tests compare.
struct Batch {
  std::vector<uint64_t> keys;
  size_t samples = 0;  // scheduling samples of this worker's sequences
  bool end_of_sweep = false;
  bool end_of_epoch = false;
};

/// Reduces `s`, checking that its data matches its keys (value == key, length == scheduling length).
inline Batch to_batch(const Sequences& s, const MockDeserializer& mock) {
  Batch b;
  b.end_of_sweep = s.end_of_sweep;
  b.end_of_epoch = s.end_of_epoch;
  EXPECT_EQ(s.data.size(), 1u);
  for (size_t i = 0; i < s.num_sequences(); ++i) {
    const uint64_t key = s.keys[i].sequence;
    const SequenceData& d = s.data[0][i];
    EXPECT_EQ(d.number_of_samples, mock.length_of(key));
    for (uint32_t t = 0; t < d.number_of_samples; ++t) {
      EXPECT_EQ(static_cast<const float*>(d.values)[t], static_cast<float>(key));
    }
    b.keys.push_back(key);
    b.samples += mock.length_of(key);
  }
  return b;
}

/// Calls get_next_sequences(global, local) until end_of_epoch (at most `max_calls` times).
inline std::vector<Batch> read_epoch(SequenceEnumerator& e, const MockDeserializer& mock, size_t global,
                                     size_t local, size_t max_calls = 1000000) {
  std::vector<Batch> batches;
  for (size_t i = 0; i < max_calls; ++i) {
    batches.push_back(to_batch(e.get_next_sequences(global, local), mock));
    if (batches.back().end_of_epoch) break;
  }
  return batches;
}

inline std::vector<uint64_t> all_keys(const std::vector<Batch>& batches) {
  std::vector<uint64_t> keys;
  for (const Batch& b : batches) keys.insert(keys.end(), b.keys.begin(), b.keys.end());
  return keys;
}

inline std::vector<size_t> sizes(const std::vector<Batch>& batches) {
  std::vector<size_t> out;
  for (const Batch& b : batches) out.push_back(b.samples);
  return out;
}

/// An epoch configuration for one worker.
inline EpochConfiguration epoch_config(size_t samples = kRequestDataSize, size_t sweeps = kInfinitelyRepeat,
                                       size_t index = 0, bool allow_cross = false, size_t workers = 1,
                                       size_t rank = 0) {
  EpochConfiguration c;
  c.total_epoch_size_in_samples = samples;
  c.total_epoch_size_in_sweeps = sweeps;
  c.epoch_index = index;
  c.allow_minibatches_to_cross_sweeps = allow_cross;
  c.num_workers = workers;
  c.worker_rank = rank;
  return c;
}

/// The mock's `chunks` chunks of `per_chunk` one-sample sequences, said to come from `path` (empty: from no
/// file, as a user's source), with the tolerated errors it reports: `errors`, plus one counted by every load
/// of chunk `bad_chunk`. `on_load` runs at the start of each load (on the loading thread).
class FileMock : public MockDeserializer {
 public:
  FileMock(size_t chunks, size_t per_chunk, std::string path)
      : MockDeserializer(std::vector<std::vector<uint32_t>>(chunks, std::vector<uint32_t>(per_chunk, 1))),
        path_(std::move(path)) {
    if (!path_.empty()) identity_ = Env::current()->file_identity(path_);
  }
  std::vector<InputFileVersion> input_files() const override {
    if (path_.empty()) return {};
    return {{path_, identity_}};
  }
  ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (chunk_id == bad_chunk) ++errors;
    if (on_load) on_load(chunk_id);
    return MockDeserializer::load_chunk(chunk_id);
  }
  void add_skips(SkipReport& report) const override { report.errors += errors; }

  uint32_t bad_chunk = UINT32_MAX;
  uint64_t errors = 0;
  std::function<void(uint32_t)> on_load;

 private:
  std::string path_;
  FileIdentity identity_;
};

/// A fixture with a small data file of its own (`path_`, in the folder `dir_`, removed afterwards), for the
/// identity a FileMock reports.
class DataFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("cntkio_data_file_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "data").string();
    std::ofstream(path_) << "data";
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::filesystem::path dir_;
  std::string path_;
};

}  // namespace cntkio::pipeline::testing
