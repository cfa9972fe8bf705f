// write_stream_batch, the text `cntkio dump` and the conformance runner write (shared/conformance/README.md
// §2): time-major lines, gaps skipped, sparse samples as dense rows up to kMaxDensifiedDim or as entries.
#include "pipeline/dump.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

StreamInfo stream(const std::string& name, StorageFormat storage, ElementType type, size_t dim) {
  StreamInfo info;
  info.name = name;
  info.alias = name;
  info.storage = storage;
  info.element_type = type;
  info.sample_shape = {dim};
  return info;
}

template <typename T>
void set_values(StreamBatch& batch, const std::vector<T>& values) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  batch.values.assign(bytes, bytes + values.size() * sizeof(T));
}

std::string written(const StreamBatch& batch, bool sparse_entries = false) {
  std::ostringstream out;
  write_stream_batch(batch, out, sparse_entries);
  return out.str();
}

// One parallel row per sequence, two time steps: even rows hold a 2-sample sequence, odd rows a 1-sample
// sequence and then a gap. Time step 0 of row s holds s, time step 1 holds -(s + 1): integers of at most 6
// digits, which %.6g writes as integers.
TEST(Dump, MillionColumnMinibatchIsWrittenInOnePassOverItsLayout) {
  constexpr size_t kRows = 500000;
  StreamBatch batch;
  batch.info = stream("x", StorageFormat::kDense, ElementType::kFloat, 1);
  batch.layout.num_parallel = kRows;
  batch.layout.num_time_steps = 2;
  std::vector<float> values(2 * kRows);
  for (size_t s = 0; s < kRows; ++s) {
    const bool longer = s % 2 == 0;
    batch.layout.entries.push_back({s, s, 0, longer ? 2 : 1, false});
    values[s] = static_cast<float>(s);
    values[kRows + s] = -static_cast<float>(s + 1);
  }
  for (size_t s = 1; s < kRows; s += 2) batch.layout.entries.push_back({0, s, 1, 2, true});
  set_values(batch, values);

  // Time step 0 of every row, then time step 1 of the even rows.
  std::string expected;
  for (size_t s = 0; s < kRows; ++s) expected += std::to_string(s) + "\n";
  for (size_t s = 0; s < kRows; s += 2) expected += "-" + std::to_string(s + 1) + "\n";
  // Before the gap lookup was made one pass per minibatch, this took hours (columns times entries).
  EXPECT_TRUE(written(batch) == expected);
}

StreamBatch sparse_batch(size_t dim) {
  // Two samples of one sequence: {1: 0.5, 3: 2, 1: 7} (a duplicate index) and {} (no entries).
  StreamBatch batch;
  batch.info = stream("y", StorageFormat::kSparseCsc, ElementType::kDouble, dim);
  batch.layout.num_parallel = 1;
  batch.layout.num_time_steps = 2;
  batch.layout.entries.push_back({0, 0, 0, 2, false});
  batch.col_starts = {0, 3, 3};
  batch.row_indices = {1, 3, 1};
  set_values<double>(batch, {0.5, 2, 7});
  return batch;
}

TEST(Dump, SparseSamplesAreDenseRowsWhereTheLastDuplicateWins) {
  EXPECT_EQ(written(sparse_batch(5)), "0 7 0 2 0\n0 0 0 0 0\n");
}

TEST(Dump, SparseEntriesAreWrittenAsStoredWithoutDensifying) {
  EXPECT_EQ(written(sparse_batch(5), true), "1:0.5 3:2 1:7\n\n");
  EXPECT_EQ(written(sparse_batch(2147483647), true), "1:0.5 3:2 1:7\n\n");
}

TEST(Dump, SparseStreamAboveTheDensifiedLimitIsRefused) {
  EXPECT_EQ(written(sparse_batch(kMaxDensifiedDim)).size(), 2 * 2 * kMaxDensifiedDim);
  try {
    written(sparse_batch(kMaxDensifiedDim + 1));
    FAIL() << "a sparse stream of dim " << kMaxDensifiedDim + 1 << " was densified";
  } catch (const UsageError& e) {
    EXPECT_STREQ(
        e.what(),
        ("Stream 'y' is sparse with dim " + std::to_string(kMaxDensifiedDim + 1) +
         ", above the largest dim dump writes as dense rows (" + std::to_string(kMaxDensifiedDim) +
         "): write its samples as index:value entries (cntkio dump --sparse-entries), or leave it out.")
            .c_str());
  }
}

TEST(Dump, BatchesThatPointOutsideTheirDataAreRefused) {
  StreamBatch index_past_dim = sparse_batch(3);
  EXPECT_THROW(written(index_past_dim), UsageError);
  EXPECT_THROW(written(index_past_dim, true), UsageError);
  StreamBatch starts_past_entries = sparse_batch(5);
  starts_past_entries.col_starts = {0, 3, 4};
  EXPECT_THROW(written(starts_past_entries), UsageError);
  StreamBatch dense_short = sparse_batch(5);
  dense_short.info.storage = StorageFormat::kDense;  // 3 doubles for 2 columns of dim 5
  EXPECT_THROW(written(dense_short), UsageError);
}

}  // namespace
// spec config.md §4: the reader tests' helper resolves the variables of the whole file once, so a $name$ that
// nothing defines fails the run even in a section the reader never reads.
TEST(Dump, AnUnresolvableVariableAnywhereInTheFileFailsAsInCntksReaderTests) {
  const std::string dir = ::testing::TempDir();
  const std::string data = dir + "/dump_vars.ctf";
  std::ofstream(data) << "0 |a 1\n";
  const std::string config = dir + "/dump_vars.cntk";
  std::ofstream(config)
      << "Other = [ x = $nope$ ]\nS = [ reader = [ readerType = CNTKTextFormatReader ; file = \"" << data
      << "\" ; randomize = false ; input = [ a = [ dim = 1 ; format = dense ] ] ] ]\n";
  DumpOptions options;
  options.config_file = config;
  options.section = "S";
  options.minibatch_size = 1;
  std::ostringstream out;
  try {
    run_dump(options, out);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

}  // namespace cntkio::pipeline

namespace cntkio::pipeline {

// conformance README §2: CNTK's harness asks for a minibatch before it counts, so with more minibatches than
// the cap it reads one more and drops it; an error there fails the run.
TEST(Dump, TheMinibatchAfterTheCapIsReadAndDropped) {
  const std::string dir = ::testing::TempDir();
  const std::string data = dir + "/dump_cap.ctf";
  {
    std::ofstream out(data);
    for (int i = 0; i < 10; ++i) out << i << " |a " << i << "\n";
    out << "10 |a x\n";
  }
  const std::string config = dir + "/dump_cap.cntk";
  std::ofstream(config)
      << "S = [ reader = [ readerType = CNTKTextFormatReader ; file = \"" << data
      << "\" ; randomize = false ; chunkSizeInBytes = 8 ; input = [ a = [ dim = 1 ; format = "
         "dense ] ] ] ]\n";
  DumpOptions options;
  options.config_file = config;
  options.section = "S";
  options.minibatch_size = 1;
  std::ostringstream out;
  EXPECT_THROW(run_dump(options, out), FormatError);
  options.max_minibatches = 9;  // the 10th minibatch, read and dropped, is a good one
  std::ostringstream nine;
  run_dump(options, nine);
  EXPECT_EQ(nine.str(), "0\n1\n2\n3\n4\n5\n6\n7\n8\n");
}

}  // namespace cntkio::pipeline
