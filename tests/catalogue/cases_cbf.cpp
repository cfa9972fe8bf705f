// Catalogue: the CNTK Binary Format, current and legacy v1 layouts (spec cbf.md §1, §3). Every malformed
// file gives a FormatError naming data.cbf and a byte offset inside the file (exactly where the spec pins
// the field down, else within the structure that is wrong); truncating a valid file at any offset does too.
#include <gtest/gtest.h>

#include <cstring>

#include "catalogue/catalogue.hpp"

#if __has_include("cntkio/cbf.hpp") && __has_include("cntkio/convert.hpp")
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
  x.u32(1).text("a").u8(0).u32(2);
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
  x.i32(1).text("a").i32(0).i32(0).i32(2);
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
  add(convert("cbf_convert_legacy_round_trip", "0 |a 1 |b 3:2\n1 |a 2 |b 1:1 6:5\n", DataFormat::kCbfLegacy,
              ok("0 a=[1] b=[3:2]; 1 a=[2] b=[1:1 6:5]")));
  return cases;
}

#else
std::vector<Case> cbf_cases() {
  return {};
}
#endif

}  // namespace cntkio::catalogue
