// The CTF index cache is used only for the exact data file it describes (issue #21: a data file changed in
// the same second as its cache was trusted, and appended rows were lost), and temporaries left by writers
// that died are removed by the next writer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "config/config_test_util.hpp"
#include "formats/ctf/ctf_index.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;
namespace fs = std::filesystem;

namespace {

CtfOptions cached_options(const std::string& file) {
  CtfOptions o;
  o.file = file;
  CtfStreamOptions x;
  x.name = "x";
  x.dim = 1;
  o.streams = {x};
  o.cache_index = true;
  o.trace_level = 0;
  return o;
}

std::vector<uint64_t> keys_of(const Deserializer& d) {
  std::vector<uint64_t> keys;
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    for (const SequenceInfo& s : infos) keys.push_back(s.key.sequence);
  }
  return keys;
}

struct timespec mtime_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  return st.st_mtim;
}

void set_mtime(const std::string& path, struct timespec when) {
  const struct timespec times[2] = {when, when};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
}

std::string rows(int first, int count) {
  std::string text;
  for (int k = first; k < first + count; ++k) text += std::to_string(k) + " |x " + std::to_string(k) + "\n";
  return text;
}

}  // namespace

TEST(CtfCacheStaleness, RowsAppendedInTheSameSecondAsTheCacheAreRead) {
  TempDir dir;
  const std::string data = dir.write("d.ctf", rows(0, 3));
  const CtfOptions o = cached_options(data);
  ASSERT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).cache_written);
  const std::string cache = data + "._.0.0.0.v1.cache";
  // Appended rows, and a modification time that a seconds-resolution check cannot tell from the cache's.
  { std::ofstream(data, std::ios::app) << rows(3, 2); }
  struct timespec same_second = mtime_of(cache);
  same_second.tv_nsec = 0;
  set_mtime(data, same_second);
  auto d = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*d).loaded_from_cache);
  EXPECT_TRUE(ctf_index_summary(*d).cache_was_stale);
  EXPECT_EQ(keys_of(*d), (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  // The cache was written again for the new file and is used next time.
  EXPECT_TRUE(ctf_index_summary(*d).cache_written);
  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).loaded_from_cache);
}

TEST(CtfCacheStaleness, SameSizeAndTimeButOtherBytesIsStale) {
  TempDir dir;
  // Ten rows of one sequence each; the rewrite keeps every size and line but joins rows 0 and 1 into one
  // sequence (the same id twice), which a stale cache would still describe as two.
  const std::string data = dir.write("d.ctf", rows(0, 10));
  const CtfOptions o = cached_options(data);
  make_ctf_deserializer(o);
  const struct timespec written = mtime_of(data);
  std::string changed = rows(0, 10);
  changed[changed.find("\n1 ") + 1] = '0';
  dir.write("d.ctf", changed);
  set_mtime(data, written);  // size and nanosecond time as before (cp -p, rsync -t)
  auto d = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*d).loaded_from_cache);
  EXPECT_EQ(keys_of(*d).size(), 9u);
}

TEST(CtfCacheStaleness, ACacheWithoutCntkiosStampMustBeNewerToTheNanosecond) {
  TempDir dir;
  const std::string data = dir.write("d.ctf", rows(0, 4));
  const CtfOptions o = cached_options(data);
  make_ctf_deserializer(o);
  const std::string cache = data + "._.0.0.0.v1.cache";
  fs::resize_file(cache, 32 + 32 * 4);  // the layout CNTK writes: prefix and records only
  struct timespec cache_time = mtime_of(cache);
  set_mtime(data, cache_time);  // the same instant: not newer
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(o)).loaded_from_cache);
  fs::resize_file(cache, 32 + 32 * 4);
  cache_time.tv_sec -= 5;
  set_mtime(data, cache_time);
  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(o)).loaded_from_cache);
}

TEST(CtfCacheStaleness, TheNextWriterRemovesTemporariesOfWritersThatDied) {
  TempDir dir;
  const std::string data = dir.write("d.ctf", rows(0, 4));
  const std::string cache = data + "._.0.0.0.v1.cache";
  char host[256] = {};
  ASSERT_EQ(::gethostname(host, sizeof host - 1), 0);
  std::string this_host(host);
  for (char& c : this_host) {
    if (c == '.' || c == '/') c = '_';
  }
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_GT(dead, 0);
  ::waitpid(dead, nullptr, 0);
  const std::string of_dead_writer = dir.write(
      cache.substr(cache.rfind('/') + 1) + ".tmp." + this_host + "." + std::to_string(dead), "half a cache");
  const std::string of_old_version =
      dir.write(cache.substr(cache.rfind('/') + 1) + ".tmp." + std::to_string(dead), "half a cache");
  const std::string of_live_writer =
      dir.write(cache.substr(cache.rfind('/') + 1) + ".tmp." + this_host + ".1", "being written");
  const std::string of_other_host =
      dir.write(cache.substr(cache.rfind('/') + 1) + ".tmp.elsewhere.12345", "being written elsewhere");
  const std::string of_abandoned =
      dir.write(cache.substr(cache.rfind('/') + 1) + ".tmp.faraway.777", "abandoned two hours ago");
  struct timespec old = mtime_of(of_abandoned);
  old.tv_sec -= 7200;
  set_mtime(of_abandoned, old);
  const std::string unrelated = dir.write("d.ctf.notes.tmp.1", "not a cache temporary");

  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(cached_options(data))).cache_written);
  EXPECT_FALSE(fs::exists(of_dead_writer));
  EXPECT_FALSE(fs::exists(of_old_version));
  EXPECT_FALSE(fs::exists(of_abandoned));
  EXPECT_TRUE(fs::exists(of_live_writer));  // process 1 is alive
  EXPECT_TRUE(fs::exists(of_other_host));   // another machine's writer may still be at work
  EXPECT_TRUE(fs::exists(unrelated));
  EXPECT_TRUE(fs::exists(cache));
}

TEST(CtfCacheStaleness, StampChangesWithSizeTimeAndTheFirstAndLastBytes) {
  const std::string text(200000, 'a');
  core::FileIdentity id;
  id.size = text.size();
  id.mtime_ns = 5;
  const ctf::DataFileStamp base = ctf::stamp_data_file(text, id);
  std::string head = text;
  head[10] = 'b';
  std::string tail = text;
  tail[text.size() - 10] = 'b';
  std::string middle = text;
  middle[100000] = 'b';  // outside both blocks: not seen (the stamp is not a checksum of the whole file)
  EXPECT_NE(ctf::stamp_data_file(head, id), base);
  EXPECT_NE(ctf::stamp_data_file(tail, id), base);
  EXPECT_EQ(ctf::stamp_data_file(middle, id), base);
  core::FileIdentity later = id;
  later.mtime_ns = 6;
  EXPECT_NE(ctf::stamp_data_file(text, later), base);
}

// A cached index does not record whether the file has sequence ids (CNTK's layout has no room for it): the
// summary reads it from the file when asked, so that an open with a valid cache reads nothing of the file.
TEST(CtfCacheStaleness, ACachedIndexTellsTheLineModeWhenAsked) {
  TempDir dir;
  const std::string with_ids = dir.write("ids.ctf", "\xEF\xBB\xBF  \n" + rows(0, 3));
  const std::string lines = dir.write("lines.ctf", "\n|x 1\n|x 2\n");
  for (const auto& [data, line_mode] : {std::pair{with_ids, false}, std::pair{lines, true}}) {
    const CtfOptions o = cached_options(data);
    const CtfIndexSummary written = ctf_index_summary(*make_ctf_deserializer(o));
    ASSERT_TRUE(written.cache_written) << data;
    EXPECT_EQ(written.line_mode, line_mode) << data;
    auto cached = make_ctf_deserializer(o);
    ASSERT_TRUE(ctf_index_summary(*cached).loaded_from_cache) << data;
    EXPECT_EQ(ctf_index_summary(*cached).line_mode, line_mode) << data;
    const std::string described = cached->describe().front();
    EXPECT_NE(described.find(line_mode ? "one sequence per line" : "sequence ids"), std::string::npos)
        << described;
  }
}

// A folder where the cache belongs: the data is read (indexed anew) and the reason names the temporary the
// cache writer uses, not another writer's.
TEST(CtfCacheStaleness, AFolderAtTheCachePathIsReportedWithTheWritersTemporary) {
  TempDir dir;
  const std::string data = dir.write("d.ctf", rows(0, 4));
  fs::create_directory(data + "._.0.0.0.v1.cache");
  auto d = make_ctf_deserializer(cached_options(data));
  EXPECT_EQ(keys_of(*d).size(), 4u);
  const CtfIndexSummary summary = ctf_index_summary(*d);
  EXPECT_FALSE(summary.cache_written);
  EXPECT_NE(summary.cache_not_written_reason.find("a directory"), std::string::npos)
      << summary.cache_not_written_reason;
  EXPECT_NE(summary.cache_not_written_reason.find(".cache.tmp."), std::string::npos)
      << summary.cache_not_written_reason;
  EXPECT_EQ(summary.cache_not_written_reason.find(".partial"), std::string::npos)
      << summary.cache_not_written_reason;
}
