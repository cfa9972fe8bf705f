// HTK features joined with MLF labels through the whole reader: frame, sequence and truncated-BPTT modes,
// context windows, randomized sweeps, workers, the flat legacy config (spec htk.md §2, §6, §10).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "cntkio/errors.hpp"
#include "htk_corpus.hpp"
#include "pipeline/dump.hpp"
#include "pipeline/settings_invariants.hpp"

using namespace cntkio;
using htk_test::Corpus;
using htk_test::Delivered;
using htk_test::TempDir;

namespace {

// (utterance number, frame index) of a delivered feature sample (values 0 and 1 of the centre frame).
std::pair<int, int> frame_id(const std::vector<double>& sample, size_t centre_offset = 0) {
  // Compressed files decode the frame index only approximately (e.g. 0.999924): round.
  return {static_cast<int>(std::lround(sample[centre_offset])),
          static_cast<int>(std::lround(sample[centre_offset + 1]))};
}

// Checks that `d` (one frame-mode sequence) carries the right values and label; returns its frame id.
std::pair<int, int> check_frame(const Corpus& corpus, const Delivered& d) {
  EXPECT_EQ(d.features.size(), 1u);
  const auto [number, t] = frame_id(d.features.at(0));
  const htk_test::Utterance& u = corpus.utterances.at(static_cast<size_t>(number - 1));
  EXPECT_EQ(d.key, u.key);
  for (size_t k = 0; k < corpus.dim; ++k) {
    EXPECT_EQ(d.features[0][k], static_cast<double>(u.values[static_cast<size_t>(t) * corpus.dim + k]))
        << u.key << " " << t;
  }
  EXPECT_EQ(d.classes, std::vector<int>{static_cast<int>(u.classes.at(static_cast<size_t>(t)))})
      << u.key << " " << t;
  return {number, t};
}

std::vector<std::pair<int, int>> all_frames(const Corpus& corpus) {
  std::vector<std::pair<int, int>> out;
  for (size_t u = 0; u < corpus.utterances.size(); ++u) {
    for (uint32_t t = 0; t < corpus.utterances[u].frames; ++t)
      out.emplace_back(static_cast<int>(u + 1), static_cast<int>(t));
  }
  return out;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.cntk_text();
  }
  return "(no error)";
}

}  // namespace

TEST(HtkReader, FrameModeInFileOrderJoinsEveryLabelledFrameWithItsLabel) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  auto source =
      htk_test::open_reader(htk_test::composite_reader(corpus, "randomize = false\nframeMode = true"));
  ASSERT_EQ(source->streams().size(), 2u);
  EXPECT_EQ(source->streams()[1].storage, StorageFormat::kSparseCsc);
  const std::vector<Delivered> got = htk_test::read_epoch(*source, 64, 0, kFullSweep);
  std::vector<std::pair<int, int>> ids;
  for (const Delivered& d : got) ids.push_back(check_frame(corpus, d));
  // The orphan SCP entry (no labels) is dropped; the MLF's ghost entry (no features) is ignored.
  EXPECT_EQ(ids, all_frames(corpus));
}

TEST(HtkReader, FrameModeRandomizedSweepsArePermutationsWithFreshOrders) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  const std::string text = htk_test::composite_reader(corpus, "randomize = true\nframeMode = true");
  auto source = htk_test::open_reader(text);
  auto again = htk_test::open_reader(text);
  std::vector<std::vector<std::pair<int, int>>> sweeps;
  for (size_t epoch = 0; epoch < 3; ++epoch) {
    std::vector<std::pair<int, int>> ids;
    for (const Delivered& d : htk_test::read_epoch(*source, 100, epoch, kFullSweep))
      ids.push_back(check_frame(corpus, d));
    std::vector<std::pair<int, int>> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, all_frames(corpus)) << "sweep " << epoch;
    EXPECT_NE(ids, all_frames(corpus));
    sweeps.push_back(ids);
  }
  EXPECT_NE(sweeps[0], sweeps[1]);
  EXPECT_NE(sweeps[1], sweeps[2]);
  // Reproducible: a second reader, different minibatch size, epoch 2 read alone.
  std::vector<std::pair<int, int>> ids;
  for (const Delivered& d : htk_test::read_epoch(*again, 7, 2, kFullSweep))
    ids.push_back(frame_id(d.features[0]));
  EXPECT_EQ(ids, sweeps[2]);
}

TEST(HtkReader, SequenceModeDeliversWholeUtterancesWithTheirLabels) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  for (const char* randomize : {"false", "true"}) {
    auto source = htk_test::open_reader(
        htk_test::composite_reader(corpus, std::string("randomize = ") + randomize + "\nframeMode = false"));
    std::vector<std::string> keys;
    for (const Delivered& d : htk_test::read_epoch(*source, 150, 0, kFullSweep)) {
      const htk_test::Utterance& u = corpus.utterances.at(corpus.by_key.at(d.key));
      ASSERT_EQ(d.features.size(), u.frames) << d.key;
      for (uint32_t t = 0; t < u.frames; ++t) {
        for (size_t k = 0; k < corpus.dim; ++k)
          ASSERT_EQ(d.features[t][k], u.values[t * corpus.dim + k]) << d.key;
        ASSERT_EQ(d.classes.at(t), static_cast<int>(u.classes[t])) << d.key << " " << t;
        ASSERT_EQ(d.label_values.at(t), 1.0);
      }
      keys.push_back(d.key);
    }
    std::vector<std::string> expected;
    for (const htk_test::Utterance& u : corpus.utterances) expected.push_back(u.key);
    if (std::string(randomize) == "true") {
      EXPECT_NE(keys, expected);
      std::sort(keys.begin(), keys.end());
      std::sort(expected.begin(), expected.end());
    }
    EXPECT_EQ(keys, expected);
  }
}

TEST(HtkReader, TruncatedBpttEmitsEveryUtteranceInOrderWithinItsSlot) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  auto source = htk_test::open_reader(htk_test::composite_reader(
      corpus, "randomize = false\nframeMode = false\ntruncated = true\ntruncationLength = 7"));
  source->start_epoch(28, 0, kFullSweep);  // 28 / 7 = 4 parallel slots
  std::vector<std::vector<std::pair<int, int>>> rows(4);
  Minibatch mb;
  while (source->next_minibatch(mb)) {
    const StreamBatch& f = mb.streams[0];
    const StreamBatch& l = mb.streams[1];
    ASSERT_EQ(f.layout.num_parallel, 4u);
    ASSERT_EQ(f.layout.num_time_steps, 7u);
    for (size_t col = 0; col < f.layout.num_columns(); ++col) {
      const size_t s = col % 4, t = col / 4;
      if (f.layout.is_gap(s, t)) continue;
      const std::pair<int, int> id{static_cast<int>(std::lround(f.value_at(0, col))),
                                   static_cast<int>(std::lround(f.value_at(1, col)))};
      const htk_test::Utterance& u = corpus.utterances.at(static_cast<size_t>(id.first - 1));
      ASSERT_EQ(l.value_at(u.classes.at(static_cast<size_t>(id.second)), col),
                1.0);  // BPTT writes labels dense
      rows[s].push_back(id);
    }
  }
  std::vector<std::pair<int, int>> all;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      // Inside a slot, an utterance's frames follow each other; a new one starts at frame 0.
      if (i > 0 && row[i].first == row[i - 1].first) {
        ASSERT_EQ(row[i].second, row[i - 1].second + 1);
      } else {
        ASSERT_EQ(row[i].second, 0);
      }
    }
    all.insert(all.end(), row.begin(), row.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, all_frames(corpus));
}

TEST(HtkReader, ContextWindowsOf1_5_11RepeatUtteranceEdgeFrames) {
  TempDir dir;
  htk_test::CorpusSpec spec;
  spec.utterances = 8;
  spec.min_frames = 2;
  spec.max_frames = 14;
  const Corpus corpus = htk_test::make_corpus(dir, spec);
  for (int window : {1, 5, 11}) {
    auto source = htk_test::open_reader(htk_test::composite_reader(
        corpus, "randomize = true\nframeMode = true", "contextWindow = " + std::to_string(window) + "\n"));
    ASSERT_EQ(source->streams()[0].sample_dim(), corpus.dim * static_cast<size_t>(window));
    size_t count = 0;
    for (const Delivered& d : htk_test::read_epoch(*source, 16, 0, kFullSweep)) {
      const int half = window / 2;
      const auto [number, t] = frame_id(d.features[0], static_cast<size_t>(half) * corpus.dim);
      const htk_test::Utterance& u = corpus.utterances.at(static_cast<size_t>(number - 1));
      for (int j = -half; j <= half; ++j) {
        const int source_frame = std::clamp(t + j, 0, static_cast<int>(u.frames) - 1);
        for (size_t k = 0; k < corpus.dim; ++k) {
          ASSERT_EQ(d.features[0][static_cast<size_t>(j + half) * corpus.dim + k],
                    u.values[static_cast<size_t>(source_frame) * corpus.dim + k])
              << "window " << window << " " << u.key << " frame " << t << " block " << j;
        }
      }
      ++count;
    }
    EXPECT_EQ(count, corpus.total_frames());
  }
}

TEST(HtkReader, ContextWindowDefaultMeansNoneAndBadWindowsOrDimsAreConfigErrors) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  auto source = htk_test::open_reader(
      htk_test::composite_reader(corpus, "randomize = false\nframeMode = true", "contextWindow = default\n"));
  EXPECT_EQ(source->streams()[0].sample_dim(), corpus.dim);
  // CNTK reads "-1" as a huge unsigned count and then reads or allocates out of bounds; cntkio refuses
  // negative windows, dims of 0 or 2^31 and more, and windows whose samples would be that large.
  const std::string dim_line = "dim = " + std::to_string(corpus.dim);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"contextWindow = 0:-1\n", "contextWindow values must not be negative, found 0:-1."},
      {"contextWindow = -1:-1\n", "contextWindow values must not be negative, found -1:-1."},
      {"contextWindow = 1:1073741823\n", "makes samples of more than 2147483647 values"},
      // CNTK's own checks, with its texts: configuration errors too (the CLI's exit status 3).
      {"contextWindow = 2\n", "Neighbor expansion of input features to 2 is not symmetrical."},
      {"contextWindow = 1:1:1\n", "contextWindow must have 1 or 2 values specified, found 3."},
  };
  for (const auto& [settings, text] : bad) {
    try {
      htk_test::open_reader(htk_test::composite_reader(corpus, "frameMode = true", settings));
      ADD_FAILURE() << settings << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
      EXPECT_NE(e.key_path().find("contextWindow"), std::string::npos) << e.key_path();
      EXPECT_GT(e.line(), 0u) << settings;
    }
  }
  for (const char* dim : {"dim = -1", "dim = 0", "dim = 2147483648"}) {
    std::string text = htk_test::composite_reader(corpus, "frameMode = true");
    text.replace(text.find(dim_line), dim_line.size(), dim);
    try {
      htk_test::open_reader(text);
      ADD_FAILURE() << dim << ": no error";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("'dim' must be between 1 and 2147483647"), std::string::npos)
          << e.what();
    }
  }
}

TEST(HtkReader, WorkersTogetherReadEveryFrameExactlyOnce) {
  TempDir dir;
  htk_test::CorpusSpec
      spec;  // ~100,000 frames: 2 I/O chunks, so block randomization deals one to each worker
  spec.utterances = 60;
  spec.dim = 2;
  spec.min_frames = 1550;
  spec.max_frames = 1800;
  const Corpus corpus = htk_test::make_corpus(dir, spec);
  ASSERT_GT(corpus.total_frames(), 90001u);
  for (const char* mode : {"frameMode = true", "frameMode = false"}) {
    for (const char* randomize : {"randomize = false", "randomize = true"}) {
      std::map<std::pair<int, int>, int> seen;
      std::vector<size_t> per_worker;
      for (size_t rank = 0; rank < 2; ++rank) {
        auto source =
            htk_test::open_reader(htk_test::composite_reader(corpus, std::string(randomize) + "\n" + mode));
        size_t frames = 0;
        for (const Delivered& d : htk_test::read_epoch(*source, 3000, 0, kFullSweep, rank, 2)) {
          for (const std::vector<double>& sample : d.features) {
            ++seen[frame_id(sample)];
            ++frames;
          }
        }
        per_worker.push_back(frames);
      }
      EXPECT_EQ(seen.size(), corpus.total_frames()) << mode << " " << randomize;
      for (const auto& [id, n] : seen) ASSERT_EQ(n, 1) << mode << " " << randomize;
      for (size_t frames : per_worker) EXPECT_GT(frames, 0u) << mode << " " << randomize;
    }
  }
}

TEST(HtkReader, FeatureFramesBeyondTheLabelsAreAnErrorOrCountedSkips) {
  TempDir dir;
  const std::vector<float> frames = {0, 1, 2, 3, 4, 10, 11, 12};
  write_htk_file(dir.file("f.htk"), frames.data(), 8, 1);
  const std::string scp =
      dir.write("f.scp", "a.x=" + dir.file("f.htk") + "[0,4]\nb.x=" + dir.file("f.htk") + "[5,7]\n");
  const std::string states = dir.write("s.list", "x\ny\n");
  // CNTK would give a's frames 3 and 4 the labels of b (and read out of bounds at the chunk's end).
  const std::string mlf = dir.write("m.mlf", "#!MLF!#\n\"a.lab\"\n0 3 x\n.\n\"b.lab\"\n0 3 y\n.\n");
  auto reader = [&](const std::string& extra) {
    return "reader = [ randomize = false\nframeMode = true\n" + extra +
           "\ndeserializers = ([ type = \"HTKFeatureDeserializer\" input = [ f = [ dim = 1 ; scpFile = \"" +
           scp + "\" ] ] ]:[ type = \"HTKMLFDeserializer\" input = [ l = [ mlfFile = \"" + mlf +
           "\" ; labelMappingFile = \"" + states + "\" ; labelDim = 2 ] ] ]) ]";
  };
  auto strict = htk_test::open_reader(reader(""));
  try {
    htk_test::read_epoch(*strict, 4, 0, kFullSweep);
    FAIL() << "frames beyond the labels must not be read silently";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text().rfind("Utterance 'a' has 5 feature frames but only 3 label frames", 0), 0u)
        << e.what();
    EXPECT_EQ(e.location().file, mlf);
    EXPECT_EQ(e.location().line, 2u);
  }
  auto tolerant = htk_test::open_reader(reader("maxErrors = 2"));
  std::vector<double> got;
  for (const Delivered& d : htk_test::read_epoch(*tolerant, 4, 0, kFullSweep))
    got.push_back(d.features[0][0]);
  EXPECT_EQ(got, (std::vector<double>{0, 1, 2, 10, 11, 12}));
  auto too_many = htk_test::open_reader(reader("maxErrors = 1"));
  EXPECT_EQ(message_of([&] { htk_test::read_epoch(*too_many, 8, 0, kFullSweep); }),
            "Number of invalid sequences '2' in the input exceeded the specified maximum number '1'");
}

TEST(HtkReader, ExpandToUtteranceBroadcastsAPerUtteranceVector) {
  TempDir dir;
  const std::vector<float> frames = {0, 1, 2, 10, 11};
  write_htk_file(dir.file("f.htk"), frames.data(), 5, 1);
  const std::vector<float> ivectors = {7, 70, 8, 80};
  write_htk_file(dir.file("i.htk"), ivectors.data(), 2, 2);
  const std::string scp =
      dir.write("f.scp", "a.x=" + dir.file("f.htk") + "[0,2]\nb.x=" + dir.file("f.htk") + "[3,4]\n");
  const std::string iscp =
      dir.write("i.scp", "b.x=" + dir.file("i.htk") + "[1,1]\na.x=" + dir.file("i.htk") + "[0,0]\n");
  for (bool frame_mode : {false, true}) {
    auto source = htk_test::open_reader(
        "reader = [ randomize = false\nframeMode = " + std::string(frame_mode ? "true" : "false") +
        "\ndeserializers = ([ type = \"HTKFeatureDeserializer\" input = [ f = [ dim = 1 ; scpFile = \"" +
        scp + "\" ] ] ]:[ type = \"HTKFeatureDeserializer\" input = [ iv = [ dim = 2 ; scpFile = \"" + iscp +
        "\" ; expandToUtterance = true ] ] ]) ]");
    source->start_epoch(10, 0, kFullSweep);
    Minibatch mb;
    std::vector<std::pair<double, std::pair<double, double>>> got;
    while (source->next_minibatch(mb)) {
      const StreamBatch& f = mb.streams[0];
      const StreamBatch& iv = mb.streams[1];
      ASSERT_EQ(iv.layout, f.layout);  // broadcast to the primary's length
      for (size_t col = 0; col < f.layout.num_columns(); ++col) {
        if (f.layout.is_gap(col % f.layout.num_parallel, col / f.layout.num_parallel)) continue;
        got.push_back({f.value_at(0, col), {iv.value_at(0, col), iv.value_at(1, col)}});
      }
    }
    std::sort(got.begin(), got.end());
    const std::vector<std::pair<double, std::pair<double, double>>> expected = {
        {0, {7, 70}}, {1, {7, 70}}, {2, {7, 70}}, {10, {8, 80}}, {11, {8, 80}}};
    EXPECT_EQ(got, expected) << (frame_mode ? "frame mode" : "sequence mode");
  }
}

TEST(HtkReader, ShorterSecondaryFeaturesFailInFrameMode) {
  TempDir dir;
  const std::vector<float> frames = {0, 1, 2, 10, 11};
  write_htk_file(dir.file("f.htk"), frames.data(), 5, 1);
  const std::string scp = dir.write("f.scp", "a.x=" + dir.file("f.htk") + "[0,2]\n");
  const std::string short_scp = dir.write("s.scp", "a.x=" + dir.file("f.htk") + "[3,4]\n");
  EXPECT_EQ(
      message_of([&] {
        htk_test::open_reader(
            "reader = [ frameMode = true\ndeserializers = ([ type = \"HTKFeatureDeserializer\" "
            "input = [ f = [ dim = 1 ; scpFile = \"" +
            scp + "\" ] ] ]:[ type = \"HTKFeatureDeserializer\" input = [ g = [ dim = 1 ; scpFile = \"" +
            short_scp + "\" ] ] ]) ]");
      }),
      "Sequence with key 'a' has '2' frame(s), whereas the primary sequence expects at least '3' frames");
}

TEST(HtkReader, KeyModesAndUnmatchedKeys) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  auto hashed = htk_test::open_reader(
      htk_test::composite_reader(corpus, "randomize = false\nframeMode = false\nhashSequenceKeys = true"));
  const std::vector<Delivered> got = htk_test::read_epoch(*hashed, 1000, 0, kFullSweep);
  ASSERT_EQ(got.size(), corpus.utterances.size());
  EXPECT_EQ(got[3].key, corpus.utterances[3].key);
  EXPECT_EQ(message_of([&] {
              htk_test::open_reader(
                  htk_test::composite_reader(corpus, "frameMode = false\nuseNumericSequenceKeys = true"));
            }),
            "Invalid numeric sequence id 'u01'");
  TempDir other;
  const std::string mlf = other.write("m.mlf", "#!MLF!#\n\"nobody.lab\"\n0 3 x\n.\n");
  Corpus mismatched = corpus;
  mismatched.mlf = mlf;
  mismatched.states = other.write("s.list", "x\n");
  mismatched.num_states = 1;
  EXPECT_EQ(
      message_of([&] { htk_test::open_reader(htk_test::composite_reader(mismatched, "frameMode = false")); }),
      "Could not reconcile data between different deserializers. Keys of logical sequences do not match.");
}

TEST(HtkReader, MlfCannotBePrimary) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  EXPECT_THROW(htk_test::open_reader(
                   "reader = [ deserializers = ([ type = \"HTKMLFDeserializer\" input = [ l = [ "
                   "mlfFile = \"" +
                   corpus.mlf + "\" ; labelMappingFile = \"" + corpus.states + "\" ; labelDim = 12 ] ] ]) ]"),
               ConfigError);
}

// A flat HTK reader with truncated = true and no truncationLength is CNTK's older truncated BPTT: windows of
// the minibatch size M, nbruttsineachrecurrentiter (default 1; one value per epoch, the last repeating)
// parallel utterances. So it reads exactly as the same reader with truncationLength = M at minibatch size
// nbrutts x M (CNTK's HTKMLFReader::StartEpoch; spec config.md §6.2 for the key and its default).
TEST(HtkReader, FlatTruncatedWithoutTruncationLengthIsTheMinibatchSizeTimesNbrutts) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  const std::string records = "features = [ dim = 13 ; scpFile = \"" + corpus.scp +
                              "\" ]\nlabels = [ mlfFile = \"" + corpus.mlf + "\" ; labelMappingFile = \"" +
                              corpus.states + "\" ; labelDim = 12 ]\ntraceLevel = 0\n";
  auto flat = [&](const std::string& settings) {
    return htk_test::open_reader(
        "reader = [ readerType = \"HTKDeserializers\"\nframeMode = false\n"
        "truncated = true\n" +
        settings + "\n" + records + "]");
  };
  // Every minibatch of one epoch: layout shape, keys and the bytes of both streams.
  auto epoch_of = [](MinibatchSource& source, size_t mb_size, size_t epoch, std::vector<size_t>& rows) {
    std::vector<std::string> out;
    source.start_epoch(mb_size, epoch, 300);
    Minibatch mb;
    while (source.next_minibatch(mb)) {
      rows.push_back(mb.streams[0].layout.num_parallel);
      std::string text = std::to_string(mb.streams[0].layout.num_parallel) + "x" +
                         std::to_string(mb.streams[0].layout.num_time_steps);
      for (const std::string& key : mb.keys) text += " " + key;
      for (const StreamBatch& s : mb.streams) {
        EXPECT_TRUE(s.layout == mb.streams[0].layout);
        text += " | " + std::string(s.values.begin(), s.values.end());
      }
      out.push_back(text);
    }
    return out;
  };
  struct Case {
    std::string nbrutts;           // "" = not given
    std::vector<size_t> parallel;  // per epoch 0, 1, 2
  };
  for (const Case& c : {Case{"", {1, 1, 1}}, Case{"nbruttsineachrecurrentiter = 3", {3, 3, 3}},
                        Case{"nbruttsineachrecurrentiter = 2:4", {2, 4, 4}}}) {
    SCOPED_TRACE(c.nbrutts);
    auto older = flat(c.nbrutts);
    auto explicit_length = flat(c.nbrutts + "\ntruncationLength = 10");
    for (size_t epoch = 0; epoch < 3; ++epoch) {
      std::vector<size_t> rows, explicit_rows;
      const std::vector<std::string> a = epoch_of(*older, 10, epoch, rows);
      const std::vector<std::string> b =
          epoch_of(*explicit_length, 10 * c.parallel[epoch], epoch, explicit_rows);
      ASSERT_FALSE(a.empty());
      EXPECT_EQ(a, b) << "epoch " << epoch;
      EXPECT_EQ(rows, std::vector<size_t>(a.size(), c.parallel[epoch])) << "epoch " << epoch;
    }
  }
  EXPECT_THROW(flat("nbruttsineachrecurrentiter = 0"), ConfigError);
  EXPECT_THROW(flat("nbruttsineachrecurrentiter = 2:-1"), ConfigError);
}

// The same rule against CNTK's own output: HTKGen_legacy_bptt's control was written by CNTK's reader with
// truncationLength = 8 at minibatch size 32 (4 slots); without truncationLength, minibatch size 8 and
// nbruttsineachrecurrentiter = 4 must write it token for token.
TEST(HtkReader, FlatTruncatedWithoutTruncationLengthWritesCntksControl) {
  const std::filesystem::path root = CNTKIO_CONFORMANCE_DIR;
  if (!std::filesystem::exists(root / "control/HTKGenerated/HTKGen_legacy_bptt.txt")) {
    GTEST_SKIP() << "no conformance corpus at " << root;
  }
  pipeline::DumpOptions options;
  options.config_file = (root / "config/HTKGenerated/legacy.cntk").string();
  options.section = "LegacyBptt";
  options.overrides = {"LegacyBptt=[reader=[truncationLength=0;nbruttsineachrecurrentiter=4;traceLevel=0]]"};
  options.epoch_size = 200;
  options.minibatch_size = 8;
  options.epochs = 2;
  options.features = {"features"};
  options.labels = {"labels"};
  std::ostringstream written;
  const std::filesystem::path saved = std::filesystem::current_path();
  std::filesystem::current_path(root / "data/HTKGenerated");
  try {
    pipeline::run_dump(options, written);
  } catch (...) {
    std::filesystem::current_path(saved);
    throw;
  }
  std::filesystem::current_path(saved);
  auto tokens = [](std::istream& in) {
    std::vector<std::string> out;
    for (std::string token; in >> token;) out.push_back(token);
    return out;
  };
  std::ifstream control(root / "control/HTKGenerated/HTKGen_legacy_bptt.txt");
  std::istringstream ours(written.str());
  const std::vector<std::string> expected = tokens(control);
  ASSERT_FALSE(expected.empty());
  EXPECT_TRUE(tokens(ours) == expected);
}

TEST(HtkReader, FlatLegacyConfigReadsLikeTheCompositeOne) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  const std::string records = "features = [ dim = 39 ; type = \"real\" ; scpFile = \"" + corpus.scp +
                              "\" ]\nlabels = [ mlfFile = \"" + corpus.mlf + "\" ; labelMappingFile = \"" +
                              corpus.states + "\" ; labelDim = 12 ; labelType = \"category\" ]\n";
  auto legacy = htk_test::open_reader("reader = [ readerType = \"HTKDeserializers\"\nrandomize = \"auto\"\n" +
                                      records + "]");
  auto composite39 = htk_test::open_reader(
      "reader = [ frameMode = true\ndeserializers = ([ type = \"HTKFeatureDeserializer\" input = [ features "
      "= [ dim = 39 ; "
      "scpFile = \"" +
      corpus.scp + "\" ] ] ]:[ type = \"HTKMLFDeserializer\" input = [ labels = [ mlfFile = \"" + corpus.mlf +
      "\" ; labelMappingFile = \"" + corpus.states + "\" ; labelDim = 12 ] ] ]) ]");
  const std::vector<Delivered> a = htk_test::read_epoch(*legacy, 50, 0, 400);
  const std::vector<Delivered> b = htk_test::read_epoch(*composite39, 50, 0, 400);
  ASSERT_EQ(a.size(), 400u);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].features, b[i].features) << i;
    ASSERT_EQ(a[i].classes, b[i].classes) << i;
  }
  // The flat form's own checks.
  EXPECT_EQ(
      message_of([&] {
        htk_test::open_reader("reader = [ readerType = \"HTKMLFReader\"\ntruncated = true\n" + records + "]");
      }),
      "'Truncated' cannot be 'true' in frameMode (i.e. when 'frameMode' is 'true')");
  EXPECT_EQ(message_of([&] {
              htk_test::open_reader("reader = [ readerType = \"HTKDeserializers\"\n" + records +
                                    "features = [ type = \"dense\" ] ]");
            }),
            "Feature type must be of type 'real'.");
  EXPECT_EQ(message_of([&] {
              htk_test::open_reader("reader = [ readerType = \"HTKDeserializers\"\n" + records +
                                    "labels = [ labelType = \"regression\" ] ]");
            }),
            "Label type must be of type 'category'.");
  // readMethod = none reads in file order.
  auto none = htk_test::open_reader(
      "reader = [ readerType = \"HTKDeserializers\"\nreadMethod = \"none\"\nframeMode = false\n" + records +
      "]");
  const std::vector<Delivered> in_order = htk_test::read_epoch(*none, 100000, 0, kFullSweep);
  ASSERT_EQ(in_order.size(), corpus.utterances.size());
  for (size_t i = 0; i < in_order.size(); ++i) EXPECT_EQ(in_order[i].key, corpus.utterances[i].key);
}

// Random combinations of the HTK reader's settings (a fixed seed; CNTKIO_RANDOM_ROUNDS=n runs more): frame,
// sequence or truncated-BPTT packing, context windows, randomization windows and seeds, minibatch sizes, 1-3
// workers, v1 epochs or v2 reading. Each must give the same minibatches for any loader thread count and
// prefetch, continue exactly from the JSON state after any minibatch, and, in a v1 epoch of one sweep,
// deliver every frame once across the workers.
TEST(HtkReader, RandomSettingsKeepTheirInvariants) {
  TempDir dir;
  const Corpus corpus = htk_test::make_corpus(dir);
  std::mt19937_64 rng(31);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  for (size_t round = 0; round < settings_test::rounds(16); ++round) {
    const size_t packing = pick(3);  // 0 frames, 1 sequences, 2 truncated BPTT
    std::string settings = packing == 0 ? "frameMode = true\n" : "frameMode = false\n";
    if (packing == 2)
      settings += "truncated = true\ntruncationLength = " + std::to_string(2 + pick(9)) + "\n";
    if (pick(4) == 0) {
      settings += "randomize = false\n";
    } else {
      settings += "randomize = true\nrandomizationSeed = " + std::to_string(pick(4)) + "\n";
      if (pick(2)) settings += "randomizationWindow = " + std::to_string(50 + pick(600)) + "\n";
    }
    const size_t context = packing == 0 && pick(2) ? 1 + 2 * pick(3) : 1;
    const std::string features = context > 1 ? "contextWindow = " + std::to_string(context) + "\n" : "";
    const size_t minibatch = packing == 2 ? 10 + pick(40) : 1 + pick(120);
    const size_t workers = packing == 2 ? 1 : 1 + pick(3);
    const bool v2 = pick(3) == 0;
    const std::string threads = std::vector<std::string>{"loaderThreads = 1\n", "loaderThreads = 2\n",
                                                         "loaderThreads = 3\nprefetch = false\n"}[pick(3)];
    SCOPED_TRACE(settings + features + threads + "mb " + std::to_string(minibatch) + " workers " +
                 std::to_string(workers) + (v2 ? " v2" : " v1"));
    settings_test::WorkerReading reading;
    reading.make = [&](const std::string& loaders) {
      auto source = htk_test::open_reader(htk_test::composite_reader(corpus, settings + loaders, features));
      if (v2) source->set_v2_limits(kInfinitelyRepeat, 2);
      return source;
    };
    reading.start = [&](MinibatchSource& source, size_t rank) {
      if (!v2) source.start_epoch(minibatch, 0, kFullSweep, rank, workers);
    };
    reading.next = [&](MinibatchSource& source, size_t rank, Minibatch& mb) {
      return v2 ? source.next_minibatch_v2(minibatch, workers, rank, mb) : source.next_minibatch(mb);
    };
    reading.render = [](const Minibatch& mb) {
      std::string out;
      for (const std::string& key : mb.keys) out += key + ",";
      for (const StreamBatch& s : mb.streams) {
        out.append(s.values.begin(), s.values.end());
        for (const Layout::Entry& e : s.layout.entries) {
          out +=
              " " + std::to_string(e.row) + ":" + std::to_string(e.t_begin) + "-" + std::to_string(e.t_end);
        }
      }
      return out;
    };
    std::map<std::pair<int, int>, int> seen;
    for (size_t rank = 0; rank < workers; ++rank) {
      settings_test::check_worker(reading, rank, "loaderThreads = 0\nprefetch = false\n", threads, rng,
                                  [&](const Minibatch& mb) {
                                    for (const Delivered& d : htk_test::sequences_of(mb)) {
                                      for (const std::vector<double>& sample : d.features) {
                                        ++seen[frame_id(sample, (context / 2) * corpus.dim)];
                                      }
                                    }
                                  });
    }
    if (!v2 && packing != 2) {
      EXPECT_EQ(seen.size(), corpus.total_frames());
      for (const auto& [id, n] : seen)
        ASSERT_EQ(n, 1) << id.first << ":" << id.second << " read " << n << " times";
    }
  }
}
