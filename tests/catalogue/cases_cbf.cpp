// Catalogue: the CNTK Binary Format, current and legacy v1 layouts (spec cbf.md §1, §3). Every malformed
// file gives a FormatError naming data.cbf and a byte offset inside the file (exactly where the spec pins
// the field down, else within the structure that is wrong); truncating a valid file at any offset does too.
#include <gtest/gtest.h>

#include <cstring>

#include "catalogue/catalogue.hpp"

#if __has_include("cntkio/cbf.hpp") && __has_include("cntkio/convert.hpp")
#include "cbf/cbf_test_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"
#define CNTKIO_CATALOGUE_HAS_CBF 1
#endif

namespace cntkio::catalogue {

#ifdef CNTKIO_CATALOGUE_HAS_CBF
namespace {

// Little-endian byte builder.
struct Bytes {
  std::string b;
  template <typename T>
  Bytes& put(T v) {
    char raw[sizeof(T)];
    std::memcpy(raw, &v, sizeof(T));
    b.append(raw, sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& i32(int32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& i64(int64_t v) { return put(v); }
  Bytes& f32(float v) { return put(v); }
  Bytes& text(const std::string& s) {
    b += s;
    return *this;
  }
  size_t size() const { return b.size(); }
};

template <typename T>
void poke(std::string& bytes, size_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof(T));
}

// Offsets of the fields of the current-layout file below.
struct CurrentFile {
  std::string bytes;
  size_t header = 0;        // H: the header's magic
  size_t encoding_a = 0;    // input a's encoding byte
  size_t name_len_a = 0;    // input a's name length
  size_t type_a = 0;        // input a's element type byte
  size_t type_b = 0;        // input b's element type byte
  size_t dim_b = 0;         // input b's dimension
  size_t table = 0;         // the chunk table row (offset, sequences, samples)
  size_t nnz_seq1 = 0;      // sequence 1's nnz of input b
  size_t rows_seq1 = 0;     // sequence 1's first row index of input b
  size_t count_a_seq1 = 0;  // sequence 1's sample count of input a
};

// Dense a (float, dim 2) and sparse b (float, dim 5); one chunk of two sequences:
// 0: a [1 2], b {3:7};  1: a [3 4][5 6], b {0:1} {4:2 1:3}.
CurrentFile current_file() {
  CurrentFile f;
  Bytes x;
  x.u64(kCbfMagic).u32(1);
  x.u32(1).u32(2);  // sequence lengths
  x.u32(1).f32(1).f32(2);
  f.count_a_seq1 = x.size();
  x.u32(2).f32(3).f32(4).f32(5).f32(6);
  x.u32(1).u32(1).f32(7).i32(3).i32(1);
  x.u32(2);
  f.nnz_seq1 = x.size();
  x.u32(3).f32(1).f32(2).f32(3);
  f.rows_seq1 = x.size();
  x.i32(0).i32(4).i32(1).i32(1).i32(2);
  f.header = x.size();
  x.u64(kCbfMagic).u32(1).u32(2);
  f.encoding_a = x.size();
  x.u8(0);
  f.name_len_a = x.size();
  x.u32(1).text("a");
  f.type_a = x.size();
  x.u8(0).u32(2);
  x.u8(1).u32(1).text("b");
  f.type_b = x.size();
  x.u8(0);
  f.dim_b = x.size();
  x.u32(5);
  f.table = x.size();
  x.i64(12).u32(2).u32(3);
  x.i64(static_cast<int64_t>(f.header));
  f.bytes = x.b;
  return f;
}

struct LegacyFile {
  std::string bytes;
  size_t num_chunks = 0;
  size_t type_a = 0;  // input a's element type
  size_t type_b = 0;  // input b's deserializer type
  size_t table = 0;   // the offsets row
  size_t nnz = 0;     // b's nnz
  size_t column_starts = 0;
};

// The same streams in the legacy layout: 0: a [1 2], b {3:7};  1: a [3 4], b {0:1} {4:2}.
LegacyFile legacy_file() {
  LegacyFile f;
  Bytes x;
  x.i64(1);
  f.num_chunks = x.size();
  x.i64(1).i32(2);
  x.i32(1).text("a").i32(0);
  f.type_a = x.size();
  x.i32(0).i32(2);
  x.i32(1).text("b");
  f.type_b = x.size();
  x.i32(1).i32(0).i32(0).i32(1).i32(5);
  f.table = x.size();
  x.i64(0).i32(2).i32(3);
  x.f32(1).f32(2).f32(3).f32(4);
  f.nnz = x.size();
  x.i32(3).f32(7).f32(1).f32(2).i32(3).i32(0).i32(9);
  f.column_starts = x.size();
  x.i32(0).i32(1).i32(3);
  f.bytes = x.b;
  return f;
}

Outcome run_cbf(const std::string& dir, const std::string& bytes) {
  return capture(dir, [&](Outcome& out) {
    CbfOptions options;
    options.file = write_file(dir, "data.cbf", bytes);
    options.trace_level = 0;
    options.log_sink = [](int, std::string_view) {};
    auto d = make_cbf_deserializer(options);
    out.data = render_all(*d);
  });
}

// A FormatError about data.cbf at a byte offset in [lo, hi].
void expect_located(const Outcome& o, uint64_t lo, uint64_t hi) {
  ASSERT_EQ(to_string(o.kind), std::string(to_string(Kind::kFormat))) << o.what << " data: " << o.data;
  EXPECT_EQ(o.location.file, "data.cbf") << o.what;
  ASSERT_TRUE(o.location.byte_offset.has_value()) << o.what;
  EXPECT_GE(*o.location.byte_offset, lo) << o.what;
  EXPECT_LE(*o.location.byte_offset, hi) << o.what;
  EXPECT_NE(o.what.find("data.cbf"), std::string::npos) << o.what;
}

Case located(std::string name, std::function<std::string()> bytes, uint64_t lo, uint64_t hi) {
  Case c;
  c.name = std::move(name);
  c.check = [bytes = std::move(bytes), lo, hi](const std::string& dir) {
    expect_located(run_cbf(dir, bytes()), lo, hi);
  };
  return c;
}

Case truncations(std::string name, std::string bytes) {
  Case c;
  c.name = std::move(name);
  c.check = [bytes = std::move(bytes)](const std::string& dir) {
    for (size_t n = 0; n < bytes.size(); ++n) {
      SCOPED_TRACE("truncated to " + std::to_string(n) + " of " + std::to_string(bytes.size()) + " bytes");
      expect_located(run_cbf(dir, bytes.substr(0, n)), 0, n);
    }
  };
  return c;
}

// Converts `ctf` (streams a: dense 1, b: sparse 7) to `to` and reads the output back.
Outcome run_convert(const std::string& dir, const std::string& ctf, DataFormat to) {
  return capture(dir, [&](Outcome& out) {
    ConvertOptions options;
    options.to = to;
    options.streams = {parse_convert_stream("a::1:dense"), parse_convert_stream("b::7:sparse")};
    options.log = [](std::string_view) {};
    const std::string output = dir + "/data.cbf";
    convert_file(write_file(dir, "data.ctf", ctf), DataFormat::kCtf, output, options);
    CbfOptions read;
    read.file = output;
    read.element_type = std::nullopt;
    read.trace_level = 0;
    auto d = make_cbf_deserializer(read);
    out.data = render_all(*d);
  });
}

Case convert(std::string name, std::string ctf, DataFormat to, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [ctf = std::move(ctf), to](const std::string& dir) { return run_convert(dir, ctf, to); };
  c.expect = std::move(expect);
  return c;
}

// ---- chunk tables that lie ----

// A file written by CbfWriter, with the offsets of its chunk table rows and chunk bodies found from the
// layout (not from the reader): current layout, the rows are the 16-byte records before the trailer;
// legacy, they follow the header, whose size the streams below fix.
struct Written {
  std::string bytes;
  std::vector<uint64_t> rows;
  std::vector<uint64_t> chunks;  // absolute offsets of the chunk bodies
};

template <typename T>
T peek(const std::string& bytes, size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

// Stream a (dense float, dim 1) and, if `sparse`, stream b (sparse float, dim 4). Sequence k has
// `samples[k]` samples of a (1 + k, ...) and one sample {k % 4 : 10 + k} of b; chunks of `chunk_bytes`.
Written written(const std::string& dir, CbfLayout layout, bool sparse, const std::vector<uint32_t>& samples,
                uint64_t chunk_bytes) {
  std::vector<CbfWriterStream> streams{{"a", StorageFormat::kDense, ElementType::kFloat, 1}};
  if (sparse) streams.push_back({"b", StorageFormat::kSparseCsc, ElementType::kFloat, 4});
  const std::string path = dir + "/written.cbf";
  {
    CbfWriter w(path, streams, CbfWriterOptions{layout, chunk_bytes});
    for (size_t k = 0; k < samples.size(); ++k) {
      std::vector<float> a(samples[k]);
      for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(1 + k + i);
      const float b_value = static_cast<float>(10 + k);
      const int32_t b_index = static_cast<int32_t>(k % 4);
      const uint32_t b_count = 1;
      std::vector<SequenceData> data{cbf_test::dense_data(samples[k], a.data())};
      if (sparse) data.push_back(cbf_test::sparse_data(1, &b_value, &b_index, &b_count, 1));
      w.add_sequence(data, std::vector<ElementType>(data.size(), ElementType::kFloat));
    }
    w.finish();
  }
  const std::vector<unsigned char> raw = cbf_test::read_bytes(path);
  Written out;
  out.bytes.assign(raw.begin(), raw.end());
  if (layout == CbfLayout::kCurrent) {
    const auto header = static_cast<size_t>(peek<int64_t>(out.bytes, out.bytes.size() - 8));
    const uint32_t n = peek<uint32_t>(out.bytes, header + 8);
    for (uint32_t i = 0; i < n; ++i) {
      out.rows.push_back(out.bytes.size() - 8 - 16 * uint64_t{n - i});
      out.chunks.push_back(static_cast<uint64_t>(peek<int64_t>(out.bytes, out.rows.back())));
    }
  } else {
    const auto n = static_cast<uint64_t>(peek<int64_t>(out.bytes, 8));
    // version, chunk count, input count; a: name length, "a", type, element type, dim; b: five int32s + "b"
    const uint64_t table = 8 + 8 + 4 + (4 + 1 + 4 + 4 + 4) + (sparse ? 4 + 1 + 4 * 5 : 0);
    for (uint64_t i = 0; i < n; ++i) {
      out.rows.push_back(table + 16 * i);
      out.chunks.push_back(table + 16 * n + static_cast<uint64_t>(peek<int64_t>(out.bytes, out.rows.back())));
    }
  }
  return out;
}

// Sets the sequence and sample counts of row `row` (current: two uint32; legacy: two int32).
void set_counts(Written& f, size_t row, uint32_t sequences, uint32_t samples) {
  poke<uint32_t>(f.bytes, f.rows[row] + 8, sequences);
  poke<uint32_t>(f.bytes, f.rows[row] + 12, samples);
}

// A case over a written file that `lie` changes; `expect` gets the file to compute offsets from.
Case lying(std::string name, CbfLayout layout, bool sparse, std::vector<uint32_t> samples,
           uint64_t chunk_bytes, std::function<void(Written&)> lie,
           std::function<Expect(const Written&)> expect) {
  Case c;
  c.name = std::move(name);
  c.check = [=](const std::string& dir) {
    Written f = written(dir, layout, sparse, samples, chunk_bytes);
    lie(f);
    const Outcome o = run_cbf(dir, f.bytes);
    const Expect e = expect(f);
    ASSERT_EQ(to_string(o.kind), std::string(to_string(e.kind))) << o.what << " data: " << o.data;
    EXPECT_EQ(o.cntk_text, e.text) << o.what;
    EXPECT_EQ(o.location.file, e.location.file) << o.what;
    EXPECT_EQ(o.location.byte_offset, e.location.byte_offset) << o.what;
    EXPECT_EQ(o.location.sequence_key, e.location.sequence_key) << o.what;
    EXPECT_NE(o.what.find("data.cbf"), std::string::npos) << o.what;
  };
  return c;
}

// Two sequences of dense inputs a and b (one value 1 and 2 each); the second holds `a_samples` and
// `b_samples` samples of them. Read unrandomized by a composite reader.
Outcome run_two_sequences(const std::string& dir, uint32_t a_samples, uint32_t b_samples) {
  const float one = 1, two = 2;
  {
    CbfWriter w(dir + "/data.cbf", {{"a", StorageFormat::kDense, ElementType::kFloat, 1},
                                    {"b", StorageFormat::kDense, ElementType::kFloat, 1}});
    const std::vector<ElementType> types(2, ElementType::kFloat);
    w.add_sequence({cbf_test::dense_data(1, &one), cbf_test::dense_data(1, &two)}, types);
    w.add_sequence({cbf_test::dense_data(a_samples, a_samples ? &one : nullptr),
                    cbf_test::dense_data(b_samples, b_samples ? &two : nullptr)},
                   types);
    w.finish();
  }
  return run_reader(dir,
                    "Train = [ reader = [ randomize = false ; deserializers = ( [ type = "
                    "\"CNTKBinaryFormatDeserializer\" ; file = \"$dir$/data.cbf\" ] ) ] ]\n",
                    {});
}

std::string str(uint64_t v) {
  return std::to_string(v);
}

}  // namespace

std::vector<Case> cbf_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };
  const CurrentFile cur = current_file();
  const LegacyFile leg = legacy_file();
  const uint64_t csize = cur.bytes.size();
  const uint64_t lsize = leg.bytes.size();

  {
    Case c;
    c.name = "cbf_current_layout_reads";
    c.run = [bytes = cur.bytes](const std::string& dir) { return run_cbf(dir, bytes); };
    c.expect = ok("0 a=[1 2] b=[3:7]; 1 a=[3 4][5 6] b=[0:1][4:2 1:3]");
    add(std::move(c));
  }
  {
    Case c;
    c.name = "cbf_legacy_layout_reads";
    c.run = [bytes = leg.bytes](const std::string& dir) { return run_cbf(dir, bytes); };
    c.expect = ok("0 a=[1 2] b=[3:7]; 1 a=[3 4] b=[0:1][4:2]");
    add(std::move(c));
  }

  // ---- current layout ----
  add(located(
      "cbf_bad_magic",
      [b = cur.bytes]() mutable {
        b[0] ^= 0x20;
        return b;
      },
      0, 0));
  add(located(
      "cbf_version_2",
      [b = cur.bytes]() mutable {
        poke<uint32_t>(b, 8, 2);
        return b;
      },
      8, 8));
  add(located(
      "cbf_trailer_past_the_end",
      [b = cur.bytes, csize]() mutable {
        poke<int64_t>(b, csize - 8, static_cast<int64_t>(csize));
        return b;
      },
      0, csize));
  add(located(
      "cbf_trailer_negative",
      [b = cur.bytes, csize]() mutable {
        poke<int64_t>(b, csize - 8, -1);
        return b;
      },
      0, csize));
  add(located(
      "cbf_trailer_points_into_the_prefix",
      [b = cur.bytes, csize]() mutable {
        poke<int64_t>(b, csize - 8, 4);
        return b;
      },
      0, csize));
  add(located(
      "cbf_header_magic_wrong",
      [b = cur.bytes, h = cur.header]() mutable {
        b[h] ^= 1;
        return b;
      },
      cur.header, cur.header));
  add(located(
      "cbf_unknown_encoding",
      [b = cur.bytes, at = cur.encoding_a]() mutable {
        b[at] = 2;
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_unknown_element_type",
      [b = cur.bytes, at = cur.type_b]() mutable {
        b[at] = 7;
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_name_length_2_pow_32_minus_1",
      [b = cur.bytes, at = cur.name_len_a]() mutable {
        poke<uint32_t>(b, at, 0xFFFFFFFFu);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_chunk_count_2_pow_32_minus_1",
      [b = cur.bytes, h = cur.header]() mutable {
        poke<uint32_t>(b, h + 8, 0xFFFFFFFFu);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_input_count_2_pow_32_minus_1",
      [b = cur.bytes, h = cur.header]() mutable {
        poke<uint32_t>(b, h + 12, 0xFFFFFFFFu);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_sparse_dim_2_pow_31",
      [b = cur.bytes, at = cur.dim_b]() mutable {
        poke<uint32_t>(b, at, 0x80000000u);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_chunk_offset_past_the_end",
      [b = cur.bytes, t = cur.table, csize]() mutable {
        poke<int64_t>(b, t, static_cast<int64_t>(csize) + 100);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_chunk_offset_negative",
      [b = cur.bytes, t = cur.table]() mutable {
        poke<int64_t>(b, t, -12);
        return b;
      },
      cur.header, csize));
  add(located(
      "cbf_chunk_sequence_count_2_pow_32_minus_1",
      [b = cur.bytes, t = cur.table]() mutable {
        poke<uint32_t>(b, t + 8, 0xFFFFFFFFu);
        return b;
      },
      0, csize));
  add(located(
      "cbf_sparse_nnz_overflow",
      [b = cur.bytes, at = cur.nnz_seq1]() mutable {
        poke<uint32_t>(b, at, 0xFFFFFFFFu);
        return b;
      },
      12, cur.header));
  add(located(
      "cbf_sparse_nnz_per_sample_disagrees",
      [b = cur.bytes, at = cur.rows_seq1]() mutable {
        poke<int32_t>(b, at + 16, 5);
        return b;
      },
      12, cur.header));
  add(located(
      "cbf_sparse_row_index_equal_to_dim",
      [b = cur.bytes, at = cur.rows_seq1]() mutable {
        poke<int32_t>(b, at + 4, 5);
        return b;
      },
      12, cur.header));
  add(located(
      "cbf_sparse_row_index_negative",
      [b = cur.bytes, at = cur.rows_seq1]() mutable {
        poke<int32_t>(b, at, -1);
        return b;
      },
      12, cur.header));
  add(located(
      "cbf_dense_sample_count_too_large",
      [b = cur.bytes, at = cur.count_a_seq1]() mutable {
        poke<uint32_t>(b, at, 1000000);
        return b;
      },
      12, cur.header));
  add(truncations("cbf_current_truncated_at_every_offset", cur.bytes));

  // ---- legacy v1 layout ----
  add(located(
      "cbf_legacy_chunk_count_negative",
      [b = leg.bytes, at = leg.num_chunks]() mutable {
        poke<int64_t>(b, at, -1);
        return b;
      },
      0, lsize));
  add(located(
      "cbf_legacy_chunk_count_huge",
      [b = leg.bytes, at = leg.num_chunks]() mutable {
        poke<int64_t>(b, at, int64_t{1} << 40);
        return b;
      },
      0, lsize));
  add(located(
      "cbf_legacy_unknown_input_type",
      [b = leg.bytes, at = leg.type_b]() mutable {
        poke<int32_t>(b, at, 2);
        return b;
      },
      0, lsize));
  add(located(
      "cbf_legacy_chunk_offset_past_the_end",
      [b = leg.bytes, t = leg.table]() mutable {
        poke<int64_t>(b, t, 1000);
        return b;
      },
      0, lsize));
  add(located(
      "cbf_legacy_nnz_overflow",
      [b = leg.bytes, at = leg.nnz]() mutable {
        poke<int32_t>(b, at, 0x7FFFFFFF);
        return b;
      },
      0, lsize));
  add(located(
      "cbf_legacy_column_starts_decreasing",
      [b = leg.bytes, at = leg.column_starts]() mutable {
        poke<int32_t>(b, at + 4, 3);
        poke<int32_t>(b, at + 8, 1);
        return b;
      },
      0, lsize));
  add(truncations("cbf_legacy_truncated_at_every_offset", leg.bytes));

  // ---- converters (found by fuzz_roundtrip: an empty sparse sample made the writer memcpy from null) ----
  add(convert("cbf_convert_empty_sparse_sample", "|b|a 0\n", DataFormat::kCbf, ok("0 a=[0] b=[]")));
  add(convert("cbf_convert_empty_sparse_sample_legacy", "|b|a 0\n", DataFormat::kCbfLegacy,
              ok("0 a=[0] b=[]")));
  {
    // Found by the long fuzz_roundtrip run: a subnormal double that no decimal spelling gives back through
    // CNTK's number formula. The converter writes 17 digits and says so, in the summary and in its log.
    Case c;
    c.name = "ctf_text_convert_unspellable_subnormal_is_counted_and_reported";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome& out) {
        ConvertOptions options;
        options.to = DataFormat::kCtf;
        options.element_type = ElementType::kDouble;
        options.streams = {parse_convert_stream("a::1:dense"), parse_convert_stream("b::7:sparse")};
        std::string log;
        options.log = [&log](std::string_view line) { log += std::string(line) + "\n"; };
        const ConvertSummary s = convert_file(write_file(dir, "data.ctf", "0 |a 0.5 |b 1:42.0e-317\n"),
                                              DataFormat::kCtf, dir + "/out.ctf", options);
        out.data = "inexact " + std::to_string(s.inexact_values) + "\n" + log;
      });
    };
    c.expect =
        ok("inexact 1\nwarning: 1 value(s) have no decimal spelling that CNTK's CTF number parser reads back "
           "exactly; "
           "they were written with 17 significant digits and read back within an ulp or two.\n");
    add(std::move(c));
  }
  // ---- chunk tables that lie: every count checked against the others and the chunk's bytes ----
  // Four dense sequences of one sample; 24-byte chunks (current: length + count + value = 12 bytes per
  // sequence) and 8-byte chunks (legacy: the value alone) give two chunks of two sequences.
  const std::vector<uint32_t> four{1, 1, 1, 1};
  constexpr auto kCur = CbfLayout::kCurrent;
  constexpr auto kLeg = CbfLayout::kLegacyV1;
  // A row with no sequences but samples: the chunk was skipped, and its two sequences lost.
  add(lying(
      "cbf_row_without_sequences_but_with_samples", kCur, false, four, 24,
      [](Written& f) { set_counts(f, 0, 0, 2); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 0 sequences but 2 samples (chunk table row at byte offset " +
                                   str(f.rows[0]) + "); a chunk without sequences holds no samples.",
                               "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_without_sequences_but_with_samples", kLeg, false, four, 8,
      [](Written& f) { set_counts(f, 0, 0, 2); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 0 sequences but 2 samples (chunk table row at byte offset " +
                                   str(f.rows[0]) + "); a chunk without sequences holds no samples.",
                               "data.cbf", f.rows[0]);
      }));
  // No sequences and no samples, but the chunk's bytes hold two sequences: lost the same way.
  add(lying(
      "cbf_row_without_sequences_over_bytes", kCur, false, four, 24,
      [](Written& f) { set_counts(f, 0, 0, 0); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 0 sequences but holds 24 bytes (offset " + str(f.chunks[0]) +
                                   " to " + str(f.chunks[1]) +
                                   "); no row of the chunk table describes them (chunk table row at byte "
                                   "offset " +
                                   str(f.rows[0]) + ").",
                               "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_without_sequences_over_bytes", kLeg, false, four, 8,
      [](Written& f) { set_counts(f, 0, 0, 0); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 0 sequences (chunk table row at byte offset " +
                                   str(f.rows[0]) + "), whose records end at byte offset " +
                                   str(f.chunks[0]) + ", but the chunk ends at byte offset " +
                                   str(f.chunks[1]) + ": 8 bytes belong to no sequence.",
                               "data.cbf", f.rows[0]);
      }));
  // Fewer sequences than the chunk holds: the rest of the chunk was never read.
  add(lying(
      "cbf_row_with_fewer_sequences_than_its_bytes", kCur, false, four, 24,
      [](Written& f) { set_counts(f, 0, 1, 1); },
      [](const Written& f) {
        // the one length (4 bytes) and one record read as count 1 (the second length), value (a's count)
        return format_error_at("Chunk 0 declares 1 sequences (chunk table row at byte offset " +
                                   str(f.rows[0]) + "), whose records end at byte offset " +
                                   str(f.chunks[0] + 12) + ", but the chunk ends at byte offset " +
                                   str(f.chunks[1]) + ": 12 bytes belong to no sequence.",
                               "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_with_fewer_sequences_than_its_bytes", kLeg, false, four, 8,
      [](Written& f) { set_counts(f, 0, 1, 1); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 1 sequences (chunk table row at byte offset " +
                                   str(f.rows[0]) + "), whose records end at byte offset " +
                                   str(f.chunks[0] + 4) + ", but the chunk ends at byte offset " +
                                   str(f.chunks[1]) + ": 4 bytes belong to no sequence.",
                               "data.cbf", f.rows[0]);
      }));
  // More samples than the sequences hold: sweeps planned with the row's count delivered each sequence
  // again and again (legacy: samples = 100 for two one-sample sequences).
  add(lying(
      "cbf_row_with_more_samples_than_its_bytes_hold", kCur, false, four, 24,
      [](Written& f) { set_counts(f, 0, 2, 100); },
      [](const Written& f) {
        // 24 bytes minus two lengths and two counts leave 8 bytes: two 4-byte samples at most
        return format_error_at("Chunk 0 declares 100 samples in 2 sequences, but its 24 bytes (offset " +
                                   str(f.chunks[0]) + " to " + str(f.chunks[1]) +
                                   ") hold at most 2 (chunk table row at byte offset " + str(f.rows[0]) +
                                   ").",
                               "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_row_with_other_samples_than_its_lengths", kCur, false, four, 24,
      [](Written& f) { set_counts(f, 0, 2, 1); },
      [](const Written& f) {
        return format_error_at(
            "The sequence lengths of chunk 0 add up to 2 samples, but its chunk table row "
            "(byte offset " +
                str(f.rows[0]) + ") says 1.",
            "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_with_more_samples_than_sequences_dense", kLeg, false, four, 8,
      [](Written& f) { set_counts(f, 0, 2, 100); },
      [](const Written& f) {
        return format_error_at(
            "Chunk 0 declares 100 samples for 2 sequences (chunk table row at byte offset " + str(f.rows[0]) +
                "), but every sequence of this file has exactly one sample (all its inputs "
                "are dense).",
            "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_with_fewer_samples_than_sequences", kLeg, true, four, 1 << 20,
      [](Written& f) { set_counts(f, 0, 4, 3); },
      [](const Written& f) {
        return format_error_at("Chunk 0 declares 3 samples for 4 sequences (chunk table row at byte offset " +
                                   str(f.rows[0]) +
                                   "), but every sequence of this file has at least one sample.",
                               "data.cbf", f.rows[0]);
      }));
  add(lying(
      "cbf_legacy_row_with_more_samples_than_its_sparse_rows", kLeg, true, four, 1 << 20,
      [](Written& f) { set_counts(f, 0, 4, 7); },
      [](const Written& f) {
        return format_error_at(
            "The sequences' sample counts of chunk 0 add up to 4 samples, but its chunk "
            "table row (byte offset " +
                str(f.rows[0]) + ") says 7.",
            "data.cbf", f.rows[0]);
      }));
  // A sequence length beyond what its records hold (the sum still agrees with the row): sequence 0 has 3
  // samples and sequence 1 one; the lengths say 1 and 3.
  add(lying(
      "cbf_sequence_length_beyond_its_records", kCur, false, {3, 1}, 1 << 20,
      [](Written& f) {
        poke<uint32_t>(f.bytes, f.chunks[0], 1);
        poke<uint32_t>(f.bytes, f.chunks[0] + 4, 3);
      },
      [](const Written& f) {
        Expect e = format_error_at(
            "Sequence 1 of chunk 0 has length 3, but its longest input holds 1 samples; a "
            "length lies between 1 and the samples of the longest input.",
            "data.cbf", f.chunks[0] + 4);
        e.location.sequence_key = "1";
        return e;
      }));
  {
    // A stream without samples in a sequence: the packer's error names the file, the sequence's entry in
    // its chunk's length prefix, the stream and the sequence (it named none of them).
    Case c;
    c.name = "cbf_stream_without_samples_is_located";
    c.run = [](const std::string& dir) { return run_two_sequences(dir, 1, 0); };
    // chunk 0 starts after the 12-byte prefix; sequence 1's length is its second entry
    c.expect = format_error("Sequences must be at least one frame long.", "data.cbf", 0, 0, 12 + 4, "b", "1");
    add(std::move(c));
  }
  {
    // A sequence without samples in any input (length 0): the same error, located at its length when the
    // chunk is read (it was an unlocated "index is inconsistent" error).
    Case c;
    c.name = "cbf_sequence_without_any_sample_is_located";
    c.run = [](const std::string& dir) { return run_two_sequences(dir, 0, 0); };
    c.expect = format_error_at("Sequences must be at least one frame long.", "data.cbf", 12 + 4);
    c.expect.location.sequence_key = "1";
    add(std::move(c));
  }

  {
    // What an output cannot hold names the input sequence (it named only the writer's sequence number).
    Case c;
    c.name = "cbf_convert_unrepresentable_sequence_is_located";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        const float values[2] = {1, 2};
        {
          CbfWriter w(dir + "/data.cbf", {{"a", StorageFormat::kDense, ElementType::kFloat, 1}});
          w.add_sequence({cbf_test::dense_data(1, values)}, {ElementType::kFloat});
          w.add_sequence({cbf_test::dense_data(2, values)}, {ElementType::kFloat});
          w.finish();
        }
        ConvertOptions options;
        options.to = DataFormat::kCbfLegacy;  // one sample per dense sequence
        options.log = [](std::string_view) {};
        convert_file(dir + "/data.cbf", DataFormat::kCbf, dir + "/out.cbf1", options);
      });
    };
    Expect e;
    e.kind = Kind::kUsage;
    e.text_exact = false;
    // the entry of sequence 1 in the length prefix of chunk 0 (which starts after the 12-byte prefix)
    e.text = "[file 'data.cbf', byte offset 16, sequence 1] (writing 'out.cbf1')";
    c.expect = std::move(e);
    add(std::move(c));
  }
  {
    // Converting some streams of a CBF file: a sequence's length counted samples of a stream left out, which
    // the output does not hold; it is cut to the longest stream written.
    Case c;
    c.name = "cbf_convert_stream_subset_cuts_the_length_to_its_streams";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome& out) {
        const float values[3] = {1, 2, 3};
        {
          CbfWriter w(dir + "/data.cbf", {{"a", StorageFormat::kDense, ElementType::kFloat, 1},
                                          {"b", StorageFormat::kDense, ElementType::kFloat, 1}});
          w.add_sequence({cbf_test::dense_data(3, values), cbf_test::dense_data(1, values + 2)},
                         {ElementType::kFloat, ElementType::kFloat});
          w.finish();
        }
        ConvertOptions options;
        options.to = DataFormat::kCbf;
        options.streams = {parse_convert_stream("b")};
        options.log = [](std::string_view) {};
        convert_file(dir + "/data.cbf", DataFormat::kCbf, dir + "/out.cbf", options);
        CbfOptions read;
        read.file = dir + "/out.cbf";
        read.trace_level = 0;
        auto d = make_cbf_deserializer(read);
        std::vector<SequenceInfo> infos;
        d->sequence_infos_for_chunk(0, infos);
        out.data = "length " + std::to_string(infos.at(0).number_of_samples) + ": " + render_all(*d);
      });
    };
    c.expect = ok("length 1: 0 b=[3]");
    add(std::move(c));
  }

  add(convert("cbf_convert_legacy_round_trip", "0 |a 1 |b 3:2\n1 |a 2 |b 1:1 6:5\n", DataFormat::kCbfLegacy,
              ok("0 a=[1] b=[3:2]; 1 a=[2] b=[1:1 6:5]")));

  // ---- precision other than the stored element type: CNTK's LogicError text (its numbers: stored type
  // 0 = float, 1 = double; precision as CNTK's DataType, 1 = Float, 2 = Double), located at the first
  // input whose type differs ----
  const std::string float_with_double_precision =
      "Unsupported combination of the input data type 0 and precision 2. At the moment, both have to match.";
  auto precision_case = [&add](std::string name, std::string bytes, std::string reader_settings, Expect e) {
    Case c;
    c.name = std::move(name);
    c.run = [bytes = std::move(bytes), reader_settings = std::move(reader_settings)](const std::string& dir) {
      return run_reader(dir, "Train = [ reader = [ " + reader_settings + " ] ]\n", {{"data.cbf", bytes}});
    };
    c.expect = std::move(e);
    add(std::move(c));
  };
  precision_case("cbf_float_file_read_with_double_precision", cur.bytes,
                 "precision = \"double\" ; randomize = false ; deserializers = ( [ type = "
                 "\"CNTKBinaryFormatDeserializer\" ; file = \"$dir$/data.cbf\" ] )",
                 format_error(float_with_double_precision, "data.cbf", 0, 0, cur.type_a, "a"));
  precision_case("cbf_legacy_float_file_read_with_double_precision", leg.bytes,
                 "readerType = \"CNTKBinaryReader\" ; precision = \"double\" ; file = \"$dir$/data.cbf\"",
                 format_error(float_with_double_precision, "data.cbf", 0, 0, leg.type_a, "a"));
  {
    // A double input after a float one, read with the default precision (float).
    std::string bytes = cur.bytes;
    bytes[cur.type_b] = 1;
    precision_case("cbf_double_input_read_with_float_precision", bytes,
                   "readerType = \"CNTKBinaryReader\" ; file = \"$dir$/data.cbf\"",
                   format_error("Unsupported combination of the input data type 1 and precision 1. At the "
                                "moment, both have to match.",
                                "data.cbf", 0, 0, cur.type_b, "b"));
  }
  return cases;
}

#else
std::vector<Case> cbf_cases() {
  return {};
}
#endif

}  // namespace cntkio::catalogue
