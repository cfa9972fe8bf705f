// HTK MLF labels: keys, label lines, state lists, the index and the MLF deserializer (spec htk.md §9).
#include "formats/htk/mlf.hpp"

#include <gtest/gtest.h>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "htk_corpus.hpp"

using namespace cntkio;
using htk_test::TempDir;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.cntk_text();
  }
  return "(no error)";
}

MlfOptions mlf_options(const std::string& mlf, const std::string& states, size_t dim, bool frame_mode) {
  MlfOptions o;
  o.name = "labels";
  o.mlf_files = {mlf};
  o.label_mapping_file = states;
  o.label_dim = dim;
  o.frame_mode = frame_mode;
  o.keys = std::make_shared<KeyTable>(KeyMode::kString);
  o.trace_level = 0;
  return o;
}

struct Labels {
  std::vector<int32_t> classes;
  std::vector<float> values;
  bool valid = true;
};

Labels labels_of(Deserializer& d, KeyTable& keys, const std::string& key) {
  const std::optional<SequenceInfo> info = d.sequence_info_by_key(SequenceKey{keys.id_of(key), 0});
  EXPECT_TRUE(info) << key;
  if (!info) return {};
  std::vector<SequenceData> out;
  const ChunkPtr chunk = d.load_chunk(info->chunk_id);  // keeps the views valid
  chunk->get_sequence(info->index_in_chunk, out);
  Labels l;
  l.valid = out[0].valid;
  for (uint32_t i = 0; l.valid && i < out[0].number_of_samples; ++i) {
    EXPECT_EQ(out[0].nnz_counts[i], 1u);
    l.classes.push_back(out[0].indices[i]);
    l.values.push_back(static_cast<const float*>(out[0].values)[i]);
  }
  return l;
}

}  // namespace

TEST(MlfKey, QuotesStarSlashAndLastExtensionAreRemoved) {
  std::string key;
  ASSERT_TRUE(htk::parse_mlf_key("\"*/cen5-fjam-b.lab\"", key));
  EXPECT_EQ(key, "cen5-fjam-b");
  ASSERT_TRUE(htk::parse_mlf_key("\"An4/71/71/cen5-fjam-b.lab\"  ", key));  // right-trimmed
  EXPECT_EQ(key, "An4/71/71/cen5-fjam-b");
  ASSERT_TRUE(htk::parse_mlf_key("\"spk3/sess.1/u21.rec\"", key));
  EXPECT_EQ(key, "spk3/sess.1/u21");
  ASSERT_TRUE(
      htk::parse_mlf_key("\"*/\"", key));  // "*/" alone is not stripped (needs more than 2 characters)
  EXPECT_EQ(key, "*/");
  EXPECT_FALSE(htk::parse_mlf_key("\"\"", key));
  EXPECT_FALSE(htk::parse_mlf_key("u01.lab", key));
}

TEST(MlfLabelLine, TimesAre100NsUnitsOnlyForSegmentsOfAtLeast99999) {
  const htk::StateTable states = htk::StateTable::from_names({"sil", "a", "b"});
  htk::FrameRange r = htk::parse_label_line("0 200000 a -64.2 sil </s>", 10, "x.mlf", &states);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.count, 2u);
  EXPECT_EQ(r.class_id, 1u);
  r = htk::parse_label_line("200000 349999 b", 10, "x.mlf", &states);  // 1.5 frames round to [2, 3.99999+.5)
  EXPECT_EQ(r.first, 2u);
  EXPECT_EQ(r.count, 1u);
  r = htk::parse_label_line("3 8 sil", 10, "x.mlf", &states);  // a short segment is read as frame numbers
  EXPECT_EQ(r.first, 3u);
  EXPECT_EQ(r.count, 5u);
  r = htk::parse_label_line("5e5 7e5x sil", 10, "x.mlf", &states);  // prefix parse: trailing garbage ignored
  EXPECT_EQ(r.first, 5u);
  EXPECT_EQ(r.count, 2u);
  r = htk::parse_label_line("0 2 x 7", 0, "x.mlf", nullptr);  // 4-column format: the class is the 4th token
  EXPECT_EQ(r.class_id, 7u);
}

TEST(MlfLabelLine, TokensAreSplitOnSingleBlanksOnly) {
  const htk::StateTable states = htk::StateTable::from_names({"sil"});
  auto error = [&](const std::string& line, const htk::StateTable* s) {
    return message_of([&] { htk::parse_label_line(line, 77, "x.mlf", s); });
  };
  EXPECT_EQ(error("0  100000 sil", &states), "Offset '77': cannot parse end frame of range.");
  EXPECT_EQ(error(" 0 100000 sil", &states), "Offset '77': cannot parse start frame of range.");
  EXPECT_EQ(error("0\t100000\tsil", &states),
            "Offset '77': do not support frame range format with less than two columns.");
  EXPECT_EQ(error("0 100000 sil ", &states), "(no error)");  // an empty 4th token is ignored
  EXPECT_EQ(error("0 100000 sil\t", &states),
            "Offset '77': frame range state 'sil\t' is not found in the statelist");
  EXPECT_EQ(error("0 100000 sil", nullptr),
            "Offset '77': CNTK supports 4-column format frame range or state list table.");
  EXPECT_EQ(error("0 100000 sil x", nullptr), "Offset '77': cannot parse class id of the frame range");
  EXPECT_EQ(error("9 3 sil", &states), "Offset '77': frame range end time is earlier than start time.");
  EXPECT_EQ(error("0 100000 sil 70000", nullptr).rfind("Offset '77': not enough bits", 0), 0u);
}

TEST(MlfStateList, LinesAreNamesWithOrWithoutAFinalNewline) {
  TempDir dir;
  for (const std::string& text : {std::string("a\r\nb b\n\nc"), std::string("a\nb b\nc\n")}) {
    const htk::StateTable t = htk::StateTable::read(dir.write("s.list", text));
    EXPECT_EQ(t.size(), 3u);
    uint32_t id = 0;
    ASSERT_TRUE(t.find("c", id));  // the last name, whatever the ending
    EXPECT_EQ(id, 2u);
    ASSERT_TRUE(t.find("b b", id));  // verbatim, blanks included
    EXPECT_EQ(id, 1u);
  }
  const std::string dup = dir.write("d.list", "a\nb\na\n");
  EXPECT_EQ(message_of([&] { htk::StateTable::read(dup); }),
            "Deduplicate two states with the same name 'a' from the state table '" + dup + "'.");
  const std::string empty = dir.write("e.list", "\n\r\n");
  EXPECT_EQ(message_of([&] { htk::StateTable::read(empty); }),
            "State list table '" + empty + "' is not allowed to be empty.");
}

TEST(MlfIndex, StateMachineSkipsBadUtterancesAndAllowsConcatenatedFiles) {
  std::vector<std::string> warnings;
  const std::string text =
      "\n#!MLF!#\r\n\"a.lab\"\n0 3 x\n3 5 y\n.\nnot-quoted\n0 1 "
      "x\n.\n\"empty.lab\"\n.\n#!MLF!#\n\"b.lab\"\r\n\n0 "
      "200000 x\n.\n\"cut.lab\"\n0 4 x\n";
  const std::vector<htk::MlfIndexEntry> entries =
      htk::index_mlf(text, "m.mlf", [&](const std::string& w) { warnings.push_back(w); });
  ASSERT_EQ(entries.size(), 2u);  // the unterminated last utterance is dropped, with a warning
  EXPECT_EQ(entries[0].key, "a");
  EXPECT_EQ(entries[0].frames, 5u);
  EXPECT_EQ(entries[0].key_line, 3u);
  EXPECT_EQ(entries[0].begin, text.find("\"a.lab\""));
  EXPECT_EQ(entries[0].end, text.find("not-quoted"));
  EXPECT_EQ(entries[1].key, "b");
  EXPECT_EQ(entries[1].frames, 2u);
  ASSERT_EQ(warnings.size(), 3u);
  EXPECT_EQ(warnings[0], "WARNING: Cannot parse the utterance 'not-quoted' at offset (" +
                             std::to_string(text.find("not-quoted")) + ")");
  EXPECT_EQ(warnings[2],
            "WARNING: the MLF file ends inside the utterance 'cut' (no '.' line after it); it is "
            "left out [file 'm.mlf', line 17 (byte offset " +
                std::to_string(text.find("\"cut.lab\"")) + ")]");
  EXPECT_EQ(message_of([] { htk::index_mlf("", "m.mlf", [](const std::string&) {}); }),
            "Input file is empty");
  EXPECT_EQ(message_of([] { htk::index_mlf("#!MLF!# \n", "m.mlf", [](const std::string&) {}); }),
            "Expected MLF header was not found.");
  EXPECT_EQ(message_of(
                [] { htk::index_mlf("#!MLF!#\n\"z.lab\"\n0 0 x\n.\n", "m.mlf", [](const std::string&) {}); }),
            "Invalid sequence: number of samples == 0");
}

TEST(MlfDeserializer, SequenceModeLabelsMatchTheCorpus) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  MlfOptions o = mlf_options(corpus.mlf, corpus.states, corpus.num_states, false);
  auto d = make_mlf_deserializer(o);
  EXPECT_EQ(d->streams()[0].storage, StorageFormat::kSparseCsc);
  EXPECT_EQ(d->streams()[0].sample_dim(), corpus.num_states);
  EXPECT_EQ(mlf_summary(*d).utterances, corpus.utterances.size() + 1);  // + ghost
  for (const htk_test::Utterance& u : corpus.utterances) {
    const Labels l = labels_of(*d, *o.keys, u.key);
    ASSERT_EQ(l.classes.size(), u.frames) << u.key;
    for (uint32_t t = 0; t < u.frames; ++t) {
      ASSERT_EQ(l.classes[t], static_cast<int32_t>(u.classes[t])) << u.key << " frame " << t;
      ASSERT_EQ(l.values[t], 1.0f);
    }
  }
  EXPECT_FALSE(d->sequence_info_by_key(SequenceKey{o.keys->id_of("orphan"), 0}));
  EXPECT_THROW(d->chunk_infos(), ConfigError);  // never primary
}

TEST(MlfDeserializer, PhoneBoundariesMarkTheFirstFrameOfEveryLabelLine) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  MlfOptions o = mlf_options(corpus.mlf, corpus.states, corpus.num_states, false);
  o.phone_boundaries = true;
  o.element_type = ElementType::kFloat;
  auto d = make_mlf_deserializer(o);
  for (const htk_test::Utterance& u : corpus.utterances) {
    const Labels l = labels_of(*d, *o.keys, u.key);
    for (uint32_t t = 0; t < u.frames; ++t)
      ASSERT_EQ(l.values[t], u.phone_start[t] ? 2.0f : 1.0f) << u.key << " " << t;
  }
  o.frame_mode = true;
  EXPECT_EQ(message_of([&] {
              make_mlf_deserializer(o);
            }).rfind("frameMode and phoneBoundaries are mutually exclusive", 0),
            0u);
}

TEST(MlfDeserializer, NonContiguousUtterancesAreInvalidNotFatal) {
  TempDir dir;
  const std::string states = dir.write("s.list", "x\ny\n");
  const std::string mlf =
      dir.write("m.mlf",
                "#!MLF!#\n\"gap.lab\"\n0 2 x\n3 5 y\n.\n\"late.lab\"\n1 4 x\n.\n"
                "\"ok.lab\"\n0 100000 x\n100000 300000 y\n.\n\"*/n.lab\"\n0 2 x 1\n2 3 y 0\n.\n");
  std::vector<std::string> log;
  MlfOptions o = mlf_options(mlf, states, 2, false);
  o.trace_level = 1;
  o.log_sink = [&](int, std::string_view line) { log.emplace_back(line); };
  auto d = make_mlf_deserializer(o);
  EXPECT_FALSE(labels_of(*d, *o.keys, "gap").valid);
  EXPECT_FALSE(labels_of(*d, *o.keys, "late").valid);
  const Labels ok = labels_of(*d, *o.keys, "ok");
  EXPECT_EQ(ok.classes, (std::vector<int32_t>{0, 1, 1}));
  // CNTK's texts, then the label line's file and byte offset.
  EXPECT_NE(std::find(log.begin(), log.end(),
                      "WARNING: Labels are not in the consecutive order MLF in label set for utterance 'gap' "
                      "[file '" +
                          mlf + "', byte offset 24]"),
            log.end());
  EXPECT_NE(
      std::find(log.begin(), log.end(),
                "WARNING: Invalid first frame in utterance 'late' [file '" + mlf + "', byte offset 43]"),
      log.end());
  // Without a state list the 4th column is the class id.
  MlfOptions numeric = mlf_options(mlf, "", 2, false);
  auto n = make_mlf_deserializer(numeric);
  EXPECT_THROW(labels_of(*n, *numeric.keys, "gap"), FormatError);  // 3-column lines in the same chunk
}

TEST(MlfDeserializer, AKeyLineRefusedWhenItsChunkLoadsIsNamedWithItsLine) {
  // CNTK's quirk: the index trims blanks after the key's closing quote, the chunk parser does not.
  TempDir dir;
  const std::string mlf = dir.write("m.mlf", "#!MLF!#\n\"ok.lab\"\n0 1 x 1\n.\n\"tb.lab\"  \n0 2 x 1\n.\n");
  std::vector<std::string> log;
  MlfOptions o = mlf_options(mlf, "", 2, false);
  o.trace_level = 1;
  o.log_sink = [&](int, std::string_view line) { log.emplace_back(line); };
  auto d = make_mlf_deserializer(o);
  EXPECT_FALSE(labels_of(*d, *o.keys, "tb").valid);
  EXPECT_NE(
      std::find(log.begin(), log.end(),
                "WARNING: skipping sequence entry '\"tb.lab\"  ' due to it being too short or not quoted "
                "[file '" +
                    mlf + "', line 5 (byte offset 27)]"),
      log.end());
}

TEST(MlfDeserializer, ChunkParseErrorsHaveCntksTextsAndOffsets) {
  TempDir dir;
  const std::string states = dir.write("s.list", "x\ny\nz\n");
  const std::string text = "#!MLF!#\n\"a.lab\"\n0 2 x\n2 4 z\n.\n";
  const std::string mlf = dir.write("m.mlf", text);
  MlfOptions o = mlf_options(mlf, states, 2, false);
  auto d = make_mlf_deserializer(o);
  try {
    labels_of(*d, *o.keys, "a");
    FAIL() << "class 2 is not below labelDim 2";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "Class id '2d' exceeds the model output dimension '2'.");
    EXPECT_EQ(e.location().file, mlf);
    EXPECT_EQ(e.location().byte_offset, text.find("2 4 z"));
  }
  const std::string unknown = dir.write("u.mlf", "#!MLF!#\n\"a.lab\"\n0 2 x\n2 4 w\n.\n");
  MlfOptions u = mlf_options(unknown, states, 3, false);
  auto du = make_mlf_deserializer(u);
  EXPECT_EQ(message_of([&] { labels_of(*du, *u.keys, "a"); }),
            "Offset '" + std::to_string(text.find("2 4 z")) +
                "': frame range state 'w' is not found in the statelist");
  MlfOptions big = mlf_options(mlf, states, 70000, false);
  EXPECT_THROW(make_mlf_deserializer(big), ConfigError);
  MlfOptions none = mlf_options(mlf, states, 3, false);
  none.mlf_files.clear();
  EXPECT_THROW(make_mlf_deserializer(none), ConfigError);
  MlfOptions missing = mlf_options(dir.file("none.mlf"), states, 3, false);
  EXPECT_THROW(make_mlf_deserializer(missing), IoError);
}

TEST(MlfDeserializer, FrameModeLooksUpFramesAndSeveralFilesContinueChunkIds) {
  TempDir dir;
  const std::string states = dir.write("s.list", "x\ny\n");
  const std::string a = dir.write("a.mlf", "#!MLF!#\n\"a.lab\"\n0 2 x\n2 3 y\n.\n");
  const std::string b = dir.write("b.mlf", "#!MLF!#\n\"b.lab\"\n0 1 y\n1 2 x\n.\n");
  MlfOptions o = mlf_options(a, states, 2, true);
  o.mlf_files.push_back(b);
  auto d = make_mlf_deserializer(o);
  EXPECT_EQ(mlf_summary(*d).chunks, 2u);
  const auto info = d->sequence_info_by_key(SequenceKey{o.keys->id_of("b"), 1});
  ASSERT_TRUE(info);
  EXPECT_EQ(info->chunk_id, 1u);
  EXPECT_EQ(info->number_of_samples, 1u);
  std::vector<SequenceData> out;
  const ChunkPtr chunk = d->load_chunk(1);
  chunk->get_sequence(info->index_in_chunk, out);
  EXPECT_EQ(out[0].indices[0], 0);  // frame 1 of b is x
}

TEST(MlfDeserializer, FrameModeFindsTheClassOfEveryFrameOfLongAndShortRanges) {
  // "a": 70 frames of class 1, an empty range, 130 frames of class 3; "gap": invalid (a hole after frame 2);
  // "b": 300 one-frame ranges of class i % 7; "c": one range of 5000 frames of class 5.
  std::string text =
      "#!MLF!#\n\"a.lab\"\n0 70 x 1\n70 70 y 2\n70 200 z 3\n.\n\"gap.lab\"\n0 2 x 1\n3 9 x 2\n.\n\"b.lab\"\n";
  for (int i = 0; i < 300; ++i) {
    text += std::to_string(i) + " " + std::to_string(i + 1) + " s " + std::to_string(i % 7) + "\n";
  }
  text += ".\n\"c.lab\"\n0 500000000 x 5\n.\n";
  TempDir dir;
  MlfOptions o = mlf_options(dir.write("m.mlf", text), "", 8, true);
  auto d = make_mlf_deserializer(o);
  auto class_at = [&](const std::string& key, uint32_t frame) -> int {
    const std::optional<SequenceInfo> info = d->sequence_info_by_key(SequenceKey{o.keys->id_of(key), frame});
    if (!info) return -2;
    const ChunkPtr chunk = d->load_chunk(info->chunk_id);
    std::vector<SequenceData> out;
    chunk->get_sequence(info->index_in_chunk, out);
    return out.at(0).valid ? out[0].indices[0] : -1;
  };
  for (uint32_t t = 0; t < 200; ++t) EXPECT_EQ(class_at("a", t), t < 70 ? 1 : 3) << "a " << t;
  for (uint32_t t = 0; t < 9; ++t) EXPECT_EQ(class_at("gap", t), -1) << "gap " << t;
  for (uint32_t t = 0; t < 300; ++t) EXPECT_EQ(class_at("b", t), static_cast<int>(t % 7)) << "b " << t;
  for (uint32_t t = 0; t < 5000; t += 97) EXPECT_EQ(class_at("c", t), 5) << "c " << t;
  EXPECT_EQ(class_at("c", 4999), 5);
}

TEST(MlfDeserializer, SmallChunkSizeSplitsTheIndexByBytes) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  MlfOptions o = mlf_options(corpus.mlf, corpus.states, corpus.num_states, false);
  o.chunk_size_in_bytes = 1;  // every utterance is a chunk of its own
  auto d = make_mlf_deserializer(o);
  EXPECT_EQ(mlf_summary(*d).chunks, corpus.utterances.size() + 1);
  const Labels l = labels_of(*d, *o.keys, corpus.utterances[7].key);
  for (size_t t = 0; t < l.classes.size(); ++t)
    EXPECT_EQ(l.classes[t], static_cast<int32_t>(corpus.utterances[7].classes[t]));
}

TEST(MlfDeserializer, AChunkStillHeldIsHandedOutAgainInsteadOfReparsed) {
  TempDir dir;
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  auto d = make_mlf_deserializer(mlf_options(corpus.mlf, corpus.states, corpus.num_states, true));
  ChunkPtr first = d->load_chunk(0);
  EXPECT_EQ(d->load_chunk(0), first);  // shared while someone holds it
  first.reset();
  ChunkPtr again = d->load_chunk(0);  // parsed anew after release, with the same data
  std::vector<SequenceData> out;
  again->get_sequence(3, out);
  EXPECT_EQ(out[0].indices[0], static_cast<int32_t>(corpus.utterances[0].classes[3]));
}
