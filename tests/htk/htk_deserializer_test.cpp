// HTKFeatureDeserializer on its own: SCP filtering, chunking, frame/sequence mode, context windows,
// expandToUtterance and the fatal conditions (spec htk.md §3.4–§8).
#include <gtest/gtest.h>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "htk_corpus.hpp"

using namespace cntkio;
using htk_test::TempDir;

namespace {

HtkFeatureOptions options_for(const std::string& scp, size_t dim, bool frame_mode) {
  HtkFeatureOptions o;
  o.name = "features";
  o.scp_file = scp;
  o.dim = dim;
  o.frame_mode = frame_mode;
  o.keys = std::make_shared<KeyTable>(KeyMode::kString);
  o.trace_level = 0;
  return o;
}

// Values of sample `i` of sequence `index` of `chunk`.
std::vector<float> sample_of(const ChunkPtr& chunk, uint32_t index, size_t dim, size_t i = 0) {
  std::vector<SequenceData> out;
  chunk->get_sequence(index, out);
  const float* v = static_cast<const float*>(out.at(0).values) + i * dim;
  return std::vector<float>(v, v + dim);
}

// An SCP over single-value frames: utterance u's frame t has value 100 * u + t.
std::string write_tiny(const TempDir& dir, const std::vector<uint32_t>& lengths,
                       const std::string& name = "t") {
  std::vector<float> all;
  std::string scp;
  for (size_t u = 0; u < lengths.size(); ++u) {
    const size_t first = all.size();
    for (uint32_t t = 0; t < lengths[u]; ++t) all.push_back(static_cast<float>(100 * u + t));
    scp += "u" + std::to_string(u) + ".x=" + dir.file(name + ".ark") + "[" + std::to_string(first) + "," +
           std::to_string(first + lengths[u] - 1) + "]\n";
  }
  write_htk_file(dir.file(name + ".ark"), all.data(), all.size(), 1);
  return dir.write(name + ".scp", scp);
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

TEST(HtkFeatures, FrameModeMakesEveryFrameASequenceKeyedByUtteranceAndFrame) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  auto d = make_htk_feature_deserializer(options_for(corpus.scp, 13, true));
  const std::vector<ChunkInfo> chunks = d->chunk_infos();
  ASSERT_EQ(chunks.size(), 1u);
  const size_t frames = corpus.total_frames() + 4;  // the orphan utterance has no labels but is a feature
  EXPECT_EQ(chunks[0].number_of_samples, frames);
  EXPECT_EQ(chunks[0].number_of_sequences, frames);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(0, infos);
  ASSERT_EQ(infos.size(), frames);
  ChunkPtr chunk = d->load_chunk(0);
  size_t i = 0;
  for (const htk_test::Utterance& u : corpus.utterances) {
    for (uint32_t t = 0; t < u.frames; ++t, ++i) {
      ASSERT_EQ(d->key_to_string(infos[i].key), u.key);
      ASSERT_EQ(infos[i].key.sample, t);
      ASSERT_EQ(infos[i].number_of_samples, 1u);
      ASSERT_EQ(infos[i].index_in_chunk, i);
      const std::vector<float> v = sample_of(chunk, infos[i].index_in_chunk, 13);
      ASSERT_EQ(v, std::vector<float>(u.values.begin() + t * 13, u.values.begin() + (t + 1) * 13))
          << u.key << " " << t;
    }
  }
  const HtkFeatureSummary s = htk_feature_summary(*d);
  EXPECT_EQ(s.kind, "MFCC_E_D");
  EXPECT_EQ(s.file_dim, 13u);
  EXPECT_EQ(s.output_dim, 13u);
  EXPECT_EQ(s.utterances, corpus.utterances.size() + 1);
}

TEST(HtkFeatures, SequenceModeMakesEveryUtteranceOneSequence) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  HtkFeatureOptions o = options_for(corpus.scp, 13, false);
  o.element_type = ElementType::kDouble;
  auto d = make_htk_feature_deserializer(o);
  EXPECT_EQ(d->streams()[0].element_type, ElementType::kDouble);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(0, infos);
  ASSERT_EQ(infos.size(), corpus.utterances.size() + 1);
  ChunkPtr chunk = d->load_chunk(0);
  for (size_t u = 0; u < corpus.utterances.size(); ++u) {
    const htk_test::Utterance& utt = corpus.utterances[u];
    EXPECT_EQ(infos[u].number_of_samples, utt.frames);
    std::vector<SequenceData> out;
    chunk->get_sequence(infos[u].index_in_chunk, out);
    ASSERT_EQ(out[0].number_of_samples, utt.frames);
    const double* v = static_cast<const double*>(out[0].values);
    for (size_t i = 0; i < utt.values.size(); ++i)
      ASSERT_EQ(v[i], static_cast<double>(utt.values[i])) << utt.key;
  }
}

TEST(HtkFeatures, ChunksCloseOnlyAfterExceeding90000Frames) {
  TempDir dir;
  // 45000 + 45000 = 90000 is not more than 90000, so the third utterance still joins chunk 0.
  auto d = make_htk_feature_deserializer(
      options_for(write_tiny(dir, {45000, 45000, 10, 7, 89990, 5, 1}), 1, false));
  const std::vector<ChunkInfo> chunks = d->chunk_infos();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0].number_of_sequences, 3u);
  EXPECT_EQ(chunks[0].number_of_samples, 90010u);
  EXPECT_EQ(chunks[1].number_of_sequences, 3u);
  EXPECT_EQ(chunks[1].number_of_samples, 90002u);
  EXPECT_EQ(chunks[2].number_of_samples, 1u);
  ChunkPtr second = d->load_chunk(1);
  EXPECT_EQ(sample_of(second, 1, 1, 89989), std::vector<float>{400.0f + 89989});
  auto f = make_htk_feature_deserializer(options_for(dir.file("t.scp"), 1, true));
  EXPECT_EQ(f->chunk_infos()[1].number_of_sequences, 90002u);
}

TEST(HtkFeatures, DuplicatesAreAllDroppedAndLongUtterancesSkipped) {
  TempDir dir;
  write_tiny(dir, {3, 4, 5, 6});
  const std::string ark = dir.file("t.ark");
  const std::string scp = dir.write("d.scp", "a.x=" + ark + "[0,2]\nb.x=" + ark + "[3,6]\na.y=" + ark +
                                                 "[7,11]\nc.x=" + ark + "[12,17]\na.z=" + ark + "[0,0]\n");
  std::vector<std::string> log;
  HtkFeatureOptions o = options_for(scp, 1, false);
  o.trace_level = 1;
  o.log_sink = [&](int, std::string_view line) { log.emplace_back(line); };
  o.max_sequence_size = 5;  // c (6 frames) is skipped before de-duplication
  auto d = make_htk_feature_deserializer(o);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(0, infos);
  ASSERT_EQ(infos.size(), 1u);  // all three "a" are dropped, c is too long
  EXPECT_EQ(d->key_to_string(infos[0].key), "b");
  EXPECT_EQ(htk_feature_summary(*d).duplicates, 3u);
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0],
            "WARNING: Number of duplicates is '3'. All duplicates will be dropped. Consider switching to "
            "numeric sequence ids.");
  o.max_sequence_size = 0;
  EXPECT_EQ(message_of([&] { make_htk_feature_deserializer(o); }),
            "HTKDeserializer: No utterances to process.");
}

TEST(HtkFeatures, ContextWindowsRepeatTheEdgeFrames) {
  TempDir dir;
  const std::string scp = write_tiny(dir, {4, 1});
  for (size_t window : {1u, 5u, 11u}) {
    HtkFeatureOptions o = options_for(scp, 1, true);
    o.left_context = o.right_context = window / 2;
    auto d = make_htk_feature_deserializer(o);
    ASSERT_EQ(d->streams()[0].sample_dim(), window);
    ChunkPtr chunk = d->load_chunk(0);
    const int half = static_cast<int>(window / 2);
    for (uint32_t t = 0; t < 4; ++t) {
      std::vector<float> expected;
      for (int j = -half; j <= half; ++j)
        expected.push_back(static_cast<float>(std::clamp(static_cast<int>(t) + j, 0, 3)));
      EXPECT_EQ(sample_of(chunk, t, window), expected) << "window " << window << " frame " << t;
    }
    // A one-frame utterance fills every block with its only frame; context never crosses utterances.
    EXPECT_EQ(sample_of(chunk, 4, window), std::vector<float>(window, 100.0f));
  }
}

TEST(HtkFeatures, AsymmetricAndInferredWindowsInSequenceMode) {
  TempDir dir;
  const std::string scp = write_tiny(dir, {3});
  HtkFeatureOptions o = options_for(scp, 1, false);
  o.left_context = 2;
  o.right_context = 1;
  auto d = make_htk_feature_deserializer(o);
  ChunkPtr chunk = d->load_chunk(0);
  EXPECT_EQ(sample_of(chunk, 0, 4, 0), (std::vector<float>{0, 0, 0, 1}));
  EXPECT_EQ(sample_of(chunk, 0, 4, 1), (std::vector<float>{0, 0, 1, 2}));
  EXPECT_EQ(sample_of(chunk, 0, 4, 2), (std::vector<float>{0, 1, 2, 2}));
  // dim 3 with 1-dim files: a 3-frame window is inferred.
  auto inferred = make_htk_feature_deserializer(options_for(scp, 3, false));
  EXPECT_EQ(htk_feature_summary(*inferred).left_context, 1u);
  EXPECT_EQ(sample_of(inferred->load_chunk(0), 0, 3, 0), (std::vector<float>{0, 0, 1}));
}

TEST(HtkFeatures, DimensionErrorsHaveCntksTexts) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  EXPECT_EQ(message_of([&] { make_htk_feature_deserializer(options_for(corpus.scp, 14, true)); }),
            "HTKDeserializer: model vector size is not multiple of input features");
  EXPECT_EQ(message_of([&] { make_htk_feature_deserializer(options_for(corpus.scp, 26, true)); }),
            "HTKDeserializer: neighbor expansion of input features to '2' is not symmetrical");
  HtkFeatureOptions explicit_window = options_for(corpus.scp, 39, true);
  explicit_window.left_context = explicit_window.right_context = 1;
  // CNTK would overrun its buffer (dim < file dim) or leave a zero tail (dim > file dim): cntkio refuses,
  // naming the file whose dimension disagrees.
  try {
    make_htk_feature_deserializer(explicit_window);
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("dim must be the per-frame dimension"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.location().stream, "features");
    EXPECT_FALSE(e.location().file.empty());
  }
  try {
    make_htk_feature_deserializer(options_for(corpus.scp, 14, true));
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().stream, "features");
    EXPECT_FALSE(e.location().file.empty());
  }
}

// Options built in code (a ReaderSpec, cntkio's Python module) skip the config route's checks of `dim` and
// `contextWindow`: the deserializer refuses samples of more than 2^31 - 1 values before sizing anything.
TEST(HtkFeatures, WindowsBeyond32BitSamplesAreRefusedBeforeIndexing) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  HtkFeatureOptions wide = options_for(corpus.scp, 13, true);
  wide.left_context = size_t{1} << 40;
  EXPECT_EQ(message_of([&] { make_htk_feature_deserializer(wide); }),
            "The context window 1099511627776:0 with dim 13 makes samples of more than 2147483647 values.");
  HtkFeatureOptions wrapping = options_for(corpus.scp, 13, true);
  wrapping.left_context = wrapping.right_context = size_t{1} << 63;  // 1 + left + right wraps to 1
  EXPECT_THROW(make_htk_feature_deserializer(wrapping), ConfigError);
  EXPECT_EQ(message_of(
                [&] { make_htk_feature_deserializer(options_for(corpus.scp, 13 * ((1u << 28) + 1), true)); }),
            "'dim' must be between 1 and 2147483647, found 3489660941.");
}

TEST(HtkFeatures, FileErrorsAtChunkLoadNameTheScpLine) {
  TempDir dir;
  const std::vector<float> frames(10 * 2, 1.0f);
  write_htk_file(dir.file("a.htk"), frames.data(), 10, 2);
  HtkWriteOptions other;
  other.kind = HtkBaseKind::kMfcc;
  write_htk_file(dir.file("b.htk"), frames.data(), 10, 2, other);
  HtkWriteOptions period;
  period.sample_period = 50000;
  write_htk_file(dir.file("c.htk"), frames.data(), 10, 2, period);
  auto load_error = [&](const std::string& second_line) -> std::pair<std::string, uint64_t> {
    const std::string scp = dir.write("e.scp", "a.x=" + dir.file("a.htk") + "[0,9]\n" + second_line + "\n");
    auto d = make_htk_feature_deserializer(options_for(scp, 2, true));
    try {
      d->load_chunk(0);
    } catch (const FormatError& e) {
      EXPECT_EQ(e.location().file, scp);
      return {e.cntk_text(), e.location().line.value_or(0)};
    }
    return {"(no error)", 0};
  };
  EXPECT_EQ(load_error("b.x=" + dir.file("a.htk") + "[5,10]"),
            std::make_pair(
                "open: end frame exceeds archive's total number of frames 10 in '" + dir.file("a.htk") + "'",
                uint64_t{2}));
  EXPECT_EQ(load_error("b.x=" + dir.file("b.htk") + "[0,1]").first,
            "setkind: inconsistent feature kind for file '" + dir.file("b.htk") + "'");
  EXPECT_EQ(load_error("b.x=" + dir.file("c.htk") + "[0,1]").first,
            "setkind: inconsistent feature kind for file '" + dir.file("c.htk") + "'");
  const std::string scp =
      dir.write("m.scp", "a.x=" + dir.file("a.htk") + "[0,9]\nb.x=" + dir.file("gone.htk") + "[0,1]\n");
  auto d = make_htk_feature_deserializer(options_for(scp, 2, true));
  EXPECT_EQ(message_of([&] { d->load_chunk(0); }),
            "error opening file '" + dir.file("gone.htk") + "': No such file or directory");
}

TEST(HtkFeatures, SecondaryLookupInFrameModeChecksTheFrameCount) {
  TempDir dir;
  const std::string scp = write_tiny(dir, {3, 2});
  HtkFeatureOptions o = options_for(scp, 1, true);
  auto d = make_htk_feature_deserializer(o);
  const uint64_t id = o.keys->id_of("u1");
  const std::optional<SequenceInfo> info = d->sequence_info_by_key(SequenceKey{id, 1});
  ASSERT_TRUE(info);
  EXPECT_EQ(info->index_in_chunk, 4u);  // u1 starts at frame 3 of the chunk
  EXPECT_EQ(sample_of(d->load_chunk(0), info->index_in_chunk, 1), std::vector<float>{101.0f});
  EXPECT_FALSE(d->sequence_info_by_key(SequenceKey{o.keys->id_of("nope"), 0}));
  EXPECT_EQ(
      message_of([&] {
        d->sequence_info_by_key(SequenceKey{id, 2});
      }),
      "Sequence with key 'u1' has '2' frame(s), whereas the primary sequence expects at least '3' frames");
}

TEST(HtkFeatures, ExpandToUtteranceRepeatsTheFrameToThePrimaryLength) {
  TempDir dir;
  const std::string scp = write_tiny(dir, {1, 1}, "ivec");
  HtkFeatureOptions o = options_for(scp, 1, false);
  o.expand_to_utterance = true;
  auto d = make_htk_feature_deserializer(o);
  EXPECT_EQ(message_of([&] {
              d->chunk_infos();
            }).rfind("Cannot expand utterances of the primary stream features", 0),
            0u);
  const std::optional<SequenceInfo> info = d->sequence_info_by_key(SequenceKey{o.keys->id_of("u1"), 0});
  ASSERT_TRUE(info);
  EXPECT_EQ(info->number_of_samples, 1u);
  ChunkPtr chunk = d->load_chunk(info->chunk_id);
  std::vector<SequenceData> out(1);
  out[0].number_of_samples = 4;  // the primary's sequence of this bundled item
  chunk->get_sequence(info->index_in_chunk, out);
  ASSERT_EQ(out[1].number_of_samples, 4u);
  const float* v = static_cast<const float*>(out[1].values);
  EXPECT_EQ(std::vector<float>(v, v + 4), std::vector<float>(4, 100.0f));
  std::vector<SequenceData> alone;
  EXPECT_EQ(message_of([&] { chunk->get_sequence(0, alone); }),
            "Expansion of utterance is not allowed for primary deserializer.");
  // CNTK's text, as a configuration error that names the stream's key.
  try {
    chunk->get_sequence(0, alone);
    ADD_FAILURE() << "an expanded stream cannot be read alone";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.key_path(), "input.features.expandToUtterance");
  }
  const std::string two = write_tiny(dir, {1, 2}, "bad");
  HtkFeatureOptions bad = options_for(two, 1, false);
  bad.expand_to_utterance = true;
  EXPECT_EQ(message_of([&] { make_htk_feature_deserializer(bad); }),
            "Expanded stream should only contain sequences of length 1, utterance 'u1' has 2");
}
