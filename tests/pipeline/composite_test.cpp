// Composite readers: joining CTF deserializers by numeric, string and hashed keys (spec pipeline.md §6).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/minibatch_source.hpp"

namespace fs = std::filesystem;
using namespace cntkio;

namespace {

class Files {
 public:
  Files() {
    dir_ = fs::temp_directory_path() /
           ("cntkio_composite_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
  }
  ~Files() { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

 private:
  static inline int counter_ = 0;
  fs::path dir_;
};

std::string deserializer(const std::string& file, const std::string& stream, size_t dim,
                         const std::string& extra) {
  return "[ type = \"CNTKTextFormatDeserializer\"\n file = \"" + file + "\"\n " + extra + "\n input = [ " +
         stream + " = [ dim = " + std::to_string(dim) + " ; format = dense ] ] ]";
}

// Reads one sweep in file order and returns "key:a-values/b-values" per sequence.
std::vector<std::string> read_joined(const std::string& reader_text) {
  Config reader =
      Config::from_text("R = [ reader = [ " + reader_text + " ] ]").get_block("R").get_block("reader");
  auto source = MinibatchSource::from_config(reader);
  source->start_epoch(1, 0, kFullSweep);
  std::vector<std::string> out;
  Minibatch mb;
  while (source->next_minibatch(mb)) {
    std::string row = mb.keys[0] + ":";
    for (const StreamBatch& s : mb.streams) {
      for (size_t c = 0; c < s.layout.num_columns(); ++c)
        row += std::to_string(static_cast<int>(s.value_at(0, c)));
      row += "/";
    }
    out.push_back(row);
  }
  return out;
}

}  // namespace

TEST(CompositeKeys, HashMatchesCntkVectors) {
  EXPECT_EQ(KeyTable::hash("100"), 193358996u);
  EXPECT_EQ(KeyTable::hash("not"), 193419184u);
  EXPECT_EQ(KeyTable::hash("abcDEF_+123!890x.Y.Z@"), 1661589163364855789u);
}

TEST(CompositeKeys, NumericKeysFollowSscanfRules) {
  KeyTable keys;
  EXPECT_EQ(keys.id_of("  42abc"), 42u);
  EXPECT_EQ(keys.key_of(42), "42");
  EXPECT_THROW(keys.id_of("abc"), FormatError);
}

TEST(CompositeKeys, StringKeysAreNumberedByFirstAppearance) {
  KeyTable keys(KeyMode::kString);
  EXPECT_EQ(keys.id_of("b"), 0u);
  EXPECT_EQ(keys.id_of("a"), 1u);
  EXPECT_EQ(keys.id_of("b"), 0u);
  EXPECT_EQ(keys.key_of(1), "a");
}

TEST(CompositeReader, JoinsByNumericIdAndDropsSequencesMissingFromASecondary) {
  Files files;
  std::string a = files.write("a.ctf", "1 |a 1\n1 |a 2\n2 |a 3\n3 |a 4\n");
  std::string b = files.write("b.ctf", "3 |b 7\n1 |b 5\n1 |b 6\n");  // no sequence 2; other order
  auto rows = read_joined("randomize = false\n deserializers = ( " + deserializer(a, "a", 1, "") + " : " +
                          deserializer(b, "b", 1, "") + " )");
  EXPECT_EQ(rows, (std::vector<std::string>{"1:12/56/", "3:4/7/"}));
}

TEST(CompositeReader, SkipReportCountsEveryDroppedSequenceAndListsARepeatedKeyOnce) {
  Files files;
  // Key 1 names two sequences of the primary (not adjacent, so not one sequence), as frame mode gives each
  // frame of an utterance its utterance's key; the secondary has neither key 1 nor key 4.
  std::string a = files.write("a.ctf", "1 |a 1\n2 |a 2\n1 |a 3\n4 |a 4\n");
  std::string b = files.write("b.ctf", "2 |b 5\n");
  Config reader =
      Config::from_text("R = [ reader = [ randomize = false\n deserializers = ( " +
                        deserializer(a, "a", 1, "") + " : " + deserializer(b, "b", 1, "") + " ) ] ]")
          .get_block("R")
          .get_block("reader");
  auto source = MinibatchSource::from_config(reader);
  const SkipReport report = source->skip_report();
  EXPECT_EQ(report.sequences_skipped, 3u);
  EXPECT_EQ(report.first_locations,
            (std::vector<std::string>{"sequence 1 (its key is missing in another deserializer)",
                                      "sequence 4 (its key is missing in another deserializer)"}));
}

TEST(CompositeReader, JoinsBySymbolicKeysWithStringAndHashedIds) {
  Files files;
  // Symbolic ids cost one parse error per row in CNTK's parser (spec ctf.md §4.5), hence maxErrors.
  std::string a = files.write("a.ctf", "utt_x |a 1\nutt_y |a 2\nutt_z |a 3\n");
  std::string b = files.write("b.ctf", "utt_z |b 9\nutt_x |b 8\n");
  for (const char* mode :
       {"useNumericSequenceKeys = false", "useNumericSequenceKeys = false\n hashSequenceKeys = true"}) {
    auto rows = read_joined(std::string("randomize = false\n ") + mode + "\n deserializers = ( " +
                            deserializer(a, "a", 1, "maxErrors = 100") + " : " +
                            deserializer(b, "b", 1, "maxErrors = 100") + " )");
    EXPECT_EQ(rows, (std::vector<std::string>{"utt_x:1/8/", "utt_z:3/9/"})) << mode;
  }
}

TEST(CompositeReader, NoCommonKeyIsCntksReconcileError) {
  Files files;
  std::string a = files.write("a.ctf", "1 |a 1\n");
  std::string b = files.write("b.ctf", "2 |b 1\n");
  try {
    read_joined("randomize = false\n deserializers = ( " + deserializer(a, "a", 1, "") + " : " +
                deserializer(b, "b", 1, "") + " )");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(
        e.cntk_text(),
        "Could not reconcile data between different deserializers. Keys of logical sequences do not match.");
    // what() adds what would show a difference in the keys' form: keys on each side
    EXPECT_NE(
        std::string(e.what()).find("sequences '1' have no match in deserializer 2 of 2, whose sequences "
                                   "include '2'"),
        std::string::npos)
        << e.what();
  }
}

TEST(CompositeReader, FrameModeAndTruncationAreExclusive) {
  Files files;
  std::string a = files.write("a.ctf", "1 |a 1\n");
  EXPECT_THROW(read_joined("frameMode = true\n truncated = true\n truncationLength = 2\n deserializers = ( " +
                           deserializer(a, "a", 1, "") + " )"),
               ConfigError);
  EXPECT_THROW(read_joined("truncated = true\n deserializers = ( " + deserializer(a, "a", 1, "") + " )"),
               ConfigError);
}

// The packers know a sequence by its key; their errors still name the file and line it came from.
TEST(PackerErrors, NameTheFileAndLineOfTheSequence) {
  Files files;
  const std::string data = files.write("d.ctf", "0 |a 1 |b 1\n1 |a 2 |b 2\n1 |a 3\n");
  auto error_of = [&](const std::string& settings) -> FormatError {
    // The composite form: truncated BPTT is a composite reader's option.
    Config reader =
        Config::from_text("R = [ reader = [ randomize = false\n " + settings +
                          "\n deserializers = ( [ type = \"CNTKTextFormatDeserializer\"\n file = \"" + data +
                          "\"\n input = [ a = [ dim = 1 ; format = dense ] ; b = [ dim = 1 ; format "
                          "= dense ] ] ] ) ] ]")
            .get_block("R")
            .get_block("reader");
    auto source = MinibatchSource::from_config(reader);
    source->start_epoch(4, 0, kFullSweep);
    Minibatch mb;
    try {
      while (source->next_minibatch(mb)) {
      }
    } catch (const FormatError& e) {
      return e;
    }
    ADD_FAILURE() << settings << ": no error";
    return FormatError("", {});
  };
  const FormatError frame = error_of("frameMode = true");
  EXPECT_EQ(frame.cntk_text(), "Detected a non-frame sequence of size 2 in frame mode.");
  EXPECT_EQ(frame.location().file, data);
  EXPECT_EQ(frame.location().line, 2u);  // sequence 1 starts on line 2
  EXPECT_EQ(frame.location().sequence_key, "1");
  const FormatError bptt = error_of("truncated = true\n truncationLength = 2");
  EXPECT_EQ(bptt.cntk_text(),
            "For BPTT sequences between different input stream should have the same length.");
  EXPECT_EQ(bptt.location().file, data);
  EXPECT_EQ(bptt.location().line, 2u);
}
