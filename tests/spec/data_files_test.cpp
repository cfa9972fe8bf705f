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
