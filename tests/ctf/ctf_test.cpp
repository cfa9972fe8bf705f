// Behaviour of the CTF deserializer: spec ctf.md §4 (index), §5 (cache), §6 (parser and errors).
#include "cntkio/ctf.hpp"

#include <gtest/gtest.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"

namespace fs = std::filesystem;
using namespace cntkio;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("cntkio_ctf_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& content) const {
    std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

CtfStreamOptions dense(const std::string& name, size_t dim) {
  CtfStreamOptions s;
  s.name = name;
  s.dim = dim;
  return s;
}
CtfStreamOptions sparse(const std::string& name, size_t dim) {
  CtfStreamOptions s = dense(name, dim);
  s.storage = StorageFormat::kSparseCsc;
  return s;
}

struct Parsed {
  std::vector<std::vector<std::vector<float>>> dense;  // [sequence][stream] values (dense streams)
  std::vector<std::vector<uint32_t>> samples;          // [sequence][stream]
  std::vector<uint64_t> keys;
  std::string log;
};

CtfOptions options_for(const std::string& file, std::vector<CtfStreamOptions> streams,
                       uint64_t max_errors = 0) {
  CtfOptions o;
  o.file = file;
  o.streams = std::move(streams);
  o.max_errors = max_errors;
  o.trace_level = 1;
  return o;
}

Parsed read_all(CtfOptions o) {
  Parsed p;
  o.log_sink = [&p](int, std::string_view line) {
    p.log.append(line);
    p.log.push_back('\n');
  };
  auto d = make_ctf_deserializer(o);
  for (const ChunkInfo& c : d->chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d->sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = d->load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(info.index_in_chunk, data);
      p.keys.push_back(info.key.sequence);
      std::vector<std::vector<float>> values;
      std::vector<uint32_t> counts;
      for (size_t s = 0; s < data.size(); ++s) {
        counts.push_back(data[s].number_of_samples);
        const auto* v = static_cast<const float*>(data[s].values);
        size_t n = o.streams[s].storage == StorageFormat::kDense
                       ? data[s].number_of_samples * o.streams[s].dim
                       : data[s].total_nnz;
        values.emplace_back(v, v + n);
      }
      p.dense.push_back(values);
      p.samples.push_back(counts);
    }
  }
  return p;
}

// Runs `content` through the parser and returns the FormatError it raises.
FormatError expect_format_error(const std::string& content, std::vector<CtfStreamOptions> streams,
                                uint64_t max_errors = 0, bool skip_ids = false) {
  TempDir dir;
  std::string file = dir.write("data.ctf", content);
  CtfOptions o = options_for(file, std::move(streams), max_errors);
  o.skip_sequence_ids = skip_ids;
  o.trace_level = 0;
  try {
    read_all(o);
  } catch (const FormatError& e) {
    return e;
  }
  ADD_FAILURE() << "no FormatError for: " << content;
  return FormatError("none", {});
}

void expect_budget_error_at(const std::string& content, std::vector<CtfStreamOptions> streams, uint64_t line,
                            uint64_t column) {
  FormatError e = expect_format_error(content, std::move(streams));
  EXPECT_EQ(e.cntk_text(), "Reached the maximum number of allowed errors while reading the input file (" +
                               e.location().file + ").");
  EXPECT_NE(e.location().file.find("data.ctf"), std::string::npos);
  ASSERT_TRUE(e.location().line.has_value());
  EXPECT_EQ(*e.location().line, line) << e.what();
  ASSERT_TRUE(e.location().column.has_value());
  EXPECT_EQ(*e.location().column, column) << e.what();
  EXPECT_NE(std::string(e.what()).find("line " + std::to_string(line)), std::string::npos) << e.what();
}

}  // namespace

TEST(CtfParser, ReadsDenseAndSparseWithIds) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "7 |x 1 2 |y 3:0.5\n7 |x 3 4\n9\t|y 0:1 2:2 |x -1.5e1 +2.\n");
  Parsed p = read_all(options_for(f, {dense("x", 2), sparse("y", 4)}));
  ASSERT_EQ(p.keys, (std::vector<uint64_t>{7, 9}));
  EXPECT_EQ(p.dense[0][0], (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(p.dense[0][1], (std::vector<float>{0.5f}));
  EXPECT_EQ(p.samples[0], (std::vector<uint32_t>{2, 1}));
  EXPECT_EQ(p.dense[1][0], (std::vector<float>{-15, 2}));
  EXPECT_EQ(p.dense[1][1], (std::vector<float>{1, 2}));
}

TEST(CtfParser, LineModeKeysAreLineNumbersCountingLeadingBlankLines) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "\xEF\xBB\xBF\n\n|x 1\n|x 2\r\n|x 3");
  Parsed p = read_all(options_for(f, {dense("x", 1)}));
  EXPECT_EQ(p.keys, (std::vector<uint64_t>{2, 3, 4}));
  EXPECT_EQ(p.dense[2][0], (std::vector<float>{3}));
}

TEST(CtfParser, NumbersFollowCntkStateMachine) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "|x 45. 02.0 9.10e-11 1E+05 -6.4265e+020\n");
  Parsed p = read_all(options_for(f, {dense("x", 5)}));
  EXPECT_EQ(p.dense[0][0], (std::vector<float>{45.f, 2.f, 9.1e-11f, 1e5f, -6.4265e20f}));
}

TEST(CtfParser, DoubleUsesCntkFormulaNotStrtod) {
  // spec §6.6: 71.792817565 is 0x1.1f2bd85e257a4p+6 with CNTK's N + F/D, strtod gives ...a3p+6.
  TempDir dir;
  std::string f = dir.write("a.ctf", "|x 71.792817565\n");
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.element_type = ElementType::kDouble;
  auto d = make_ctf_deserializer(o);
  std::vector<SequenceData> data;
  ChunkPtr chunk = d->load_chunk(0);
  chunk->get_sequence(0, data);
  EXPECT_EQ(static_cast<const double*>(data[0].values)[0], 0x1.1f2bd85e257a4p+6);
}

TEST(CtfParser, FewerDenseValuesAreZeroPaddedEvenAtEndOfFile) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "|x 1\n|x 1 2");
  Parsed p = read_all(options_for(f, {dense("x", 3)}));
  EXPECT_EQ(p.dense[0][0], (std::vector<float>{1, 0, 0}));
  // CNTK leaves this last sample with 2 values (misaligned); we pad it (docs/differences-from-cntk.md).
  EXPECT_EQ(p.dense[1][0], (std::vector<float>{1, 2, 0}));
  EXPECT_NE(p.log.find("has a sparse suffix (expected size = 3, actual size = 1)"), std::string::npos);
}

TEST(CtfParser, CommentsAndUnknownInputsAreNotErrors) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "1 |# note |x 1 |unknown 5 6\n1 |unknown |#c |x 2\n");
  Parsed p = read_all(options_for(f, {dense("x", 1)}));
  EXPECT_EQ(p.samples[0][0], 2u);
  EXPECT_EQ(p.dense[0][0], (std::vector<float>{1, 2}));
}

TEST(CtfErrors, BadNumberNamesFileLineAndColumn) {
  expect_budget_error_at("1 |x 1\n1 |x 2,0\n", {dense("x", 1)}, 2, 7);
}

TEST(CtfErrors, SparseIndexNotBelowDim) {
  expect_budget_error_at("1 |y 3:1\n1 |y 10:1\n", {sparse("y", 10)}, 2, 8);
}

TEST(CtfErrors, EmptyNameAfterPrefix) {
  expect_budget_error_at("1 |x 1\n1 | x 1\n", {dense("x", 1)}, 2, 4);
}

TEST(CtfErrors, TooManyDenseValues) {
  expect_budget_error_at("1 |x 1 2 3\n", {dense("x", 2)}, 1, 11);
}

TEST(CtfErrors, BlankLineInsideSequence) {
  // The blank row fails (error 1) once its LF is consumed; the error names the row, line 2.
  expect_budget_error_at("1 |x 1\n\n2 |x 2\n", {dense("x", 1)}, 2, 1);
}

TEST(CtfErrors, UnknownAliasOnlyRowIsAnError) {
  // An unknown input is skipped silently, but a row with nothing else fails (named by its start).
  expect_budget_error_at("1 |x 1\n1 |z 2\n", {dense("x", 1)}, 2, 1);
}

TEST(CtfErrors, MissingTrailingNewlineWithValueIsFine) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "|x 6.78");
  Parsed p = read_all(options_for(f, {dense("x", 1)}));
  EXPECT_EQ(p.dense[0][0], (std::vector<float>{6.78f}));
  EXPECT_NE(p.log.find("Possibly, a trailing newline is missing."), std::string::npos);
}

TEST(CtfErrors, NameCutByEndOfFileIsAnError) {
  expect_budget_error_at("|x 1\n|x", {dense("x", 1)}, 2, 3);
}

TEST(CtfErrors, SequenceIdOverflowIsFatal) {
  FormatError e = expect_format_error("99999999999999999999 |x 1\n", {dense("x", 1)});
  EXPECT_NE(e.cntk_text().find("Overflow while reading a sequence id"), std::string::npos);
  EXPECT_EQ(*e.location().line, 1u);
}

TEST(CtfErrors, EmptyFileIsFatal) {
  FormatError e = expect_format_error("", {dense("x", 1)});
  EXPECT_EQ(e.cntk_text(), "Input file is empty.");
  EXPECT_NE(std::string(e.what()).find("data.ctf"), std::string::npos);
  FormatError blank = expect_format_error(" \n\t\n", {dense("x", 1)});
  EXPECT_NE(blank.cntk_text().find("Input file is empty"), std::string::npos);
}

TEST(CtfErrors, Utf16BomIsFatal) {
  FormatError e = expect_format_error(std::string("\xFF\xFE|\0x\0", 6), {dense("x", 1)});
  EXPECT_NE(e.cntk_text().find("UTF-16"), std::string::npos);
  EXPECT_EQ(*e.location().line, 1u);
  EXPECT_EQ(*e.location().byte_offset, 0u);
}

TEST(CtfErrors, MissingIdInIdModeIsFatal) {
  FormatError e = expect_format_error("12", {dense("x", 1)});
  EXPECT_NE(e.cntk_text().find("Expected a sequence id at the offset 0"), std::string::npos);
}

TEST(CtfErrors, StreamEmptyForWholeSequenceIsFatalWhateverTheBudget) {
  FormatError e = expect_format_error("1 |x 1\n2 |y 1:1\n", {dense("x", 1), sparse("y", 2)}, 1000);
  EXPECT_EQ(e.cntk_text(), "Malformed input file. Bailing out.");
  EXPECT_EQ(e.location().sequence_key, "1");
  EXPECT_EQ(e.location().stream, "y");
}

TEST(CtfErrors, DuplicateInputOnOneLine) {
  // A count error of the whole sequence: named by the sequence's first line.
  expect_budget_error_at("1 |a 1.0 |b 2.0 |b 3.0\n", {dense("a", 1), dense("b", 1)}, 1, 1);
}

TEST(CtfMaxErrors, RepeatedEmptyDenseSamplesArePaddedInPlace) {
  // A dense stream named again on its row with no values: each occurrence is a zero-padded sample (the row
  // has more samples than the sequence's lines: one error). The padding grows the buffer where it is;
  // it once filled up to an end taken before the buffer moved (a heap overrun, a crash here).
  TempDir dir;
  std::string row = "|a 1";
  for (int i = 0; i < 200; ++i) row += " |a";
  const std::string f = dir.write("a.ctf", "|a |a |a\n|a 1 |a 2 |a\n" + row + "\n");
  Parsed p = read_all(options_for(f, {dense("a", 50)}, 100));
  ASSERT_EQ(p.dense.size(), 3u);
  auto padded = [](std::vector<float> head, size_t samples) {
    head.resize(samples * 50, 0.0f);
    return head;
  };
  std::vector<float> second = padded({2}, 2);
  second.insert(second.begin(), 49, 0.0f);
  second.insert(second.begin(), 1.0f);
  EXPECT_EQ(p.dense[0][0], padded({}, 3));
  EXPECT_EQ(p.dense[1][0], padded(second, 3));
  EXPECT_EQ(p.dense[2][0], padded({1}, 201));
  EXPECT_EQ(p.samples[2][0], 201u);
}

TEST(CtfMaxErrors, SkipsExactlyTheBadSamplesAndCountsThem) {
  // Row 2 has a bad value (error 1), row 3 a bad sparse index (error 2), and sequence 1 then has fewer
  // samples of x than rows (error 3). maxErrors = 3 tolerates all; 2 does not.
  const std::string content = "1 |x 1 |y 0:1\n1 |x 2,0 |y 1:1\n1 |x 3 |y 9:1\n2 |x 4 |y 1:2\n";
  TempDir dir;
  std::string f = dir.write("a.ctf", content);
  CtfOptions o = options_for(f, {dense("x", 1), sparse("y", 3)}, 3);
  o.trace_level = 0;
  auto d = make_ctf_deserializer(o);
  ChunkPtr chunk = d->load_chunk(0);
  std::vector<SequenceData> data;
  chunk->get_sequence(0, data);
  EXPECT_EQ(data[0].number_of_samples, 2u);  // x: rows 1 and 3
  EXPECT_EQ(static_cast<const float*>(data[0].values)[0], 1.f);
  EXPECT_EQ(static_cast<const float*>(data[0].values)[1], 3.f);
  EXPECT_EQ(data[1].number_of_samples, 2u);  // y: rows 1 and 2
  EXPECT_EQ(data[1].indices[1], 1);
  CtfErrorSummary summary = ctf_error_summary(*d);
  EXPECT_EQ(summary.errors, 3u);
  ASSERT_EQ(summary.first_locations.size(), 3u);
  EXPECT_NE(summary.first_locations[0].find(":2:7"), std::string::npos) << summary.first_locations[0];

  o.max_errors = 2;
  auto strict = make_ctf_deserializer(o);
  EXPECT_THROW(strict->load_chunk(0), FormatError);
}

TEST(CtfMaxErrors, BudgetIsNotResetBetweenChunkLoads) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "1 |x 1\n1 |x bad\n");
  // Each load costs 3 errors: the bad value, the row without a sample, the sequence shorter than its rows.
  CtfOptions o = options_for(f, {dense("x", 1)}, 3);
  o.trace_level = 0;
  auto d = make_ctf_deserializer(o);
  EXPECT_NO_THROW(d->load_chunk(0));
  EXPECT_THROW(d->load_chunk(0), FormatError);
}

TEST(CtfIndex, DefinesMbSizeCountsOnlyLinesWithTheMainStream) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "1 |a 1 |b 1\n1 |b 2\n1 |a 3\n2 |b 4\n3 |a 5\n");
  CtfOptions o = options_for(f, {dense("a", 1), dense("b", 1)});
  o.streams[0].defines_mb_size = true;
  auto d = make_ctf_deserializer(o);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(0, infos);
  ASSERT_EQ(infos.size(), 2u);  // sequence 2 has no |a and is dropped from the index
  EXPECT_EQ(infos[0].key.sequence, 1u);
  EXPECT_EQ(infos[0].number_of_samples, 2u);
  EXPECT_EQ(infos[1].key.sequence, 3u);
}

TEST(CtfIndex, ChunksAreFormedGreedilyBySpan) {
  TempDir dir;
  // Three sequences of 10 bytes each; a 25-byte limit gives {s0, s1}, {s2}.
  std::string f = dir.write("a.ctf", "1 |x 1.00\n2 |x 2.00\n3 |x 3.00\n");
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.chunk_size_in_bytes = 25;
  auto d = make_ctf_deserializer(o);
  auto chunks = d->chunk_infos();
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0].number_of_sequences, 2u);
  EXPECT_EQ(chunks[1].number_of_sequences, 1u);
}

TEST(CtfIndexCache, SecondOpenOfLargeFileUsesCacheWithIdenticalData) {
  TempDir dir;
  std::string path = (dir.path() / "big.ctf").string();
  {
    std::ofstream out(path, std::ios::binary);
    std::mt19937_64 rng(5);
    std::string line;
    uint64_t bytes = 0;
    for (uint64_t seq = 0; bytes < (100ull << 20); ++seq) {
      int rows = 1 + static_cast<int>(rng() % 4);
      for (int r = 0; r < rows; ++r) {
        line = std::to_string(seq) + " |x " + std::to_string(rng() % 1000) + "." +
               std::to_string(rng() % 1000) + " " + std::to_string(rng() % 97) + " |y " +
               std::to_string(rng() % 50) + ":1\n";
        out << line;
        bytes += line.size();
      }
    }
  }
  CtfOptions o = options_for(path, {dense("x", 2), sparse("y", 50)});
  o.cache_index = true;
  o.chunk_size_in_bytes = 8 << 20;
  auto first = make_ctf_deserializer(o);
  CtfIndexSummary s1 = ctf_index_summary(*first);
  EXPECT_FALSE(s1.loaded_from_cache);
  EXPECT_EQ(s1.cache_file, path + "._.0.0.0.v1.cache");
  ASSERT_TRUE(fs::exists(s1.cache_file));
  // CNTK's prefix and records, then cntkio's chunk table (32 bytes a chunk) and its 48-byte footer.
  EXPECT_EQ(fs::file_size(s1.cache_file), 32 + 32 * s1.sequences + 32 * s1.chunks + 80);

  auto second = make_ctf_deserializer(o);
  CtfIndexSummary s2 = ctf_index_summary(*second);
  EXPECT_TRUE(s2.loaded_from_cache);
  EXPECT_TRUE(s2.lazy_sequence_records);
  EXPECT_EQ(s2.sequences, s1.sequences);
  EXPECT_EQ(s2.samples, s1.samples);
  ASSERT_EQ(second->chunk_infos().size(), first->chunk_infos().size());
  for (uint32_t c : {0u, static_cast<uint32_t>(s1.chunks - 1)}) {
    std::vector<SequenceInfo> a, b;
    first->sequence_infos_for_chunk(c, a);
    second->sequence_infos_for_chunk(c, b);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].key.sequence, b[i].key.sequence);
      EXPECT_EQ(a[i].number_of_samples, b[i].number_of_samples);
    }
    ChunkPtr ca = first->load_chunk(c), cb = second->load_chunk(c);
    std::vector<SequenceData> da, db;
    ca->get_sequence(static_cast<uint32_t>(a.size() - 1), da);
    cb->get_sequence(static_cast<uint32_t>(b.size() - 1), db);
    ASSERT_EQ(da[0].number_of_samples, db[0].number_of_samples);
    for (size_t k = 0; k < 2 * da[0].number_of_samples; ++k) {
      EXPECT_EQ(static_cast<const float*>(da[0].values)[k], static_cast<const float*>(db[0].values)[k]);
    }
  }

  // A data file newer than its cache invalidates the cache.
  struct timeval times[2];
  ::gettimeofday(&times[0], nullptr);
  times[0].tv_sec += 10;
  times[1] = times[0];
  ASSERT_EQ(::utimes(path.c_str(), times), 0);
  auto third = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*third).loaded_from_cache);
}

// Only local rank 0 of a job writes the cache (the others read it once it is there); torchrun's LOCAL_RANK
// counts as well as OpenMPI's.
TEST(CtfIndexCache, OnlyLocalRankZeroWritesTheCache) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "1 |x 1\n2 |x 2\n");
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.cache_index = true;
  const std::string cache = f + "._.0.0.0.v1.cache";
  for (const char* variable : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    ::setenv(variable, "1", 1);
    auto d = make_ctf_deserializer(o);
    ::unsetenv(variable);
    const CtfIndexSummary summary = ctf_index_summary(*d);
    EXPECT_EQ(summary.sequences, 2u);
    EXPECT_FALSE(fs::exists(cache)) << variable;
    EXPECT_FALSE(summary.cache_written);
    EXPECT_EQ(summary.cache_not_written_reason, "local rank 0 of this machine writes it");
  }
  ::setenv("LOCAL_RANK", "0", 1);
  auto writer = make_ctf_deserializer(o);
  ::unsetenv("LOCAL_RANK");
  EXPECT_TRUE(fs::exists(cache));
  EXPECT_TRUE(ctf_index_summary(*writer).cache_written);
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(o)).cache_written);  // used, not written again
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().string().find(".tmp"), std::string::npos) << entry.path();
  }
}

// A second deserializer of a file another one of this process has indexed, with the same id options and chunk
// size, takes that index (one scan per process, and per DataLoader parent): only while the first holds it,
// only for numeric ids, and only for a file that has been still for a second, since file times tick coarsely
// and a rewrite within one tick could otherwise go unseen.
TEST(CtfIndexShared, SameFileAndOptionsShareOneIndexWhileItIsHeld) {
  TempDir dir;
  std::string text;
  for (int s = 0; s < 40; ++s) text += std::to_string(s) + " |x " + std::to_string(s) + " |y 1\n";
  const std::string settled = dir.write("settled.ctf", text);
  const std::string plain = dir.write("plain.ctf", "1 |x 1\n2 |x 2\n");
  ::sleep(2);  // longer than the settling time
  CtfOptions o = options_for(settled, {dense("x", 1), dense("y", 1)});
  o.chunk_size_in_bytes = 100;
  auto first = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*first).shared_in_process);
  auto second = make_ctf_deserializer(o);
  EXPECT_TRUE(ctf_index_summary(*second).shared_in_process);
  EXPECT_EQ(ctf_index_summary(*second).sequences, 40u);
  EXPECT_EQ(second->chunk_infos().size(), first->chunk_infos().size());
  EXPECT_GT(second->chunk_infos().size(), 1u);
  EXPECT_EQ(read_all(o).dense, read_all(options_for(settled, o.streams)).dense);

  // Anything the index depends on makes its own.
  CtfOptions other_chunks = o;
  other_chunks.chunk_size_in_bytes = 1000;
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(other_chunks)).shared_in_process);
  CtfOptions line_mode = o;
  line_mode.skip_sequence_ids = true;
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(line_mode)).shared_in_process);
  CtfOptions main_stream = o;
  main_stream.streams[1].defines_mb_size = true;
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(main_stream)).shared_in_process);
  for (KeyMode mode : {KeyMode::kString, KeyMode::kHashed}) {
    CtfOptions keyed = o;
    keyed.keys = std::make_shared<KeyTable>(mode);
    auto a = make_ctf_deserializer(keyed);
    keyed.keys = std::make_shared<KeyTable>(mode);
    auto b = make_ctf_deserializer(keyed);
    EXPECT_FALSE(ctf_index_summary(*b).shared_in_process);
    std::vector<SequenceInfo> infos;
    b->sequence_infos_for_chunk(0, infos);
    ASSERT_FALSE(infos.empty());
    EXPECT_EQ(b->key_to_string(infos[0].key), "0");  // b's own key table knows its keys
  }

  // A file changed since: new content (same size), read as such.
  { std::ofstream(settled, std::ios::binary) << std::string(text).replace(text.find("|x 0"), 4, "|x 7"); }
  auto rewritten = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*rewritten).shared_in_process);
  ChunkPtr chunk = rewritten->load_chunk(0);
  std::vector<SequenceData> data;
  chunk->get_sequence(0, data);
  EXPECT_EQ(static_cast<const float*>(data[0].values)[0], 7.0f);

  // Entries are weak: once no deserializer holds an index, the next one indexes the file again.
  CtfOptions p = options_for(plain, {dense("x", 1)});
  make_ctf_deserializer(p);
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(p)).shared_in_process);
  auto held = make_ctf_deserializer(p);
  EXPECT_TRUE(ctf_index_summary(*make_ctf_deserializer(p)).shared_in_process);

  // A process forked while the index is held finds it too (what a DataLoader worker does).
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int code = 3;
    try {
      code = ctf_index_summary(*make_ctf_deserializer(p)).shared_in_process ? 0 : 1;
    } catch (...) {
      code = 2;
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// prefetch_sequence is only a hint: any index, in range or not, leaves what get_sequence returns unchanged.
TEST(CtfChunk, PrefetchSequenceChangesNothing) {
  TempDir dir;
  const std::string f = dir.write("a.ctf", "1 |x 1 |y 2:1\n1 |x 2\n2 |x 3 |y 0:4\n");
  auto d = make_ctf_deserializer(options_for(f, {dense("x", 1), sparse("y", 3)}));
  ChunkPtr chunk = d->load_chunk(0);
  for (uint32_t index : {0u, 1u, 2u, 1000u, 0xFFFFFFFFu}) chunk->prefetch_sequence(index);
  std::vector<SequenceData> data;
  chunk->get_sequence(1, data);
  ASSERT_EQ(data.size(), 2u);
  EXPECT_EQ(static_cast<const float*>(data[0].values)[0], 3.0f);
  EXPECT_EQ(data[1].indices[0], 0);
}

// A sparse stream whose samples each hold one entry shares the chunk's run of ones as its counts; every
// other sequence keeps its own counts, also one whose entries number its samples (2 + 0 entries).
TEST(CtfChunk, SparseCountsAreTheSameWhetherSharedOrStored) {
  TempDir dir;
  const std::string text =
      "1 |d 1 |s 3:1\n1 |d 2 |s 4:2\n1 |d 3 |s 0:1\n"  // one entry each: shared counts
      "2 |d 4 |s 1:1 2:1\n2 |d 5 |s\n"                 // 2 and 0 entries
      "3 |d 6 |s 7:5\n"                                // one entry each again
      "4 |d 7 |s 1:1 5:2 6:3\n4 |d 8 |s 2:4\n";        // 3 and 1
  const std::string f = dir.write("a.ctf", text);
  const std::vector<std::vector<uint32_t>> counts{{1, 1, 1}, {2, 0}, {1}, {3, 1}};
  const std::vector<std::vector<int32_t>> indices{{3, 4, 0}, {1, 2}, {7}, {1, 5, 6, 2}};
  for (size_t threads : {1, 2}) {
    CtfOptions o = options_for(f, {dense("d", 1), sparse("s", 8)});
    o.parse_threads = threads;
    o.parse_split_bytes = 1;  // one chunk split into parts of one or two sequences
    auto d = make_ctf_deserializer(o);
    ChunkPtr chunk = d->load_chunk(0);
    for (uint32_t i = 0; i < counts.size(); ++i) {
      std::vector<SequenceData> data;
      chunk->get_sequence(i, data);
      ASSERT_EQ(data.size(), 2u);
      const SequenceData& sp = data[1];
      ASSERT_EQ(sp.number_of_samples, counts[i].size()) << "sequence " << i;
      EXPECT_EQ(std::vector<uint32_t>(sp.nnz_counts, sp.nnz_counts + sp.number_of_samples), counts[i])
          << "sequence " << i << ", " << threads << " thread(s)";
      ASSERT_EQ(sp.total_nnz, indices[i].size());
      EXPECT_EQ(std::vector<int32_t>(sp.indices, sp.indices + sp.total_nnz), indices[i]) << "sequence " << i;
    }
  }
}

// A file written just now is indexed by every deserializer: its time stamp cannot yet tell a rewrite apart.
TEST(CtfIndexShared, FreshFilesAreNotShared) {
  TempDir dir;
  const std::string f = dir.write("a.ctf", "1 |x 1\n2 |x 2\n");
  CtfOptions o = options_for(f, {dense("x", 1)});
  auto first = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*make_ctf_deserializer(o)).shared_in_process);
}

namespace {

// Every sequence of every chunk (key, samples) and the first value of each chunk's last sequence.
std::vector<std::pair<uint64_t, uint32_t>> all_sequences(const Deserializer& d) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    EXPECT_EQ(infos.size(), c.number_of_sequences);
    for (const SequenceInfo& s : infos) out.emplace_back(s.key.sequence, s.number_of_samples);
  }
  return out;
}

std::string numbered_rows(size_t sequences) {
  std::string text;
  for (size_t s = 0; s < sequences; ++s) {
    for (size_t r = 0; r <= s % 3; ++r)
      text += std::to_string(s) + " |x " + std::to_string(s * 10 + r) + "\n";
  }
  return text;
}

}  // namespace

// The cache CNTK reads (prefix and records) is all an open needs; cntkio's chunk table after it only saves
// work: without it, or made for another chunkSizeInBytes or another data file size, every record is read
// and the chunks are formed again, with the same result as indexing the file.
TEST(CtfIndexCache, CacheWithoutAMatchingChunkTableIsReadInFull) {
  TempDir dir;
  const std::string f = dir.write("a.ctf", numbered_rows(300));
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.chunk_size_in_bytes = 500;
  auto cold = make_ctf_deserializer(o);  // no cache
  const auto expected = all_sequences(*cold);
  const size_t expected_chunks = cold->chunk_infos().size();
  ASSERT_GT(expected_chunks, 3u);

  o.cache_index = true;
  auto writer = make_ctf_deserializer(o);
  const std::string cache = ctf_index_summary(*writer).cache_file;
  const uint64_t records_end = 32 + 32 * expected.size();
  ASSERT_GT(fs::file_size(cache), records_end);

  auto lazy = make_ctf_deserializer(o);
  EXPECT_TRUE(ctf_index_summary(*lazy).lazy_sequence_records);
  EXPECT_EQ(all_sequences(*lazy), expected);
  ASSERT_TRUE(lazy->sequence_info_by_key(SequenceKey{123, 0}).has_value());
  EXPECT_EQ(lazy->sequence_info_by_key(SequenceKey{123, 0})->number_of_samples, 1u);

  // Another chunk size: the chunk table does not apply.
  CtfOptions other = o;
  other.chunk_size_in_bytes = 700;
  other.cache_index = false;
  const auto expected_other = all_sequences(*make_ctf_deserializer(other));
  other.cache_index = true;
  auto full = make_ctf_deserializer(other);
  EXPECT_TRUE(ctf_index_summary(*full).loaded_from_cache);
  EXPECT_FALSE(ctf_index_summary(*full).lazy_sequence_records);
  EXPECT_EQ(all_sequences(*full), expected_other);

  // The cache as CNTK writes it (no chunk table).
  fs::resize_file(cache, records_end);
  auto cntk_layout = make_ctf_deserializer(o);
  EXPECT_TRUE(ctf_index_summary(*cntk_layout).loaded_from_cache);
  EXPECT_FALSE(ctf_index_summary(*cntk_layout).lazy_sequence_records);
  EXPECT_EQ(all_sequences(*cntk_layout), expected);
  EXPECT_EQ(cntk_layout->chunk_infos().size(), expected_chunks);
}

// A record that no longer matches the chunk table it was written with (a damaged cache) stops the read with
// an error naming the cache, instead of reading the wrong bytes of the data file.
TEST(CtfIndexCache, DamagedRecordBehindAValidChunkTableIsAnErrorNamingTheCache) {
  TempDir dir;
  const std::string f = dir.write("a.ctf", numbered_rows(300));
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.chunk_size_in_bytes = 500;
  o.cache_index = true;
  const std::string cache = ctf_index_summary(*make_ctf_deserializer(o)).cache_file;
  {
    // Sequence 2's offset (record 2, bytes 16..23) moved one byte on: still inside the data file.
    std::fstream io(cache, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(32 + 2 * 32 + 16);
    uint64_t offset = 0;
    io.read(reinterpret_cast<char*>(&offset), 8);
    ++offset;
    io.seekp(32 + 2 * 32 + 16);
    io.write(reinterpret_cast<const char*>(&offset), 8);
  }
  auto d = make_ctf_deserializer(o);
  EXPECT_TRUE(ctf_index_summary(*d).lazy_sequence_records);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(1, infos);  // another chunk reads fine
  EXPECT_FALSE(infos.empty());
  try {
    d->load_chunk(0);
    FAIL() << "expected a FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.location().file, cache);
    EXPECT_NE(std::string(e.what()).find("chunk 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Delete the cache file"), std::string::npos) << e.what();
  }
}

TEST(CtfIndexCache, CorruptCacheIsIgnored) {
  TempDir dir;
  std::string f = dir.write("a.ctf", "1 |x 1\n2 |x 2\n");
  CtfOptions o = options_for(f, {dense("x", 1)});
  o.cache_index = true;
  dir.write("a.ctf._.0.0.0.v1.cache", "garbage that is not an index");
  auto d = make_ctf_deserializer(o);
  EXPECT_FALSE(ctf_index_summary(*d).loaded_from_cache);
  EXPECT_EQ(ctf_index_summary(*d).sequences, 2u);
}

namespace {

// Sequences with ids, 1..8 rows each: dense x (dim 3; with `short_samples`, sometimes a short sample that is
// zero-padded with a warning, not an error) and sparse y (dim 1000, 0..4 entries, sometimes absent from a
// row). Every `bad_every`-th sequence (0: none) of more than one row holds a bad value on its first row.
std::string parallel_corpus(size_t sequences, size_t bad_every, bool short_samples) {
  std::mt19937_64 rng(77);
  std::string out;
  for (size_t s = 0; s < sequences; ++s) {
    const size_t rows = 1 + rng() % 8;
    for (size_t r = 0; r < rows; ++r) {
      out += std::to_string(s) + " |x";
      const size_t n = short_samples && rng() % 5 == 0 ? 2 : 3;
      for (size_t k = 0; k < n; ++k)
        out += " " + std::to_string(static_cast<int>(rng() % 2000) - 1000) + ".25";
      if (bad_every != 0 && s % bad_every == bad_every - 1 && r == 0 && rows > 1) out += " 1,5";
      if (r == 0 || rng() % 3 != 0) {
        out += " |y";
        for (size_t e = rng() % 5, i = 0; e > 0; --e) {
          i += 1 + rng() % 150;
          out += " " + std::to_string(i) + ":" + std::to_string(rng() % 100) + "e-1";
        }
      }
      out += "\n";
    }
  }
  return out;
}

// Every key, sample count, value, sparse index and nnz count the deserializer delivers, as text, plus the
// log lines and the error summary.
void dump_into(CtfOptions o, std::string& out) {
  o.log_sink = [&out](int level, std::string_view line) {
    out += "log " + std::to_string(level) + " " + std::string(line) + "\n";
  };
  auto d = make_ctf_deserializer(o);
  for (const ChunkInfo& c : d->chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d->sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = d->load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(info.index_in_chunk, data);
      out += "seq " + std::to_string(info.key.sequence);
      for (size_t s = 0; s < data.size(); ++s) {
        const auto* v = static_cast<const float*>(data[s].values);
        out += " [" + std::to_string(data[s].number_of_samples) + ":";
        if (o.streams[s].storage == StorageFormat::kDense) {
          for (size_t k = 0; k < data[s].number_of_samples * o.streams[s].dim; ++k)
            out += " " + std::to_string(v[k]);
        } else {
          for (size_t k = 0; k < data[s].total_nnz; ++k)
            out += " " + std::to_string(data[s].indices[k]) + "=" + std::to_string(v[k]);
          out += " /";
          for (size_t k = 0; k < data[s].number_of_samples; ++k)
            out += " " + std::to_string(data[s].nnz_counts[k]);
        }
        out += "]";
      }
      out += "\n";
    }
  }
  const CtfErrorSummary errors = ctf_error_summary(*d);
  out += "errors " + std::to_string(errors.errors) + " rows " + std::to_string(errors.rows_skipped) +
         " samples " + std::to_string(errors.samples_skipped);
  for (const std::string& where : errors.first_locations) out += " " + where;
  out += "\n";
}

// With `error_in_text`, a FormatError ends the text (after what was logged before it) instead of escaping.
std::string dump_all(const CtfOptions& o, bool error_in_text = false) {
  std::string out;
  if (!error_in_text) {
    dump_into(o, out);
    return out;
  }
  try {
    dump_into(o, out);
  } catch (const FormatError& e) {
    out += std::string("FormatError ") + e.what();
  }
  return out;
}

}  // namespace

TEST(CtfParallelParse, SplitChunksDeliverTheSameDataForEveryThreadCount) {
  TempDir dir;
  // With short dense samples, each chunk also has warnings (kept aside by each thread, written in order).
  for (bool short_samples : {false, true}) {
    const std::string f = dir.write("a.ctf", parallel_corpus(3000, 0, short_samples));
    for (uint64_t chunk_size : {uint64_t{32} << 20, uint64_t{20000}}) {
      for (int trace_level : {1, 2}) {
        CtfOptions o = options_for(f, {dense("x", 3), sparse("y", 1000)}, 0);
        o.chunk_size_in_bytes = chunk_size;
        o.trace_level = trace_level;
        o.parse_split_bytes = 512;  // many parts per chunk
        const std::string reference = dump_all(o);
        ASSERT_GT(reference.size(), 100000u);
        EXPECT_EQ(reference.find("log 1 WARNING") != std::string::npos, short_samples);
        EXPECT_EQ(reference.find("log 2 INFO") != std::string::npos, trace_level == 2);
        for (size_t threads : {2, 3, 8}) {
          o.parse_threads = threads;
          EXPECT_EQ(dump_all(o), reference)
              << threads << " threads, chunks of " << chunk_size << " bytes, short samples " << short_samples
              << ", trace level " << trace_level;
        }
      }
    }
  }
}

TEST(CtfParallelParse, ErrorsWarningsAndTheBudgetComeInFileOrder) {
  TempDir dir;
  // 3000 sequences with a bad value in every 250th (where it has more than one row).
  const std::string f = dir.write("a.ctf", parallel_corpus(3000, 250, true));
  for (uint64_t max_errors : {uint64_t{0}, uint64_t{5}, uint64_t{17}, uint64_t{1000}}) {
    CtfOptions o = options_for(f, {dense("x", 3), sparse("y", 1000)}, max_errors);
    o.parse_split_bytes = 512;
    std::string reference;
    try {
      reference = dump_all(o);
    } catch (const FormatError& e) {
      reference = std::string("FormatError ") + e.what();
    }
    for (size_t threads : {2, 4}) {
      o.parse_threads = threads;
      std::string got;
      try {
        got = dump_all(o);
      } catch (const FormatError& e) {
        got = std::string("FormatError ") + e.what();
      }
      EXPECT_EQ(got, reference) << threads << " threads, maxErrors " << max_errors;
    }
    // The cases cover a budget exhausted at once, part way and never.
    if (max_errors == 0) {
      EXPECT_EQ(reference.rfind("FormatError", 0), 0u) << reference;
    }
    if (max_errors == 1000) {
      EXPECT_NE(reference.rfind("FormatError", 0), 0u) << reference.substr(0, 300);
      EXPECT_EQ(reference.find("\nerrors 0 "), std::string::npos);
    }
  }
}

namespace {

// A CTF text of `sequences` sequences mostly in the shapes the row fast path takes (ids, dense x of dim 3,
// sparse y of dim 1000, blanks, CRLF, numbers with signs, fractions and exponents), with dense samples of
// the wrong size and, after about every `oddity_every`-th sample, something else (a comment, an unknown
// stream, a bad number, a long number, a missing newline, a duplicate stream).
std::string fast_path_corpus(std::mt19937_64& rng, size_t sequences, unsigned oddity_every) {
  static const char* const kOddities[] = {" |# a comment",
                                          " |z 1 2",
                                          " 1,5",
                                          " |x 1 2 3",
                                          " 0.12345678901234567",
                                          "\r",
                                          " |y 1000:1",
                                          " |y 5:",
                                          " 7",
                                          " |y 12345678901:1",
                                          "\t",
                                          " |",
                                          " |x",
                                          "1e",
                                          " -",
                                          " |y 3:1:2",
                                          "\n",
                                          " \x01",
                                          " |xx 1",
                                          " |y 3:.5",
                                          " 1.e3",
                                          " 1e+",
                                          "  ",
                                          " |y 2:3e2"};
  auto number = [&rng] {
    std::string n;
    if (rng() % 6 == 0) n += rng() % 2 ? "-" : "+";
    n += std::to_string(rng() % 1000);
    if (rng() % 2) n += "." + std::to_string(rng() % 100000);
    if (rng() % 5 == 0) n += (rng() % 2 ? "e" : "E") + std::to_string(static_cast<int>(rng() % 7) - 3);
    return n;
  };
  auto blank = [&rng] {
    const size_t n = 1 + rng() % 2;
    return std::string(n, rng() % 7 == 0 ? '\t' : ' ');
  };
  std::string out;
  for (size_t s = 0; s < sequences; ++s) {
    const size_t rows = 1 + rng() % 4;
    for (size_t r = 0; r < rows; ++r) {
      out += std::to_string(s);
      const bool x_first = rng() % 3 != 0;
      for (int part = 0; part < 2; ++part) {
        if ((part == 0) == x_first) {
          if (rng() % 4 == 0 && r > 0) continue;
          out += blank() + "|x";
          const int values = rng() % 20 == 0 ? static_cast<int>(rng() % 5) : 3;  // 3 = the dimension
          for (int k = 0; k < values; ++k) out += blank() + number();
        } else {
          if (rng() % 3 == 0 && r > 0) continue;
          out += blank() + "|y";
          for (size_t e = rng() % 4, i = 0; e > 0; --e) {
            i += 1 + rng() % 300;
            const size_t index =
                rng() % 50 == 0 ? 999 + rng() % 2 : i;  // sometimes the last one, or one past
            out += blank() + std::to_string(index) + ":" + number();
          }
        }
        if (rng() % oddity_every == 0) out += kOddities[rng() % std::size(kOddities)];
      }
      if (rng() % 5 == 0) out += blank();
      out += rng() % 10 == 0 ? "\r\n" : "\n";
    }
  }
  if (rng() % 3 == 0) out.pop_back();  // no final newline
  return out;
}

}  // namespace

TEST(CtfRowFastPath, DeliversAndLogsExactlyWhatTheGeneralParserDoes) {
  TempDir dir;
  std::mt19937_64 rng(4242);
  size_t with_messages = 0;
  size_t with_errors = 0;
  for (int round = 0; round < 60; ++round) {
    static const unsigned kOddityEvery[] = {400, 60, 8};
    const std::string f =
        dir.write("a.ctf", fast_path_corpus(rng, 40 + rng() % 200, kOddityEvery[round % 3]));
    for (uint64_t max_errors : {uint64_t{0}, uint64_t{4}, uint64_t{1000}}) {
      for (int trace_level : {1, 2}) {
        CtfOptions o = options_for(f, {dense("x", 3), sparse("y", 1000)}, max_errors);
        o.trace_level = trace_level;
        o.row_fast_path = false;
        const std::string general = dump_all(o, true);
        o.row_fast_path = true;
        EXPECT_EQ(dump_all(o, true), general)
            << "round " << round << ", maxErrors " << max_errors << ", trace level " << trace_level;
        with_messages += general.find("log 1 WARNING") != std::string::npos ? 1 : 0;
        with_errors += general.find("FormatError") != std::string::npos ? 1 : 0;
      }
    }
  }
  // The corpus reaches the general parser's messages and errors, not only clean rows.
  EXPECT_GT(with_messages, 60u) << with_messages << " " << with_errors;
  EXPECT_GT(with_errors, 20u);
}

TEST(CtfRowFastPath, CleanRowsGiveTheSameValuesAsTheGeneralParser) {
  TempDir dir;
  std::mt19937_64 rng(99);
  std::string text;
  for (int s = 0; s < 2000; ++s) {
    for (int r = 0; r < 3; ++r) {
      text += std::to_string(s) + " |x " + std::to_string(rng() % 1000) + ".5 -" +
              std::to_string(rng() % 99) + " " + std::to_string(rng() % 7) + "e-2 |y " +
              std::to_string(rng() % 1000) + ":0.25\n";
    }
  }
  const std::string f = dir.write("clean.ctf", text);
  CtfOptions o = options_for(f, {dense("x", 3), sparse("y", 1000)});
  const std::string fast = dump_all(o, true);
  o.row_fast_path = false;
  EXPECT_EQ(fast, dump_all(o, true));
  EXPECT_EQ(fast.find("log "), std::string::npos) << fast.substr(0, 300);
  EXPECT_NE(fast.find("errors 0 rows 0 samples 0"), std::string::npos);
}

// A stream without a name (a ReaderSpec built in code) is refused before the data is read: it would match
// `|` followed by a blank, and the data's errors would hide the cause.
TEST(CtfErrors, AStreamWithoutANameIsAConfigError) {
  TempDir dir;
  const std::string file = dir.write("a.ctf", "0 |a 1\n");
  try {
    make_ctf_deserializer(options_for(file, {dense("a", 1), dense("", 1)}));
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("Stream 1 of the CTF deserializer"), std::string::npos) << e.what();
  }
}

// make_ctf_deserializer reads one file: the fields of a corpus would be ignored without a word.
TEST(CtfErrors, TheFactoryRefusesTheFieldsOfACorpus) {
  TempDir dir;
  const std::string file = dir.write("a.ctf", "0 |a 1\n");
  CtfOptions more = options_for(file, {dense("a", 1)});
  more.more_files = {file};
  EXPECT_THROW(make_ctf_deserializer(more), UsageError);
  CtfOptions listed = options_for(file, {dense("a", 1)});
  listed.file_list = dir.write("list.txt", file + "\n");
  EXPECT_THROW(make_ctf_deserializer(listed), UsageError);
}
