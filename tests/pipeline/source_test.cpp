// MinibatchSource end to end on generated CTF data: checkpoints, elastic resume, thread-count independence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/settings_invariants.hpp"

namespace fs = std::filesystem;
using namespace cntkio;

namespace {

// A CTF file of `sequences` sequences of 1..6 rows, dense x (dim 2) holding (key, row) and sparse y.
class Corpus {
 public:
  // `label_every_row`: y on every row instead of the first (truncated BPTT needs streams of equal length);
  // `max_rows`: sequences have 1..max_rows rows (1: frames, as frame mode needs).
  explicit Corpus(size_t sequences, bool label_every_row = false, size_t max_rows = 6) {
    dir_ = fs::temp_directory_path() /
           ("cntkio_source_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
    file_ = (dir_ / "data.ctf").string();
    std::ofstream out(file_);
    std::mt19937_64 rng(11);
    for (size_t s = 0; s < sequences; ++s) {
      size_t rows = 1 + rng() % max_rows;
      for (size_t r = 0; r < rows; ++r) {
        out << s << " |x " << s << " " << r;
        if (r == 0 || label_every_row) out << " |y " << (s % 7) << ":1";
        out << "\n";
      }
      samples_ += rows;
    }
  }
  ~Corpus() { fs::remove_all(dir_); }

  // A stand-alone or composite reader section over the file.
  Config reader(const std::string& extra, bool composite = false, size_t chunk_size = 1500) const {
    const std::string chunk = "chunkSizeInBytes = " + std::to_string(chunk_size) + "\n ";
    std::string ctf =
        "file = \"" + file_ +
        "\"\n input = [ x = [ dim = 2 ; format = dense ]\n y = [ dim = 7 ; format = sparse ] ]\n";
    std::string text;
    if (composite) {
      text = "R = [ reader = [ " + chunk + extra +
             "\n deserializers = ( [ type = " + "\"CNTKTextFormatDeserializer\"\n " + chunk + ctf +
             " ] ) ] ]";
    } else {
      text = "R = [ reader = [ readerType = CNTKTextFormatReader\n " + chunk + extra + "\n " + ctf + " ] ]";
    }
    return Config::from_text(text).get_block("R").get_block("reader");
  }

  // The corpus converted to CBF, in chunks of at most `chunk_size` bytes (once per size).
  std::string cbf_file(size_t chunk_size) const {
    const std::string cbf = (dir_ / ("data_" + std::to_string(chunk_size) + ".cbf")).string();
    if (!fs::exists(cbf)) {
      ConvertOptions options;
      options.streams = {parse_convert_stream("x:x:2:dense"), parse_convert_stream("y:y:7:sparse")};
      options.chunk_size_in_bytes = chunk_size;
      options.log = [](std::string_view) {};
      convert_file(file_, DataFormat::kCtf, cbf, options);
    }
    return cbf;
  }

  // The same reader over the corpus converted to CBF.
  Config cbf_reader(const std::string& extra, bool composite, size_t chunk_size) const {
    const std::string cbf = cbf_file(chunk_size);
    const std::string text =
        composite
            ? "R = [ reader = [ " + extra + "\n deserializers = ( [ type = CNTKBinaryFormatDeserializer\n " +
                  "file = \"" + cbf + "\" ] ) ] ]"
            : "R = [ reader = [ readerType = CNTKBinaryReader\n " + extra + "\n file = \"" + cbf + "\" ] ]";
    return Config::from_text(text).get_block("R").get_block("reader");
  }

  // A composite reader joining the corpus in CTF with the corpus in CBF by sequence key; the CBF streams are
  // renamed (cbf_x, cbf_y).
  Config joined_reader(const std::string& extra, size_t chunk_size) const {
    const std::string cbf = cbf_file(chunk_size);
    const std::string text =
        "R = [ reader = [ " + extra +
        "\n deserializers = ( [ type = CNTKTextFormatDeserializer\n chunkSizeInBytes = " +
        std::to_string(chunk_size) + "\n file = \"" + file_ +
        "\"\n input = [ x = [ dim = 2 ; format = dense ]\n y = [ dim = 7 ; format = sparse ] ] ]"
        " : [ type = CNTKBinaryFormatDeserializer\n file = \"" +
        cbf + "\"\n input = [ cbf_x = [ alias = x ] ; cbf_y = [ alias = y ] ] ] ) ] ]";
    return Config::from_text(text).get_block("R").get_block("reader");
  }

  size_t samples() const { return samples_; }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
  std::string file_;
  size_t samples_ = 0;
};

// One minibatch as text: its keys and the x values of every sample, in layout order.
std::string describe(const Minibatch& mb) {
  std::string out;
  for (const std::string& k : mb.keys) out += k + ",";
  const StreamBatch& x = mb.streams[0];
  out += "|";
  for (size_t c = 0; c < x.layout.num_columns(); ++c) {
    out += std::to_string(static_cast<int>(x.value_at(0, c))) + ":" +
           std::to_string(static_cast<int>(x.value_at(1, c))) + " ";
  }
  return out;
}

std::vector<std::string> keys_of(const Minibatch& mb) {
  std::vector<std::string> keys;
  for (const Layout::Entry& e : mb.streams[0].layout.entries) {
    if (!e.is_gap) keys.push_back(mb.keys[e.sequence_index]);
  }
  return keys;
}

}  // namespace

TEST(SourceCheckpoint, V1RestoreAtEveryMinibatchReproducesTheStream) {
  Corpus corpus(400);  // 400 sequences: not a multiple of 3, so worker shares shift from sweep to sweep
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationSeed = 7",
                                "randomize = true\n randomizationWindow = 3\n randomizationSeed = 0"}) {
    for (auto [rank, workers] : std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 3}, {2, 3}}) {
      Config reader = corpus.reader(randomize);
      const size_t epoch_size = corpus.samples() * 2 + 13;  // crosses a sweep boundary
      auto reference = MinibatchSource::from_config(reader);
      reference->start_epoch(37, 1, epoch_size, rank, workers);
      std::vector<std::string> expected;
      std::vector<ReaderState> states;
      Minibatch mb;
      while (reference->next_minibatch(mb)) {
        expected.push_back(describe(mb));
        states.push_back(ReaderState::from_json(reference->state().to_json()));
      }
      ASSERT_GT(expected.size(), 20u);
      for (size_t cut = 0; cut + 1 < expected.size(); cut += 3) {
        auto resumed = MinibatchSource::from_config(reader);
        resumed->start_epoch(37, 1, epoch_size, rank, workers);
        resumed->restore(states[cut]);
        for (size_t i = cut + 1; i < expected.size(); ++i) {
          ASSERT_TRUE(resumed->next_minibatch(mb)) << randomize << " cut " << cut;
          ASSERT_EQ(describe(mb), expected[i])
              << randomize << " rank " << rank << " cut " << cut << " mb " << i;
        }
        EXPECT_FALSE(resumed->next_minibatch(mb));
      }
    }
  }
}

TEST(SourceCheckpoint, V2RestoreReproducesTheStreamAcrossSweeps) {
  Corpus corpus(300);
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationSeed = 5"}) {
    Config reader = corpus.reader(randomize, /*composite=*/true);
    auto reference = MinibatchSource::from_config(reader);
    reference->set_v2_limits(kInfinitelyRepeat, 3);
    std::vector<std::string> expected;
    std::vector<std::string> states{reference->state().to_json()};
    Minibatch mb;
    while (reference->next_minibatch_v2(64, 1, 0, mb)) {
      expected.push_back(describe(mb));
      states.push_back(reference->state().to_json());
    }
    ASSERT_GT(expected.size(), 30u);
    for (size_t cut = 0; cut < expected.size(); cut += 4) {
      auto resumed = MinibatchSource::from_config(reader);
      resumed->set_v2_limits(kInfinitelyRepeat, 3);
      resumed->restore(ReaderState::from_json(states[cut]));
      for (size_t i = cut; i < expected.size(); ++i) {
        ASSERT_TRUE(resumed->next_minibatch_v2(64, 1, 0, mb));
        ASSERT_EQ(describe(mb), expected[i]) << randomize << " cut " << cut;
      }
      EXPECT_FALSE(resumed->next_minibatch_v2(64, 1, 0, mb));
    }
  }
}

// Truncated BPTT: the slots hold sequences pulled but not yet fully emitted; a restore pulls them again, so
// the stream continues exactly (CNTK drops them; docs/differences-from-cntk.md).
TEST(SourceCheckpoint, TruncatedBpttRestoreAtEveryMinibatchReproducesTheStream) {
  Corpus corpus(240, /*label_every_row=*/true);
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationSeed = 3",
                                "randomize = true\n randomizationWindow = 2\n randomizationSeed = 0"}) {
    for (const char* splice : {"", "rightSplice = 1"}) {
      for (auto [rank, workers] : std::vector<std::pair<size_t, size_t>>{{0, 1}, {1, 2}}) {
        Config reader =
            corpus.reader(std::string(randomize) + "\n truncated = true\n truncationLength = 4\n " + splice,
                          /*composite=*/true);
        const size_t epoch_size = corpus.samples() + 29;  // crosses a sweep boundary
        auto reference = MinibatchSource::from_config(reader);
        reference->start_epoch(16, 0, epoch_size, rank, workers);  // 4 slots of 4 samples
        std::vector<std::string> expected;
        std::vector<std::string> states;
        Minibatch mb;
        while (reference->next_minibatch(mb)) {
          expected.push_back(describe(mb));
          states.push_back(reference->state().to_json());
        }
        ASSERT_GT(expected.size(), 20u);
        ASSERT_NE(states[3].find("bpttSlots"), std::string::npos);
        for (size_t cut = 0; cut + 1 < expected.size(); cut += 2) {
          auto resumed = MinibatchSource::from_config(reader);
          resumed->start_epoch(16, 0, epoch_size, rank, workers);
          resumed->restore(ReaderState::from_json(states[cut]));
          for (size_t i = cut + 1; i < expected.size(); ++i) {
            ASSERT_TRUE(resumed->next_minibatch(mb)) << randomize << " " << splice << " cut " << cut;
            ASSERT_EQ(describe(mb), expected[i])
                << randomize << " " << splice << " rank " << rank << " cut " << cut << " mb " << i;
            // The resumed run's states are the uninterrupted run's, so a second checkpoint is exact too.
            ASSERT_EQ(resumed->state().to_json(), states[i]) << randomize << " cut " << cut << " mb " << i;
          }
          EXPECT_FALSE(resumed->next_minibatch(mb));
        }
      }
    }
  }
}

TEST(SourceCheckpoint, TruncatedBpttStateRoundTripsThroughJson) {
  ReaderState state;
  state.position = 120;
  ReaderState::BpttSlots slots;
  slots.position = 97;
  slots.sequence_counter = 31;
  slots.pulls = {{2, 1}, {0, 0}, {1, 2}};
  slots.cursors = {3, 0, 1};
  state.bptt = slots;
  EXPECT_EQ(ReaderState::from_json(state.to_json()), state);
  EXPECT_THROW(ReaderState::from_json(R"({"minibatchSourcePosition": 1, "bpttSlots": {"replayPosition": 0,
      "replaySequenceCounter": 0, "pulls": [[1]], "cursors": []}})"),
               UsageError);
}

TEST(SourceCheckpoint, TruncatedBpttStateFromAnotherMinibatchSizeRestoresThePositionAsCntkDoes) {
  Corpus corpus(60, /*label_every_row=*/true);
  Config reader =
      corpus.reader("randomize = false\n truncated = true\n truncationLength = 4", /*composite=*/true);
  auto reference = MinibatchSource::from_config(reader);
  reference->start_epoch(16, 0, kFullSweep);
  Minibatch mb;
  ASSERT_TRUE(reference->next_minibatch(mb));
  const ReaderState state = reference->state();
  auto resumed = MinibatchSource::from_config(reader);
  resumed->start_epoch(8, 0, kFullSweep);  // 2 slots instead of 4: the slots cannot be rebuilt
  resumed->restore(state);
  EXPECT_EQ(resumed->current_sample_position(), state.position);
  EXPECT_TRUE(resumed->next_minibatch(mb));
}

TEST(SourceCheckpoint, StateHasTheSameShapeBeforeAndAfterTheFirstMinibatch) {
  Corpus corpus(50);
  auto source = MinibatchSource::from_config(corpus.reader("randomize = true"));
  source->start_epoch(10, 0, kFullSweep);
  std::string before = source->state().to_json();
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  std::string after = source->state().to_json();
  EXPECT_EQ(before.find("\"minibatchSourcePosition\":0"), 1u);
  EXPECT_NE(after.find("\"minibatchSourcePosition\":"), std::string::npos);
  EXPECT_EQ(std::count(before.begin(), before.end(), ','), std::count(after.begin(), after.end(), ','));
  EXPECT_EQ(ReaderState::from_json("{\"minibatchSourcePosition\": 42}").position, 42u);
}

// Reads `minibatches` minibatches per worker with W workers, then continues from the merged states with
// W2 workers to the end of the sweep: every key must come exactly once.
// `idle_rank`, if below w1, reads nothing before the states are taken (its state is the initial one).
void check_elastic(const Corpus& corpus, const std::string& randomize, bool v2, size_t w1, size_t w2,
                   size_t minibatches, size_t idle_rank = SIZE_MAX) {
  Config reader = corpus.reader(randomize, /*composite=*/v2);
  std::multiset<std::string> seen;
  std::vector<ReaderState> states;
  for (size_t r = 0; r < w1; ++r) {
    auto source = MinibatchSource::from_config(reader);
    if (v2) {
      source->set_v2_limits(kFullDataSweep, kInfinitelyRepeat);
    } else {
      source->start_epoch(40, 0, kFullSweep, r, w1);
    }
    Minibatch mb;
    for (size_t i = 0; i < (r == idle_rank ? 0 : minibatches); ++i) {
      bool got = v2 ? source->next_minibatch_v2(40, w1, r, mb) : source->next_minibatch(mb);
      if (!got) break;
      for (const std::string& k : keys_of(mb)) seen.insert(k);
    }
    states.push_back(source->state());
  }
  ReaderState merged = ReaderState::from_json(merge_reader_states(states).to_json());
  for (size_t r = 0; r < w2; ++r) {
    auto source = MinibatchSource::from_config(reader);
    Minibatch mb;
    if (v2) {
      source->set_v2_limits(kFullDataSweep, kInfinitelyRepeat);
      source->restore(merged);
      while (source->next_minibatch_v2(40, w2, r, mb)) {
        for (const std::string& k : keys_of(mb)) seen.insert(k);
      }
    } else {
      source->start_epoch(40, 0, kFullSweep, r, w2);
      source->restore(merged);
      while (source->next_minibatch(mb)) {
        for (const std::string& k : keys_of(mb)) seen.insert(k);
      }
    }
  }
  std::set<std::string> unique(seen.begin(), seen.end());
  EXPECT_EQ(unique.size(), seen.size())
      << randomize << " v2=" << v2 << " " << w1 << "->" << w2 << " idle " << idle_rank;
  EXPECT_EQ(unique.size(), 300u) << randomize << " v2=" << v2 << " " << w1 << "->" << w2 << " idle "
                                 << idle_rank;
}

TEST(SourceElasticResume, ContinuesWithAnyWorkerCountWithoutLossOrRepeat) {
  Corpus corpus(300);
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationWindow = 2",
                                "randomize = true\n randomizationSeed = 3"}) {
    for (bool v2 : {false, true}) {
      for (auto [w1, w2] : std::vector<std::pair<size_t, size_t>>{{3, 2}, {2, 5}, {4, 1}, {1, 3}, {3, 3}}) {
        check_elastic(corpus, randomize, v2, w1, w2, 4);
      }
    }
  }
}

TEST(SourceElasticResume, AWorkerThatHasNotReadYetMergesAsNothingDelivered) {
  Corpus corpus(300);
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationWindow = 2"}) {
    for (bool v2 : {false, true}) {
      check_elastic(corpus, randomize, v2, 2, 3, 4, /*idle_rank=*/1);
      check_elastic(corpus, randomize, v2, 3, 2, 3, /*idle_rank=*/0);
    }
  }
  // Only initial states: a start from the beginning for that many workers.
  const ReaderState merged = merge_reader_states({ReaderState{}, ReaderState{}});
  EXPECT_EQ(merged.num_workers, 2u);
  EXPECT_EQ(merged.position, 0u);
  EXPECT_EQ(merged.worker_positions, (std::vector<uint64_t>{0, 0}));
}

TEST(SourceThreads, ResultsDoNotDependOnThreadsOrPrefetch) {
  Corpus corpus(500);
  for (const char* randomize : {"randomize = false", "randomize = true\n randomizationWindow = 4"}) {
    std::vector<std::string> reference;
    for (const char* threads :
         {"loaderThreads = 0\n prefetch = false", "loaderThreads = 1", "loaderThreads = 2",
          "loaderThreads = 4\n prefetch = true", "loaderThreads = 3\n prefetch = false"}) {
      auto source = MinibatchSource::from_config(corpus.reader(std::string(randomize) + "\n " + threads));
      std::vector<std::string> got;
      for (size_t epoch = 0; epoch < 3; ++epoch) {
        source->start_epoch(50, epoch, 700);
        Minibatch mb;
        while (source->next_minibatch(mb)) got.push_back(describe(mb));
      }
      if (reference.empty()) {
        reference = got;
        ASSERT_GT(reference.size(), 30u);
      } else {
        EXPECT_EQ(got, reference) << randomize << " / " << threads;
      }
    }
  }
}

// One chunk of about 1.5 MB: loaded while loader threads are idle, it is parsed by several threads at once
// (split at sequence boundaries), which must not change a single minibatch.
TEST(SourceThreads, ChunksParsedOnSeveralThreadsGiveTheSameMinibatches) {
  Corpus corpus(30000);
  for (bool composite : {false, true}) {
    for (const char* randomize : {"randomize = false", "randomize = true\n randomizationWindow = 2"}) {
      std::vector<std::string> reference;
      for (const char* threads : {"loaderThreads = 0\n prefetch = false", "loaderThreads = 2",
                                  "loaderThreads = 4", "loaderThreads = 3\n prefetch = false"}) {
        auto source = MinibatchSource::from_config(
            corpus.reader(std::string(randomize) + "\n " + threads, composite, 1000000000));
        std::vector<std::string> got;
        source->start_epoch(5000, 0, kFullSweep);
        Minibatch mb;
        while (source->next_minibatch(mb)) got.push_back(describe(mb));
        if (reference.empty()) {
          reference = got;
          ASSERT_GT(reference.size(), 20u);
        } else {
          EXPECT_EQ(got, reference) << randomize << " / " << threads << " / composite " << composite;
        }
      }
    }
  }
}

// A chunk is parsed only for positions that are read: not for the epoch start that a restore replaces before
// the first read, and not by sweep_size(). Each chunk holds one bad value, so skip_report().errors counts the
// chunks parsed.
TEST(SourceReadAhead, ARestoreBeforeTheFirstReadLoadsOnlyTheRestoredWindow) {
  const fs::path dir = fs::temp_directory_path() / ("cntkio_readahead_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "data.ctf").string();
  constexpr size_t kChunks = 16;
  {
    std::ofstream out(file);
    for (size_t c = 0; c < kChunks; ++c) {
      for (size_t i = 0; i < 4; ++i) {  // 10 bytes a row, 40 a chunk; the first sequence has a bad second row
        const size_t key = c * 4 + i;
        out << (key < 10 ? "0" : "") << key << " |x 10\n";
        if (i == 0) out << (key < 10 ? "0" : "") << key << " |x 1q\n";
      }
    }
  }
  const std::string text =
      "R = [ reader = [ readerType = CNTKTextFormatReader\n chunkSizeInBytes = 40\n "
      "randomize = true\n maxErrors = 1000\n traceLevel = 0\n loaderThreads = 2\n file = \"" +
      file + "\"\n input = [ x = [ dim = 1 ; format = dense ] ] ] ]";
  const Config reader = Config::from_text(text).get_block("R").get_block("reader");
  size_t errors_per_chunk = 0;
  {
    auto whole = MinibatchSource::from_config(reader);
    whole->set_v2_limits(kInfinitelyRepeat, 1);
    Minibatch mb;
    while (whole->next_minibatch_v2(4, 1, 0, mb)) {
    }
    errors_per_chunk = whole->skip_report().errors / kChunks;
    ASSERT_GT(errors_per_chunk, 0u);
    ASSERT_EQ(whole->skip_report().errors, errors_per_chunk * kChunks);
  }
  for (bool via_sweep_size : {false, true}) {
    SCOPED_TRACE(via_sweep_size ? "sweep_size() first" : "restore only");
    auto source = MinibatchSource::from_config(reader);
    size_t sweep = kChunks * 5;  // scheduling samples: the indexed rows
    if (via_sweep_size) {
      EXPECT_EQ(source->sweep_size(), sweep);
      EXPECT_EQ(source->skip_report().errors, 0u);
    }
    source->set_v2_limits(kInfinitelyRepeat, 2);
    source->restore(ReaderState::from_json(R"({"minibatchSourcePosition": )" + std::to_string(sweep) +
                                           R"(, "sequenceCounter": 0})"));
    Minibatch mb;
    size_t samples = 0;
    while (source->next_minibatch_v2(4, 2, 0, mb)) samples += mb.streams[0].layout.num_samples();
    EXPECT_GT(samples, 0u);
    // The chunks partition 0 owns in sweep 1, each parsed once.
    EXPECT_EQ(source->skip_report().errors, errors_per_chunk * kChunks / 2);
  }
  fs::remove_all(dir);
}

// Random combinations of the reader's settings (a fixed seed: the same combinations every run;
// CNTKIO_RANDOM_ROUNDS=n in the environment runs more), each checked for what must hold whatever the
// settings: the same minibatches for any loader thread count and prefetch; a restore from any recorded state
// continuing with exactly the minibatches that followed it; and, in a v1 epoch of one sweep, every sequence
// (in frame mode every sample) exactly once across the workers.
TEST(SourceThreads, RandomReaderConfigurationsKeepTheirInvariants) {
  const Corpus sequences(260);
  const Corpus frames(700, false, 1);
  const Corpus labelled(220, true);
  std::mt19937_64 rng(2026);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (size_t round = 0; round < settings_test::rounds(40); ++round) {
    const size_t packing = pick(3);  // 0 sequences, 1 frames, 2 truncated BPTT
    const Corpus& corpus = packing == 1 ? frames : packing == 2 ? labelled : sequences;
    std::string settings;
    if (pick(4) == 0) {
      settings += "randomize = false\n ";
    } else {
      settings += "randomize = true\n randomizationSeed = " + std::to_string(pick(5)) + "\n ";
      switch (pick(3)) {
        case 0:
          break;  // the default window: the whole corpus
        case 1:
          settings += "randomizationWindow = " + std::to_string(1 + pick(4)) +
                      "\n sampleBasedRandomizationWindow = false\n ";
          break;
        default:
          settings += "randomizationWindow = " + std::to_string(20 + pick(400)) + "\n ";
          break;
      }
    }
    if (packing == 1) settings += "frameMode = true\n ";
    if (packing == 2)
      settings += "truncated = true\n truncationLength = " + std::to_string(1 + pick(5)) + "\n ";
    if (pick(3) == 0) settings += "chunkCacheBytes = 1MiB\n ";
    const bool composite = pick(2) == 0;
    const size_t chunk_size = 200 + pick(2000);
    const size_t minibatch = 1 + pick(packing == 2 ? 24 : 90);
    const size_t workers = packing == 2 ? 1 : 1 + pick(4);
    // 0: a v1 epoch of one sweep; 1: a v1 epoch of another size and index; 2: v2 reading over two sweeps
    const size_t reading = pick(3);
    const size_t epoch_index = reading == 1 ? pick(3) : 0;
    const size_t epoch_size = reading == 1 ? 1 + pick(2 * corpus.samples()) : kFullSweep;
    // 0, 1: CTF; 2: the corpus converted to CBF; 3: the CTF corpus joined with the CBF one
    const size_t format = pick(4);
    const std::string threads = std::vector<std::string>{"loaderThreads = 1", "loaderThreads = 2",
                                                         "loaderThreads = 3\n prefetch = false"}[pick(3)];
    SCOPED_TRACE(settings + threads + (composite ? " composite" : "") +
                 (format == 3   ? " CTF+CBF"
                  : format == 2 ? " CBF"
                                : " CTF") +
                 " chunk " + std::to_string(chunk_size) + " mb " + std::to_string(minibatch) + " workers " +
                 std::to_string(workers) + " reading " + std::to_string(reading) + " epoch " +
                 std::to_string(epoch_index) + "/" + std::to_string(epoch_size));
    auto reader = [&](const std::string& extra) {
      if (format == 3) return corpus.joined_reader(extra, chunk_size);
      return format == 2 ? corpus.cbf_reader(extra, composite, chunk_size)
                         : corpus.reader(extra, composite, chunk_size);
    };
    settings_test::WorkerReading reading_of;
    reading_of.make = [&](const std::string& loaders) {
      auto source = MinibatchSource::from_config(reader(settings + loaders));
      if (reading == 2) source->set_v2_limits(kInfinitelyRepeat, 2);
      return source;
    };
    reading_of.start = [&](MinibatchSource& source, size_t rank) {
      if (reading != 2) source.start_epoch(minibatch, epoch_index, epoch_size, rank, workers);
    };
    reading_of.next = [&](MinibatchSource& source, size_t rank, Minibatch& mb) {
      return reading == 2 ? source.next_minibatch_v2(minibatch, workers, rank, mb)
                          : source.next_minibatch(mb);
    };
    reading_of.render = describe;

    std::multiset<std::string> seen;
    size_t samples = 0;
    for (size_t rank = 0; rank < workers; ++rank) {
      settings_test::check_worker(
          reading_of, rank, "loaderThreads = 0\n prefetch = false", threads, rng, [&](const Minibatch& mb) {
            if (format == 3) {  // the join: each sequence's CBF values are its CTF ones
              for (const StreamBatch& other : mb.streams) {
                if (other.info.name == "cbf_x") {
                  EXPECT_EQ(other.values, mb.streams[0].values) << "a wrong join";
                }
              }
            }
            samples += mb.streams[0].layout.num_samples();
            if (packing != 2) {
              for (const std::string& k : keys_of(mb)) seen.insert(k);
            }
          });
    }
    if (reading == 0) {
      EXPECT_EQ(samples, corpus.samples());
      if (packing != 2) {
        EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()).size(), seen.size()) << "read twice";
        EXPECT_EQ(seen.size(), packing == 0 ? 260u : 700u);
      }
    } else if (reading == 2) {
      EXPECT_EQ(samples, 2 * corpus.samples());
    }
  }
}

TEST(SourceErrors, BadArgumentsAreUsageErrors) {
  Corpus corpus(10);
  auto source = MinibatchSource::from_config(corpus.reader("randomize = false"));
  EXPECT_THROW(source->start_epoch(0, 0, kFullSweep), UsageError);
  EXPECT_THROW(source->start_epoch(10, 0, 0), UsageError);
  EXPECT_THROW(source->start_epoch(10, 0, kFullSweep, 2, 2), UsageError);
  EXPECT_THROW(source->set_v2_limits(10, 2), UsageError);
  EXPECT_THROW(ReaderState::from_json("{\"position\": 1}"), UsageError);
  // Counts are whole numbers within 64 bits: -1, 5.5 and 2^64 would have wrapped or been cut.
  for (const char* bad : {"{\"minibatchSourcePosition\": -1}", "{\"minibatchSourcePosition\": 5.5}",
                          "{\"minibatchSourcePosition\": 18446744073709551616}",
                          "{\"minibatchSourcePosition\": 3, \"numWorkers\": -2}"}) {
    EXPECT_THROW(ReaderState::from_json(bad), UsageError) << bad;
  }
  EXPECT_EQ(ReaderState::from_json("{\"minibatchSourcePosition\": 18446744073709551615}").position,
            18446744073709551615u);
  EXPECT_THROW(merge_reader_states({}), UsageError);
}
