// Reading CBF: files written by CNTK's ctf2bin.py (spec cbf.md §2), the current and legacy layouts (§1, §3),
// renames (§1.4), precision (§1.3), keys (§1.5), and the reader configurations (pipeline.md §1.2, §3.1).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/minibatch_source.hpp"

using namespace cntkio;
using namespace cbf_test;

namespace {

const std::string kConformance = CNTKIO_CONFORMANCE_DIR;
const std::string kBinDir = kConformance + "/data/CNTKBinaryReader/";
const std::string kCtfDir = kConformance + "/data/CNTKTextFormatReader/";

CtfStreamOptions ctf_stream(const std::string& name, const std::string& alias, size_t dim,
                            StorageFormat storage) {
  CtfStreamOptions s;
  s.name = name;
  s.alias = alias;
  s.dim = dim;
  s.storage = storage;
  return s;
}

std::vector<SequenceSnapshot> read_ctf(const std::string& file, std::vector<CtfStreamOptions> streams,
                                       ElementType type) {
  CtfOptions o;
  o.file = file;
  o.streams = std::move(streams);
  o.element_type = type;
  o.trace_level = 0;
  auto d = make_ctf_deserializer(o);
  return snapshot(*d);
}

std::shared_ptr<Deserializer> open_cbf(const std::string& file,
                                       std::optional<ElementType> type = ElementType::kFloat) {
  CbfOptions o;
  o.file = file;
  o.element_type = type;
  return make_cbf_deserializer(o);
}

// ulp distance of two doubles given as bit patterns (same sign assumed).
uint64_t ulps(uint64_t a, uint64_t b) {
  return a > b ? a - b : b - a;
}

struct Ctf2binCase {
  std::string bin;
  std::string ctf;
  std::vector<CtfStreamOptions> streams;
  ElementType type;
  std::vector<std::string> names;
  uint64_t sequences;
  uint64_t samples;
};

std::vector<Ctf2binCase> ctf2bin_cases() {
  return {
      {"Simple_dense.bin",
       "Simple_dense.txt",
       {ctf_stream("features", "F", 2, StorageFormat::kDense),
        ctf_stream("labels", "L", 2, StorageFormat::kDense)},
       ElementType::kFloat,
       {"features", "labels"},
       10000,
       10000},
      {"10x10_dense.bin",
       "10x10_dense.txt",
       {ctf_stream("features", "F0", 5, StorageFormat::kDense)},
       ElementType::kFloat,
       {"features"},
       10,
       100},
      {"50x20_jagged_sequences_dense.bin",
       "50x20_jagged_sequences_dense.txt",
       {ctf_stream("features", "F0", 3, StorageFormat::kDense)},
       ElementType::kDouble,
       {"features"},
       50,
       508},
      {"10x10_sparse.bin",
       "10x10_sparse.txt",
       {ctf_stream("features", "F0", 100, StorageFormat::kSparseCsc)},
       ElementType::kDouble,
       {"features"},
       10,
       100},
  };
}

}  // namespace

// The conformance .bin files were written by ctf2bin.py from the CTF files next to them (spec cbf.md §2).
// Float values are bit-identical to what CNTK's CTF reader parses; double values may differ by one ulp
// (Python's correctly rounded float() against CNTK's number formula, spec §2.2 and ctf.md §6.6).
TEST(CbfReader, Ctf2binFilesHoldTheSequencesOfTheirCtfSource) {
  for (const Ctf2binCase& c : ctf2bin_cases()) {
    SCOPED_TRACE(c.bin);
    auto d = open_cbf(kBinDir + c.bin, c.type);
    ASSERT_EQ(d->streams().size(), c.names.size());
    for (size_t i = 0; i < c.names.size(); ++i) {
      EXPECT_EQ(d->streams()[i].name, c.names[i]);
      EXPECT_EQ(d->streams()[i].alias, c.names[i]);
      EXPECT_EQ(d->streams()[i].sample_dim(), c.streams[i].dim);
      EXPECT_EQ(d->streams()[i].storage, c.streams[i].storage);
      EXPECT_EQ(d->streams()[i].element_type, c.type);
    }
    const std::vector<SequenceSnapshot> cbf = snapshot(*d);
    const std::vector<SequenceSnapshot> ctf = read_ctf(kCtfDir + c.ctf, c.streams, c.type);
    ASSERT_EQ(cbf.size(), c.sequences);
    ASSERT_EQ(ctf.size(), c.sequences);
    uint64_t samples = 0;
    uint64_t off_by_one_ulp = 0;
    for (size_t i = 0; i < cbf.size(); ++i) {
      EXPECT_EQ(cbf[i].key, i);  // keys are global sequence indices
      EXPECT_EQ(cbf[i].length, ctf[i].length);
      samples += cbf[i].length;
      for (size_t s = 0; s < c.streams.size(); ++s) {
        const StreamSnapshot& a = cbf[i].streams[s];
        const StreamSnapshot& b = ctf[i].streams[s];
        ASSERT_EQ(a.samples, b.samples);
        ASSERT_EQ(a.indices, b.indices);
        ASSERT_EQ(a.counts, b.counts);
        ASSERT_EQ(a.bits.size(), b.bits.size());
        for (size_t k = 0; k < a.bits.size(); ++k) {
          if (c.type == ElementType::kFloat) {
            ASSERT_EQ(a.bits[k], b.bits[k]) << "sequence " << i << " value " << k;
          } else {
            ASSERT_LE(ulps(a.bits[k], b.bits[k]), 1u) << "sequence " << i << " value " << k;
            off_by_one_ulp += a.bits[k] != b.bits[k];
          }
        }
      }
    }
    EXPECT_EQ(samples, c.samples);
    const CbfHeader& h = cbf_header(*d);
    EXPECT_EQ(h.layout, CbfLayout::kCurrent);
    EXPECT_EQ(h.chunks.size(), 1u);
    EXPECT_EQ(h.total_sequences(), c.sequences);
    EXPECT_EQ(h.total_samples(), c.samples);
  }
}

// Our writer, given the same CTF and streams, writes the float files byte for byte as ctf2bin did (one
// chunk: their estimated size stays below ctf2bin's --chunk_size).
TEST(CbfReader, ConvertWritesCtf2binsFloatFilesByteForByte) {
  TempDir dir;
  for (const Ctf2binCase& c : ctf2bin_cases()) {
    if (c.type != ElementType::kFloat) continue;
    SCOPED_TRACE(c.bin);
    ConvertOptions o;
    o.to = DataFormat::kCbf;
    for (const CtfStreamOptions& s : c.streams)
      o.streams.push_back(ConvertStream{s.name, s.alias, s.dim, s.storage});
    const std::string out = dir.file(c.bin);
    convert_file(kCtfDir + c.ctf, DataFormat::kCtf, out, o);
    EXPECT_EQ(read_bytes(out), read_bytes(kBinDir + c.bin));
  }
}

TEST(CbfReader, PrecisionMustMatchTheStoredType) {
  try {
    open_cbf(kBinDir + "10x10_dense.bin", ElementType::kDouble);
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    // CNTK's text, then what to do and where: the first input's element type byte in the header.
    const std::string cntk =
        "Unsupported combination of the input data type 0 and precision 2. At the moment, both have to "
        "match.";
    EXPECT_EQ(e.cntk_text(), cntk);
    EXPECT_EQ(e.location().stream, "features");
    EXPECT_EQ(std::string(e.what()),
              cntk +
                  " (the input stores float values and precision is double: set precision = \"float\", or "
                  "convert the file with cntkio convert --precision double) [file '" +
                  kBinDir + "10x10_dense.bin', byte offset " + std::to_string(*e.location().byte_offset) +
                  ", stream 'features']");
  }
}

TEST(CbfReader, RenamesFollowTheInputBlockAndLaterEntriesWin) {
  const std::string config = "r = [ file = \"" + kBinDir +
                             "Simple_dense.bin\"\n"
                             "  input = [ x = [ alias = \"features\" ]\n"
                             "            a = [ alias = \"labels\" ]\n"
                             "            b = [ alias = \"labels\" ]\n"
                             "            unused = [ alias = \"nothing\" ] ] ]\n";
  CbfOptions o = cbf_options_from_config(Config::from_text(config).get_block("r"));
  // Case-insensitive name order: a, b, unused, x; "labels" is mapped to a, then to b.
  ASSERT_EQ(o.renames.size(), 4u);
  EXPECT_EQ(o.renames[0], (std::pair<std::string, std::string>("labels", "a")));
  auto d = make_cbf_deserializer(o);
  ASSERT_EQ(d->streams().size(), 2u);
  EXPECT_EQ(d->streams()[0].name, "x");
  EXPECT_EQ(d->streams()[0].alias, "features");
  EXPECT_EQ(d->streams()[1].name, "b");
  EXPECT_EQ(d->streams()[1].alias, "labels");

  // No entry: the file's name; an entry without alias maps the name to itself.
  const std::string plain =
      "r = [ file = \"" + kBinDir + "Simple_dense.bin\"\n input = [ labels = [ dim = 3 ] ] ]\n";
  auto p = make_cbf_deserializer(cbf_options_from_config(Config::from_text(plain).get_block("r")));
  EXPECT_EQ(p->streams()[0].name, "features");
  EXPECT_EQ(p->streams()[1].name, "labels");
}

TEST(CbfReader, ConfigKeys) {
  const std::string config =
      "precision = \"double\"\nr = [ file = \"x.bin\"\n keepDataInMemory = true\n traceLevel = 3 ]\n";
  CbfOptions o = cbf_options_from_config(Config::from_text(config).get_block("r"));
  EXPECT_EQ(o.file, "x.bin");
  EXPECT_EQ(o.element_type, ElementType::kDouble);  // scoped lookup
  EXPECT_TRUE(o.keep_data_in_memory);
  EXPECT_EQ(o.trace_level, 3);
  EXPECT_THROW(
      cbf_options_from_config(Config::from_text("r = [ file = x\n precision = Float ]").get_block("r")),
      ConfigError);
  EXPECT_THROW(cbf_options_from_config(Config::from_text("r = [ precision = float ]").get_block("r")),
               ConfigError);
}

TEST(CbfReader, TraceLevelAboveTwoLogsOneInitLine) {
  std::vector<std::string> lines;
  CbfOptions o;
  o.file = kBinDir + "10x10_dense.bin";
  o.trace_level = 3;
  o.log_sink = [&lines](int, std::string_view line) { lines.emplace_back(line); };
  make_cbf_deserializer(o);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "CNTKBinaryReader: file '" + o.file +
                          "' (CBF), 1 input(s), 1 chunk(s), 10 sequences, 100 samples.");
  lines.clear();
  o.trace_level = 2;
  make_cbf_deserializer(o);
  EXPECT_TRUE(lines.empty());
}

TEST(CbfReader, KeepDataInMemoryReturnsTheSameChunk) {
  CbfOptions o;
  o.file = kBinDir + "10x10_dense.bin";
  o.keep_data_in_memory = true;
  auto kept = make_cbf_deserializer(o);
  EXPECT_EQ(kept->load_chunk(0), kept->load_chunk(0));
  o.keep_data_in_memory = false;
  auto fresh = make_cbf_deserializer(o);
  EXPECT_NE(fresh->load_chunk(0), fresh->load_chunk(0));
  EXPECT_THROW(fresh->load_chunk(1), UsageError);
}

// Writes `sequences` sequences of one dense dim-2 stream (sequence i has i % 3 + 1 samples, value = i) into
// chunks of at most `chunk` bytes.
std::string write_numbered(const TempDir& dir, const std::string& name, int sequences, uint64_t chunk,
                           ElementType type = ElementType::kFloat) {
  CbfWriterOptions o;
  o.chunk_size_in_bytes = chunk;
  CbfWriter w(dir.file(name), {CbfWriterStream{"x", StorageFormat::kDense, type, 2}}, o);
  for (int i = 0; i < sequences; ++i) {
    const uint32_t n = static_cast<uint32_t>(i % 3 + 1);
    std::vector<double> d(2 * n, static_cast<double>(i));
    std::vector<float> f(d.begin(), d.end());
    SequenceData sd;
    sd.number_of_samples = n;
    sd.values = type == ElementType::kFloat ? static_cast<const void*>(f.data()) : d.data();
    w.add_sequence({sd}, {type});
  }
  w.finish();
  return dir.file(name);
}

TEST(CbfReader, KeysAreGlobalIndicesAcrossChunksAndFindable) {
  TempDir dir;
  const std::string file = write_numbered(dir, "n.bin", 40, 64);
  auto d = open_cbf(file);
  ASSERT_GT(d->chunk_infos().size(), 3u);
  const std::vector<SequenceSnapshot> all = snapshot(*d);
  ASSERT_EQ(all.size(), 40u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].key, i);
    EXPECT_EQ(all[i].length, i % 3 + 1);
    EXPECT_EQ(all[i].streams[0].bits[0], std::bit_cast<uint32_t>(static_cast<float>(i)));
  }
  for (uint64_t k : {0ull, 17ull, 39ull}) {
    std::optional<SequenceInfo> info = d->sequence_info_by_key(SequenceKey{k, 0});
    ASSERT_TRUE(info);
    EXPECT_EQ(info->key.sequence, k);
    EXPECT_EQ(info->number_of_samples, k % 3 + 1);
    std::vector<SequenceInfo> in_chunk;
    d->sequence_infos_for_chunk(info->chunk_id, in_chunk);
    EXPECT_EQ(in_chunk[info->index_in_chunk].key.sequence, k);
  }
  EXPECT_FALSE(d->sequence_info_by_key(SequenceKey{40, 0}));
}

// Double arrays sit at 4-byte boundaries in the file half of the time; the views handed out are 8-aligned.
TEST(CbfReader, DoubleValuesAreAlignedViews) {
  TempDir dir;
  const std::string file = write_numbered(dir, "d.bin", 30, 1 << 20, ElementType::kDouble);
  auto d = open_cbf(file, ElementType::kDouble);
  ChunkPtr chunk = d->load_chunk(0);
  for (uint32_t i = 0; i < 30; ++i) {
    std::vector<SequenceData> data;
    chunk->get_sequence(i, data);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(data[0].values) % alignof(double), 0u);
    EXPECT_EQ(static_cast<const double*>(data[0].values)[0], static_cast<double>(i));
  }
}

// Float values are views into the mapped file: consecutive sequences' values lie at the distance their
// records have in the file (no copy).
TEST(CbfReader, FloatValuesAreViewsIntoTheFile) {
  TempDir dir;
  const std::string file = write_numbered(dir, "f.bin", 3, 1 << 20);
  auto d = open_cbf(file);
  ChunkPtr chunk = d->load_chunk(0);
  std::vector<SequenceData> data;
  chunk->get_sequence(0, data);
  chunk->get_sequence(1, data);
  // record of sequence 0: uint32 count + 1 sample of 2 floats = 12 bytes
  EXPECT_EQ(static_cast<const char*>(data[1].values) - static_cast<const char*>(data[0].values), 12);
}

TEST(CbfReader, EmptyChunksAreSkippedAndAnEmptyFileIsAnError) {
  TempDir dir;
  // Two rows of the table: an empty chunk, then one chunk with one dense sequence of 1 sample.
  Bytes b;
  b.le<uint64_t>(kCbfMagic).le<uint32_t>(1);
  const uint64_t chunk_at = b.size();
  b.le<uint32_t>(1).le<uint32_t>(1).f32(7.0f);
  const uint64_t header_at = b.size();
  b.le<uint64_t>(kCbfMagic).le<uint32_t>(2).le<uint32_t>(1);
  b.u8(0).le<uint32_t>(1).text("x").u8(0).le<uint32_t>(1);
  b.le<int64_t>(static_cast<int64_t>(chunk_at)).le<uint32_t>(0).le<uint32_t>(0);
  b.le<int64_t>(static_cast<int64_t>(chunk_at)).le<uint32_t>(1).le<uint32_t>(1);
  b.le<int64_t>(static_cast<int64_t>(header_at));
  auto d = open_cbf(dir.write("e.bin", b.data));
  ASSERT_EQ(d->chunk_infos().size(), 1u);
  const auto all = snapshot(*d);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].streams[0].bits, std::vector<uint64_t>{std::bit_cast<uint32_t>(7.0f)});

  CbfWriter w(dir.file("none.bin"), {CbfWriterStream{"x", StorageFormat::kDense, ElementType::kFloat, 1}});
  w.finish();
  try {
    open_cbf(dir.file("none.bin"));
    FAIL() << "expected FormatError";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "The input file holds no sequence.");
  }
}

// readerType = CNTKBinaryReader: one stand-alone reader; randomize=false reads in file order.
TEST(CbfReader, StandaloneReaderReadsInOrderAndIgnoresFrameMode) {
  const std::string config = "r = [ readerType = \"CNTKBinaryReader\"\n file = \"" + kBinDir +
                             "50x20_jagged_sequences_dense.bin\"\n randomize = false\n frameMode = true\n"
                             " precision = \"double\" ]\n";
  auto source = MinibatchSource::from_config(Config::from_text(config).get_block("r"));
  ASSERT_EQ(source->streams().size(), 1u);
  source->start_epoch(508, 0, 508);
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  // Sequence packing: 50 sequences in parallel rows (frame mode would give 508 one-step columns).
  EXPECT_EQ(mb.keys.size(), 50u);
  EXPECT_EQ(mb.streams[0].layout.num_samples(), 508u);
  EXPECT_EQ(mb.streams[0].layout.num_time_steps, 19u);  // the longest of the 50 sequences
}

std::vector<uint64_t> epoch_keys(const std::string& extra, const std::string& file) {
  const std::string config =
      "r = [ readerType = \"CNTKBinaryReader\"\n file = \"" + file + "\"\n" + extra + " ]\n";
  auto source = MinibatchSource::from_config(Config::from_text(config).get_block("r"));
  source->start_epoch(7, 0, kFullSweep);
  std::vector<uint64_t> keys;
  Minibatch mb;
  while (source->next_minibatch(mb)) {
    for (const auto& k : mb.keys) keys.push_back(std::stoull(k));
  }
  return keys;
}

// The stand-alone reader's default window is 128 chunks (spec pipeline.md §3.1 step 5).
TEST(CbfReader, StandaloneDefaultWindowIs128Chunks) {
  TempDir dir;
  const std::string file = write_numbered(dir, "w.bin", 600, 16);  // 600 one-sequence chunks
  const std::vector<uint64_t> by_default = epoch_keys("randomize = true", file);
  ASSERT_EQ(by_default.size(), 600u);
  EXPECT_EQ(by_default, epoch_keys("randomize = true\n randomizationWindow = 128", file));
  EXPECT_NE(by_default, epoch_keys("randomize = true\n randomizationWindow = 127", file));
  EXPECT_NE(by_default, epoch_keys("randomize = true\n randomizationWindow = 600", file));
  std::vector<uint64_t> in_order(600);
  for (uint64_t i = 0; i < 600; ++i) in_order[i] = i;
  EXPECT_EQ(epoch_keys("randomize = true\n randomizationWindow = 0", file), in_order);
  EXPECT_EQ(epoch_keys("randomize = none", file), in_order);
}

// type = CNTKBinaryFormatDeserializer inside `deserializers`, with an alias renaming.
TEST(CbfReader, CompositeDeserializerWithAlias) {
  const std::string config =
      "r = [ randomize = false\n deserializers = ([ type = \"CNTKBinaryFormatDeserializer\"\n"
      "  file = \"" +
      kBinDir +
      "Simple_dense.bin\"\n"
      "  input = [ f = [ alias = \"features\" ] ] ]) ]\n";
  auto source = MinibatchSource::from_config(Config::from_text(config).get_block("r"));
  ASSERT_EQ(source->streams().size(), 2u);
  EXPECT_EQ(source->streams()[0].name, "f");
  EXPECT_EQ(source->streams()[1].name, "labels");
  source->start_epoch(4, 0, 4);
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"0", "1", "2", "3"}));
  // First row of Simple_dense.txt: |F -0.127551 0.650403 |L 1 0
  EXPECT_EQ(mb.streams[0].data<float>()[0], -0.127551f);
  EXPECT_EQ(mb.streams[0].data<float>()[1], 0.650403f);
  EXPECT_EQ(mb.streams[1].data<float>()[0], 1.0f);

  const std::string strings =
      "r = [ useNumericSequenceKeys = false\n deserializers = ([ type = "
      "\"CNTKBinaryFormatDeserializer\"\n file = \"" +
      kBinDir + "Simple_dense.bin\" ]) ]\n";
  EXPECT_THROW(MinibatchSource::from_config(Config::from_text(strings).get_block("r")), ConfigError);
}

// Legacy v1 files give the same streams and sequences as the current layout for the same data.
TEST(CbfReader, LegacyLayoutGivesTheSameSequencesAsTheCurrentOne) {
  TempDir dir;
  const std::vector<CbfWriterStream> streams = {{"d", StorageFormat::kDense, ElementType::kDouble, 3},
                                                {"s", StorageFormat::kSparseCsc, ElementType::kFloat, 10}};
  CbfWriterOptions current;
  current.chunk_size_in_bytes = 200;
  CbfWriterOptions legacy = current;
  legacy.layout = CbfLayout::kLegacyV1;
  CbfWriter a(dir.file("a.bin"), streams, current);
  CbfWriter b(dir.file("b.bin"), streams, legacy);
  for (int i = 0; i < 25; ++i) {
    std::vector<double> dense = {i + 0.5, -i * 1.0, 1e-3 * i};
    // sparse: i % 3 + 1 samples; sample k has entries (k + i) % 10 and 9 - k (k < 2) ; empty middle samples
    const uint32_t n = static_cast<uint32_t>(i % 3 + 1);
    std::vector<float> values;
    std::vector<int32_t> indices;
    std::vector<uint32_t> counts;
    for (uint32_t k = 0; k < n; ++k) {
      const uint32_t c = (k == 1 && n == 3) ? 0 : 1 + (k + static_cast<uint32_t>(i)) % 2;
      for (uint32_t e = 0; e < c; ++e) {
        values.push_back(static_cast<float>(i * 10 + k) + 0.25f * static_cast<float>(e));
        indices.push_back(static_cast<int32_t>((k + static_cast<uint32_t>(i) + 3 * e) % 10));
      }
      counts.push_back(c);
    }
    SequenceData sd_dense;
    sd_dense.number_of_samples = 1;
    sd_dense.values = dense.data();
    SequenceData sd_sparse;
    sd_sparse.number_of_samples = n;
    sd_sparse.values = values.data();
    sd_sparse.indices = indices.data();
    sd_sparse.nnz_counts = counts.data();
    sd_sparse.total_nnz = values.size();
    a.add_sequence({sd_dense, sd_sparse}, {ElementType::kDouble, ElementType::kFloat});
    b.add_sequence({sd_dense, sd_sparse}, {ElementType::kDouble, ElementType::kFloat});
  }
  a.finish();
  b.finish();
  EXPECT_EQ(*detect_cbf_layout(dir.file("b.bin")), CbfLayout::kLegacyV1);
  auto da = open_cbf(dir.file("a.bin"), std::nullopt);
  auto db = open_cbf(dir.file("b.bin"), std::nullopt);
  EXPECT_GT(db->chunk_infos().size(), 2u);
  ASSERT_EQ(da->streams().size(), db->streams().size());
  for (size_t s = 0; s < da->streams().size(); ++s) {
    EXPECT_EQ(da->streams()[s].name, db->streams()[s].name);
    EXPECT_EQ(da->streams()[s].storage, db->streams()[s].storage);
    EXPECT_EQ(da->streams()[s].element_type, db->streams()[s].element_type);
    EXPECT_EQ(da->streams()[s].sample_dim(), db->streams()[s].sample_dim());
  }
  const auto sa = snapshot(*da);
  const auto sb = snapshot(*db);
  ASSERT_EQ(sa.size(), 25u);
  ASSERT_EQ(sb.size(), 25u);
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sb[i].key, i);  // not CNTK's off-by-one legacy keys
    EXPECT_EQ(sa[i].length, sb[i].length);
    EXPECT_EQ(sa[i].streams, sb[i].streams) << "sequence " << i;
  }
  EXPECT_EQ(sa[2].streams[1].counts, (std::vector<uint32_t>{1, 0, 1}));
  EXPECT_EQ(sa[2].length, 3u);
}

// A hand-made legacy file (spec cbf.md §3.1): row index = sample * dim + index; a sequence without entries
// has one empty sample; the sequence length is max(1, samples of any input).
TEST(CbfReader, LegacyFileByHand) {
  TempDir dir;
  Bytes b;
  b.le<int64_t>(1).le<int64_t>(1).le<int32_t>(2);
  b.le<int32_t>(1).text("L").le<int32_t>(0).le<int32_t>(0).le<int32_t>(2);  // dense float dim 2
  b.le<int32_t>(1).text("S").le<int32_t>(1).le<int32_t>(0).le<int32_t>(1).le<int32_t>(1).le<int32_t>(
      4);  // sparse double dim 4
  b.le<int64_t>(0).le<int32_t>(3).le<int32_t>(6);
  // dense: 3 sequences x 2 floats
  b.f32(1).f32(2).f32(3).f32(4).f32(5).f32(6);
  // sparse: nnz 4; seq 0: (sample 0, row 1), (sample 2, row 3); seq 1: none; seq 2: (sample 0, 0), (sample 1,
  // 2)
  b.le<int32_t>(4).f64(0.5).f64(1.5).f64(2.5).f64(3.5);
  b.le<int32_t>(1).le<int32_t>(2 * 4 + 3).le<int32_t>(0).le<int32_t>(4 + 2);
  b.le<int32_t>(0).le<int32_t>(2).le<int32_t>(2).le<int32_t>(4);
  auto d = open_cbf(dir.write("l.bin", b.data), std::nullopt);
  const auto all = snapshot(*d);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].length, 3u);
  EXPECT_EQ(all[1].length, 1u);
  EXPECT_EQ(all[2].length, 2u);
  EXPECT_EQ(all[0].streams[1].counts, (std::vector<uint32_t>{1, 0, 1}));
  EXPECT_EQ(all[0].streams[1].indices, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(all[1].streams[1].counts, (std::vector<uint32_t>{0}));
  EXPECT_EQ(all[2].streams[1].indices, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(all[2].streams[1].bits,
            (std::vector<uint64_t>{std::bit_cast<uint64_t>(2.5), std::bit_cast<uint64_t>(3.5)}));
  EXPECT_EQ(all[1].streams[0].bits,
            (std::vector<uint64_t>{std::bit_cast<uint32_t>(3.0f), std::bit_cast<uint32_t>(4.0f)}));
  EXPECT_EQ(d->chunk_infos()[0].number_of_samples, 6u);  // the table's count, as CNTK used it
}

// As a secondary deserializer, CBF sequences are found by key (their index); CNTK refuses this use.
TEST(CbfReader, SecondaryOfACompositeReaderJoinsByIndex) {
  TempDir dir;
  const std::string ctf = dir.write("p.ctf", "2 |a 20\n0 |a 0\n7 |a 70\n");
  const std::string config =
      "r = [ randomize = false\n deserializers = (\n"
      "  [ type = \"CNTKTextFormatDeserializer\"\n file = \"" +
      ctf +
      "\"\n input = [ a = [ dim = 1\n format = \"dense\" ] ] ]:\n"
      "  [ type = \"CNTKBinaryFormatDeserializer\"\n file = \"" +
      kBinDir + "Simple_dense.bin\" ]) ]\n";
  auto source = MinibatchSource::from_config(Config::from_text(config).get_block("r"));
  ASSERT_EQ(source->streams().size(), 3u);
  source->start_epoch(3, 0, 3);
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  EXPECT_EQ(mb.keys, (std::vector<std::string>{"2", "0", "7"}));
  // Rows 3, 1 and 8 of Simple_dense.txt (the CBF keys are row indices 2, 0, 7).
  const float* f = mb.streams[1].data<float>();
  EXPECT_EQ(std::vector<float>(f, f + 6),
            (std::vector<float>{-0.561044f, -0.587243f, -0.127551f, 0.650403f, -0.929042f, -0.18294f}));
}
