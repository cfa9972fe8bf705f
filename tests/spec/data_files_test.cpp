// A corpus of several data files (issue #24 item 3): how file options expand (list, glob, list file), and a
// reader built from a typed spec over several CTF files reading them one after another.
#include "core/data_files.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/reader_spec.hpp"
#include "htk/htk_corpus.hpp"

using namespace cntkio;
using htk_test::TempDir;

TEST(DataFiles, GlobsExpandSortedListsAreRelativeToTheirFolderAndNamesStayInOrder) {
  TempDir dir("files");
  const std::string b = dir.write("b.ctf", "1 |x 1\n");
  const std::string a = dir.write("a.ctf", "0 |x 0\n");
  const std::string c = dir.write("sub/c.ctf", "2 |x 2\n");
  const std::string list = dir.write("sub/list.txt", "# shards\n\nc.ctf\r\n");
  EXPECT_EQ(core::expand_data_files(dir.file("*.ctf"), {}, "", "CTF"), (std::vector<std::string>{a, b}));
  EXPECT_EQ(core::expand_data_files(b, {a}, list, "CTF"), (std::vector<std::string>{b, a, c}));
  EXPECT_THROW(core::expand_data_files(dir.file("none*.ctf"), {}, "", "CTF"), IoError);
  EXPECT_THROW(core::expand_data_files(a, {a}, "", "CTF"), ConfigError);
  EXPECT_THROW(core::expand_data_files("", {}, "", "CTF"), ConfigError);
  EXPECT_THROW(core::expand_data_files(a, {}, dir.file("missing.txt"), "CTF"), IoError);
}

TEST(DataFiles, ASpecOverSeveralCtfFilesReadsTheirSequencesInOrderOneChunkPerFile) {
  TempDir dir("files");
  const std::string a = dir.write("a.ctf", "0 |x 0\n0 |x 1\n1 |x 2\n");
  const std::string b = dir.write("b.ctf", "2 |x 3\n3 |x 4\n3 |x 5\n");
  CtfOptions options;
  options.file = a;
  options.more_files = {b};
  options.streams = {CtfStreamOptions{"x", "x", 1, StorageFormat::kDense, false}};
  ReaderSpec spec;
  spec.source.randomize = false;
  spec.deserializers.push_back(DeserializerSpec{"CNTKTextFormatDeserializer", "", options, {}});
  auto source = MinibatchSource::create(spec);
  // What workers share out: the two files' chunks, once (the description also counts them per file).
  EXPECT_EQ(source->partition_chunks(), 2u);
  source->start_epoch(100, 0, kFullSweep, 0, 1);
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(mb.streams.at(0).layout.num_samples(), 6u);
}

TEST(DataFiles, OpeningManyFilesAtOnceKeepsTheirOrderAndReportsTheFirstFailingFile) {
  TempDir dir("files");
  std::vector<std::string> files;
  for (int k = 0; k < 12; ++k) {
    files.push_back(
        dir.write("s" + std::to_string(k) + ".ctf", std::to_string(k) + " |x " + std::to_string(k) + "\n"));
  }
  auto open = [](const std::string& file) {
    CtfOptions one;
    one.file = file;
    one.streams = {CtfStreamOptions{"x", "x", 1, StorageFormat::kDense, false}};
    return make_ctf_deserializer(one);
  };
  const std::vector<std::shared_ptr<Deserializer>> parts = core::open_data_files(files, open);
  ASSERT_EQ(parts.size(), files.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    ASSERT_NE(parts[k], nullptr);
    EXPECT_EQ(parts[k]->input_files().at(0).path, files[k]);
  }
  // Two missing files: the error names the first of them in the list's order, whichever thread failed first.
  std::vector<std::string> broken = files;
  broken[9] = dir.file("missing9.ctf");
  broken[3] = dir.file("missing3.ctf");
  try {
    core::open_data_files(broken, open);
    FAIL() << "a missing file opened";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("missing3.ctf"), std::string::npos) << e.what();
  }
}

namespace {

// Forwards to a file's deserializer, counting its look-ups by key.
class CountedLookups final : public Deserializer {
 public:
  explicit CountedLookups(std::shared_ptr<Deserializer> inner) : inner_(std::move(inner)) {}
  const std::vector<StreamInfo>& streams() const override { return inner_->streams(); }
  std::vector<ChunkInfo> chunk_infos() const override { return inner_->chunk_infos(); }
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    inner_->sequence_infos_for_chunk(chunk_id, out);
  }
  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    ++lookups;
    return inner_->sequence_info_by_key(key);
  }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return inner_->sequence_location(key);
  }
  ChunkPtr load_chunk(uint32_t chunk_id) override { return inner_->load_chunk(chunk_id); }
  mutable size_t lookups = 0;

 private:
  std::shared_ptr<Deserializer> inner_;
};

std::string ctf_lines(const std::vector<int>& keys) {
  std::string text;
  for (int k : keys) text += std::to_string(k) + " |x " + std::to_string(k) + "\n";
  return text;
}

}  // namespace

TEST(DataFiles, ALookUpByKeyAsksOnlyTheFilesWhoseKeysSpanItAndStillFindsAKeyHeldTwice) {
  TempDir dir("files");
  std::vector<int> evens, odds, high;
  for (int k = 0; k <= 18; k += 2) evens.push_back(k);  // spans 0..18
  for (int k = 1; k <= 5; k += 2) odds.push_back(k);    // spans 1..5, inside the first file's span
  for (int k = 20; k < 30; ++k) high.push_back(k);      // spans 20..29
  const std::vector<std::string> files = {dir.write("evens.ctf", ctf_lines(evens)),
                                          dir.write("odds.ctf", ctf_lines(odds)),
                                          dir.write("high.ctf", ctf_lines(high))};
  auto open = [&](const std::vector<std::string>& names) {
    std::vector<std::shared_ptr<Deserializer>> parts;
    std::vector<std::shared_ptr<CountedLookups>> counted;
    for (const std::string& name : names) {
      CtfOptions one;
      one.file = name;
      one.streams = {CtfStreamOptions{"x", "x", 1, StorageFormat::kDense, false}};
      counted.push_back(std::make_shared<CountedLookups>(make_ctf_deserializer(one)));
      parts.push_back(counted.back());
    }
    return std::make_pair(core::join_data_files(parts, names), counted);
  };
  auto [joined, counted] = open(files);
  auto lookups = [&counted = counted] {
    std::vector<size_t> n;
    for (const auto& c : counted) n.push_back(c->lookups);
    for (const auto& c : counted) c->lookups = 0;
    return n;
  };
  // Each file is one chunk: the joined chunk ids are 0, 1, 2.
  std::optional<SequenceInfo> info = joined->sequence_info_by_key(SequenceKey{25, 0});
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->chunk_id, 2u);
  EXPECT_EQ(info->index_in_chunk, 5u);
  EXPECT_EQ(lookups(), (std::vector<size_t>{0, 0, 1}));
  info = joined->sequence_info_by_key(SequenceKey{12, 0});  // inside the first span only
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->chunk_id, 0u);
  EXPECT_EQ(info->index_in_chunk, 6u);
  EXPECT_EQ(lookups(), (std::vector<size_t>{1, 0, 0}));
  info = joined->sequence_info_by_key(SequenceKey{3, 0});  // inside two spans: both asked
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->chunk_id, 1u);
  EXPECT_EQ(info->index_in_chunk, 1u);
  EXPECT_EQ(lookups(), (std::vector<size_t>{1, 1, 0}));
  EXPECT_FALSE(joined->sequence_info_by_key(SequenceKey{13, 0}).has_value());  // in a gap of a span
  EXPECT_EQ(lookups(), (std::vector<size_t>{1, 0, 0}));
  EXPECT_FALSE(joined->sequence_info_by_key(SequenceKey{19, 0}).has_value());  // between spans
  EXPECT_EQ(lookups(), (std::vector<size_t>{0, 0, 0}));
  EXPECT_EQ(joined->sequence_location(SequenceKey{21, 0}).file, files[2]);

  // A key held by a file whose span lies inside another's is still found twice, and named in file order.
  std::vector<std::string> twice = files;
  twice.push_back(dir.write("again.ctf", ctf_lines({7, 8})));
  auto [with_twice, unused] = open(twice);
  EXPECT_TRUE(with_twice->sequence_info_by_key(SequenceKey{7, 0}).has_value());
  try {
    with_twice->sequence_info_by_key(SequenceKey{8, 0});
    FAIL() << "a key held by two files was found once";
  } catch (const FormatError& e) {
    const std::string text = e.what();
    EXPECT_NE(text.find("held by two files"), std::string::npos) << text;
    EXPECT_LT(text.find("evens.ctf"), text.find("again.ctf")) << text;
  }
}
