// Catalogue: the CNTK Text Format (spec ctf.md §4–§8). Fatal errors carry file, line, column, byte offset,
// stream and sequence key; under maxErrors the surviving data and the counts are exact.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "catalogue/catalogue.hpp"
#include "cntkio/ctf.hpp"

namespace cntkio::catalogue {
namespace {

const std::string kBudget =
    "Reached the maximum number of allowed errors while reading the input file (data.ctf).";
const std::string kMalformed = "Malformed input file. Bailing out.";

Case ctf(std::string name, CtfCase input, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [input = std::move(input)](const std::string& dir) { return run_ctf(dir, input); };
  c.expect = std::move(expect);
  return c;
}

CtfCase text(std::string content, std::string streams, uint64_t max_errors = 0) {
  CtfCase c;
  c.content = std::move(content);
  c.streams = std::move(streams);
  c.max_errors = max_errors;
  return c;
}

Expect with_skips(Expect e, Skips skips) {
  e.skips = std::move(skips);
  return e;
}

// Resident anonymous memory of this process in KiB (heap and private mappings, not the file cache).
// What a case that must keep a gigabyte off the heap may still add to anonymous memory. Under ASan its
// shadow of the gigabyte's mapping and its allocator's quarantine count too: still far below the gigabyte.
#if defined(__SANITIZE_ADDRESS__)
constexpr long kAnonAllowanceKib = 256 * 1024;
#else
constexpr long kAnonAllowanceKib = 64 * 1024;
#endif

long rss_anon_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::stol(line.substr(8));
  }
  return -1;
}

// `head` followed by `hole` NUL bytes that take no disk space (a sparse file made with ftruncate).
std::string write_sparse(const std::string& dir, const std::string& head, off_t hole) {
  const std::string path = write_file(dir, "data.ctf", head);
  if (::truncate(path.c_str(), static_cast<off_t>(head.size()) + hole) != 0) std::perror("truncate");
  return path;
}

constexpr off_t kGiB = off_t{1} << 30;

// Overwrites the 8 bytes at `offset` of a file with `value` (little-endian, as the index cache stores them).
void patch_u64(const std::string& path, std::streamoff offset, uint64_t value) {
  std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(offset);
  io.write(reinterpret_cast<const char*>(&value), sizeof value);
}

// Three one-line sequences of 7 bytes, one chunk each: the cache has a 32-byte header, 3 records of 32 bytes
// (ending at 128), 3 chunk entries of 32 bytes (ending at 224) and a 48-byte footer (272 bytes in all).
CtfCase cached(std::function<void(const std::string&)> damage) {
  CtfCase c;
  c.content = "0 |a 1\n1 |a 2\n2 |a 3\n";
  c.streams = "a:dense:1";
  c.chunk_bytes = 8;
  c.damage_cache = std::move(damage);
  return c;
}

}  // namespace

std::vector<Case> ctf_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };

  // ---- start of file, encodings ----
  add(ctf("ctf_empty_file", text("", "a:dense:1"),
          format_error("Input file is empty.", "data.ctf", 1, 1, 0)));
  add(ctf("ctf_only_whitespace", text(" \n\t\n", "a:dense:1"),
          format_error("Input file is empty (it holds only whitespace).", "data.ctf", 3, 1, 4)));
  add(ctf(
      "ctf_utf16_le_bom", text(std::string("\xFF\xFE|\0a\0", 6), "a:dense:1"),
      format_error("Found a UTF-16 BOM at the beginning of the input file. UTF-16 encoding is not supported; "
                   "convert the file to UTF-8.",
                   "data.ctf", 1, 1, 0)));
  add(ctf("ctf_utf16_be_bom_is_not_an_id", text(std::string("\xFE\xFF\0|\0a", 6), "a:dense:1"),
          format_error("Expected a sequence id at the offset 0, none was found.", "data.ctf", 1, 1, 0)));
  add(ctf("ctf_utf8_bom_skipped", text("\xEF\xBB\xBF|a 1\n|a 2\n", "a:dense:1"), ok("0 a=[1]; 1 a=[2]")));
  add(ctf("ctf_utf8_bom_twice",
          text("\xEF\xBB\xBF\xEF\xBB\xBF"
               "0 |a 1\n",
               "a:dense:1"),
          format_error("Expected a sequence id at the offset 3, none was found.", "data.ctf", 1, 4, 3)));
  add(ctf("ctf_utf8_bom_mid_file_is_blank", text("|a 1\n\xEF\xBB\xBF|a 2\n", "a:dense:1"),
          ok("0 a=[1]; 1 a=[2]")));

  // ---- the index cache: a damaged cache never gives wrong data ----
  add(ctf(
      "ctf_index_cache_record_damaged_behind_its_chunk_table",
      cached([](const std::string& cache) { patch_u64(cache, 32 + 32 + 16, 8); }),  // record 1 offset 7->8
      format_error("The index cache of 'data.ctf' is damaged: the records of chunk 1 do not match its chunk "
                   "table. Delete the cache file; the next run rebuilds it.",
                   "data.ctf._.0.0.0.v1.cache", 0, 0, std::nullopt)));
  add(ctf("ctf_index_cache_truncated_inside_a_record_is_ignored",
          cached([](const std::string& cache) { std::filesystem::resize_file(cache, 32 + 32 + 10); }),
          ok("0 a=[1]; 1 a=[2]; 2 a=[3]")));
  add(ctf("ctf_index_cache_chunk_table_of_another_file_size_is_not_used",
          cached([](const std::string& cache) { patch_u64(cache, 224 + 24, 22); }),
          ok("0 a=[1]; 1 a=[2]; 2 a=[3]")));
  add(ctf(
      "ctf_index_cache_chunk_table_not_covering_the_records_is_not_used",
      cached([](const std::string& cache) { patch_u64(cache, 128 + 32 + 8, 2); }),  // chunk 1: 2 sequences
      ok("0 a=[1]; 1 a=[2]; 2 a=[3]")));
  add(ctf("ctf_index_cache_record_outside_the_file_is_ignored", cached([](const std::string& cache) {
            std::filesystem::resize_file(cache, 128);  // CNTK's layout: no chunk table
            patch_u64(cache, 32 + 2 * 32 + 16, 1000);  // record 2 starts past the end of the 21-byte file
          }),
          ok("0 a=[1]; 1 a=[2]; 2 a=[3]")));

  // ---- line ends and NUL bytes ----
  add(ctf("ctf_cr_only_line_ends", text("0 |a 1\r1 |a 2\r", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 8, 7, "", "0")));
  add(ctf("ctf_cr_only_line_ends_tolerated", text("0 |a 1\r1 |a 2\r", "a:dense:1", 10),
          ok("0 a=[1][2]", {2, 0, 0, {"data.ctf:1:8", "data.ctf:1:1"}})));
  add(ctf("ctf_crlf_line_ends", text("0 |a 1\r\n1 |a 2\r\n", "a:dense:1"), ok("0 a=[1]; 1 a=[2]")));
  add(ctf("ctf_nul_ends_a_value",
          text(std::string("|a 1\0"
                           "2\n",
                           7),
               "a:dense:2"),
          format_error(kBudget, "data.ctf", 1, 6, 5, "", "0")));
  add(ctf("ctf_nul_ends_a_value_tolerated",
          text(std::string("|a 1\0"
                           "2\n",
                           7),
               "a:dense:2", 5),
          ok("0 a=[1 0]", {1, 0, 0, {"data.ctf:1:6"}})));
  add(ctf("ctf_nul_ends_a_name", text(std::string("|a\0b 1\n", 7), "a:dense:1", 5),
          ok("0 a=[0]", {1, 0, 0, {"data.ctf:1:4"}})));
  add(ctf("ctf_nul_bytes_only_line", text(std::string("0 |a 1\n\0\0\0\n", 11), "a:dense:1", 5),
          ok("0 a=[1]", {2, 1, 0, {"data.ctf:2:1", "data.ctf:1:1"}})));

  // ---- sequence ids ----
  add(ctf("ctf_ids_out_of_order_make_separate_sequences", text("2 |a 1\n1 |a 2\n2 |a 3\n", "a:dense:1"),
          ok("2 a=[1]; 1 a=[2]; 2 a=[3]")));
  add(ctf("ctf_id_overflow", text("18446744073709551616 |a 1\n", "a:dense:1"),
          format_error("Overflow while reading a sequence id (it does not fit in 64 bits).", "data.ctf", 1, 1,
                       0)));
  add(ctf("ctf_id_overflow_on_line_2", text("1 |a 1\n99999999999999999999 |a 1\n", "a:dense:1"),
          format_error("Overflow while reading a sequence id (it does not fit in 64 bits).", "data.ctf", 2, 1,
                       7)));
  add(ctf("ctf_id_max_value", text("18446744073709551615 |a 1\n", "a:dense:1"),
          ok("18446744073709551615 a=[1]")));
  add(ctf("ctf_missing_first_id", text("x |a 1\n", "a:dense:1"),
          format_error("Expected a sequence id at the offset 0, none was found.", "data.ctf", 1, 1, 0)));
  add(ctf("ctf_indented_id_continues_the_sequence", text("0 |a 1\n  5 |a 2\n", "a:dense:1", 1),
          ok("0 a=[1][2]", {1, 0, 0, {"data.ctf:2:3"}})));
  add(ctf("ctf_id_directly_followed_by_bar", text("1|a 1\n", "a:dense:1"), ok("1 a=[1]")));
  add(ctf("ctf_id_only_line", text("0 |a 1\n0\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 2, 1, 7, "", "0")));

  // ---- rows ----
  add(ctf("ctf_blank_line_in_sequence", text("1 |a 1\n\n2 |a 2\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 2, 1, 7, "", "1")));
  add(ctf("ctf_blank_line_in_sequence_tolerated", text("1 |a 1\n\n2 |a 2\n", "a:dense:1", 2),
          ok("1 a=[1]; 2 a=[2]", {2, 1, 0, {"data.ctf:2:1", "data.ctf:1:1"}})));
  add(ctf("ctf_trailing_blank_line_line_mode", text("|a 1\n\n", "a:dense:1", 5),
          with_skips(format_error(kMalformed, "data.ctf", 2, 1, 5, "a", "1"), {1, 1, 0, {"data.ctf:2:1"}})));
  {
    CtfCase c = text("|a 1\n\n|a 2\n", "a:dense:1:def");
    add(ctf("ctf_blank_line_not_indexed_with_main_stream", c, ok("0 a=[1]; 2 a=[2]")));
  }
  add(ctf("ctf_no_row_has_the_main_stream", text("|b 1\n", "a:dense:1:def,b:dense:1"),
          format_error("The input file holds no sequence with the input 'a' (definesMBSize).", "data.ctf", 0,
                       0, std::nullopt)));
  add(ctf("ctf_garbage_before_first_sample", text("0 x|a 1\n", "a:dense:1", 1),
          ok("0 a=[1]", {1, 0, 0, {"data.ctf:1:3"}})));
  add(ctf("ctf_row_of_garbage", text("0 |a 1\n0 ???\n", "a:dense:1", 5),
          ok("0 a=[1]", {3, 1, 0, {"data.ctf:2:3", "data.ctf:2:1", "data.ctf:1:1"}})));
  add(ctf("ctf_stream_empty_in_sequence", text("0 |a 1\n1 |b 1\n", "a:dense:1,b:dense:1", 5),
          format_error(kMalformed, "data.ctf", 1, 1, 0, "b", "0")));
  add(ctf("ctf_stream_twice_in_a_row", text("0 |a 1 |a 2\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 1, 0, "", "0")));
  add(ctf("ctf_stream_twice_in_a_row_tolerated", text("0 |a 1 |a 2\n", "a:dense:1", 1),
          ok("0 a=[1][2]", {1, 0, 0, {"data.ctf:1:1"}})));
  add(ctf("ctf_more_rows_than_samples", text("0 |a 1 2 3\n0 |a 4 5\n", "a:dense:2", 5),
          ok("0 a=[4 5]", {3, 1, 1, {"data.ctf:1:11", "data.ctf:1:1", "data.ctf:1:1"}})));
  add(ctf("ctf_budget_is_exact", text("0 |a 1 2 3\n0 |a 4 5\n", "a:dense:2", 2),
          with_skips(format_error(kBudget, "data.ctf", 1, 1, 0, "", "0"),
                     {2, 1, 1, {"data.ctf:1:11", "data.ctf:1:1"}})));

  // ---- names ----
  add(ctf("ctf_empty_name", text("| 1\n", "a:dense:1"), format_error(kBudget, "data.ctf", 1, 2, 1, "", "0")));
  add(ctf("ctf_name_cut_by_end_of_file", text("0 |a 1\n0 |a", "a:dense:1"),
          format_error(kBudget, "data.ctf", 2, 5, 11, "", "0")));
  add(ctf("ctf_unknown_name_ignored", text("|a 1 |b 5 6\n", "a:dense:1"), ok("0 a=[1]")));
  add(ctf("ctf_over_long_name_ignored", text("|a 1 |abcdefgh 5\n", "a:dense:1"), ok("0 a=[1]")));
  add(ctf("ctf_comment_sample_ignored", text("|a 1 |# a comment\n", "a:dense:1"), ok("0 a=[1]")));
  add(ctf("ctf_comment_ends_at_the_next_bar", text("|a 1 |# a comment | with bars\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 20, 19, "", "0")));
  add(ctf("ctf_name_followed_by_bar", text("|a|b 1\n", "a:dense:2,b:dense:1"), ok("0 a=[0 0] b=[1]")));

  // ---- dense values ----
  add(ctf("ctf_dense_too_many_values", text("|a 1 2 3\n", "a:dense:2"),
          format_error(kBudget, "data.ctf", 1, 9, 8, "a", "0")));
  add(ctf("ctf_dense_too_many_values_line_mode_tolerated", text("|a 1 2 3\n|a 4 5\n", "a:dense:2", 5),
          with_skips(format_error(kMalformed, "data.ctf", 1, 1, 0, "a", "0"),
                     {2, 1, 1, {"data.ctf:1:9", "data.ctf:1:1"}})));
  add(ctf("ctf_dense_fewer_values_zero_padded", text("|a 1\n", "a:dense:3"), ok("0 a=[1 0 0]")));
  add(ctf("ctf_dense_last_sample_without_newline_padded", text("|a 1", "a:dense:3"), ok("0 a=[1 0 0]")));
  add(ctf("ctf_number_spellings",
          text("|a 1 -123 +5 45. 02.0 6.78 9.10e-11 1E+05 -6.4265e+020\n", "a:dense:9"),
          ok("0 a=[1 -123 5 45 2 6.78000021 9.09999992e-11 100000 -6.42650015e+20]")));
  {
    CtfCase c = text("|a 1 -123 +5 45. 02.0 6.78 9.10e-11 1E+05 -6.4265e+020\n", "a:dense:9");
    c.doubles = true;
    add(ctf("ctf_number_spellings_double", c, ok("0 a=[1 -123 5 45 2 6.78 9.1e-11 100000 -6.4265e+20]")));
  }
  add(ctf("ctf_number_leading_point", text("|a .5\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 4, 3, "a", "0")));
  add(ctf("ctf_number_inf", text("|a inf\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 4, 3, "a", "0")));
  add(ctf("ctf_number_nan", text("|a nan\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 4, 3, "a", "0")));
  add(ctf("ctf_number_exponent_without_digits", text("|a 1e\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 6, 5, "a", "0")));
  add(ctf("ctf_number_exponent_sign_only", text("|a 1e+\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 7, 6, "a", "0")));
  add(ctf("ctf_number_sign_only", text("|a -\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 5, 4, "a", "0")));
  add(ctf("ctf_number_sign_at_end_of_file", text("|a -", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 5, 4, "a", "0")));
  add(ctf("ctf_number_point_then_exponent_quirk", text("|a 5.e3\n", "a:dense:2"),
          format_error(kBudget, "data.ctf", 1, 6, 5, "a", "0")));
  add(ctf("ctf_number_decimal_comma", text("|a 2,0\n", "a:dense:1"),
          format_error(kBudget, "data.ctf", 1, 5, 4, "a", "0")));
  add(ctf("ctf_number_exponent_overflow_is_inf", text("|a 1e400 -1e400\n", "a:dense:2"),
          ok("0 a=[inf -inf]")));
  add(ctf("ctf_number_exponent_underflow_is_zero", text("|a 1e-400\n", "a:dense:1"), ok("0 a=[0]")));
  add(ctf("ctf_number_thirty_digits", text("|a 123456789012345678901234567890\n", "a:dense:1"),
          ok("0 a=[1.23456789e+29]")));
  add(ctf("ctf_number_huge_exponent_digits", text("|a 1e99999999999999999999\n", "a:dense:1"),
          ok("0 a=[inf]")));
  // Found by fuzz_ctf (minimized): the fast number path multiplied the exponent digits in an int.
  add(ctf("ctf_fuzz_exponent_digits_overflow", text("|a 8e7777777777", "a:dense:1"), ok("0 a=[inf]")));

  // ---- sparse values ----
  add(ctf("ctf_sparse_index_equal_to_dim", text("|b 5:1\n", "b:sparse:5"),
          format_error(kBudget, "data.ctf", 1, 5, 4, "b", "0")));
  add(ctf("ctf_sparse_index_overflow", text("|b 99999999999999999999:1\n", "b:sparse:5"),
          format_error(kBudget, "data.ctf", 1, 23, 22, "b", "0")));
  add(ctf("ctf_sparse_missing_colon", text("|b 3 1\n", "b:sparse:5"),
          format_error(kBudget, "data.ctf", 1, 5, 4, "b", "0")));
  add(ctf("ctf_sparse_missing_value", text("|b 3:\n", "b:sparse:5"),
          format_error(kBudget, "data.ctf", 1, 6, 5, "b", "0")));
  add(ctf("ctf_sparse_negative_index", text("|b -1:1\n", "b:sparse:5"),
          format_error(kBudget, "data.ctf", 1, 4, 3, "b", "0")));
  add(ctf("ctf_sparse_empty_sample", text("|b\n", "b:sparse:5"), ok("0 b=[]")));
  add(ctf("ctf_sparse_unsorted_and_repeated_indices_kept", text("|b 3:1 1:2 3:5\n", "b:sparse:5"),
          ok("0 b=[3:1 1:2 3:5]")));
  add(ctf("ctf_sparse_bad_pair_tolerated", text("0 |b 1:1\n0 |b 1:2 7:3\n0 |b 2:4\n", "b:sparse:5", 5),
          ok("0 b=[1:1][2:4]", {3, 1, 1, {"data.ctf:2:11", "data.ctf:2:1", "data.ctf:1:1"}})));
  add(ctf("ctf_sparse_max_dim_index", text("|b 2147483646:1\n", "b:sparse:2147483647"),
          ok("0 b=[2147483646:1]")));

  // ---- dims (API; config dims are in io_cases) ----
  add(ctf("ctf_dim_zero", text("|a 1\n", "a:dense:0"),
          config_error("Stream 'a' needs a dimension 'dim' greater than 0.", "input.a.dim", "", 0, 0)));
  add(ctf("ctf_dim_2_pow_31_dense", text("|a 1\n", "a:dense:2147483648"),
          config_error("Dense stream 'a' has dim 2147483648, above the maximum 2147483647.", "input.a.dim",
                       "", 0, 0)));
  add(ctf("ctf_dim_2_pow_31_sparse", text("|b 1:1\n", "b:sparse:2147483648"),
          config_error("Sparse stream 'b' has dim 2147483648, above the maximum 2147483647.", "input.b.dim",
                       "", 0, 0)));

  // ---- huge lines (sparse files: no disk space, read through the mapping) ----
  {
    Case c;
    c.name = "ctf_1gib_line_skipped_by_the_indexer";
    c.run = [](const std::string& dir) {
      const long before = rss_anon_kib();
      Outcome o = capture(dir, [&](Outcome& out) {
        CtfOptions options;
        options.file = write_sparse(dir, "|a 1\n", kGiB);
        options.streams = ctf_streams("a:dense:1:def");
        options.trace_level = 0;
        auto d = make_ctf_deserializer(options);
        out.data = render_all(*d);
      });
      // The gigabyte never reaches the heap.
      if (rss_anon_kib() - before > kAnonAllowanceKib)
        o.data += " (anonymous memory grew past the allowance)";
      return o;
    };
    c.expect = ok("0 a=[1]");
    add(std::move(c));
  }
  {
    Case c;
    c.name = "ctf_1gib_line_of_nul_bytes_parsed";
    c.run = [](const std::string& dir) {
      const long before = rss_anon_kib();
      Outcome o = capture(dir, [&](Outcome& out) {
        CtfOptions options;
        options.file = write_sparse(dir, "|a 1\n", kGiB);
        options.streams = ctf_streams("a:dense:1");
        options.trace_level = 0;
        auto d = make_ctf_deserializer(options);
        out.data = render_all(*d);
      });
      if (rss_anon_kib() - before > kAnonAllowanceKib)
        o.what += " (anonymous memory grew past the allowance)";
      return o;
    };
    // The NUL bytes are column delimiters: the second line holds no sample, so stream a is empty there.
    c.expect = format_error(kMalformed, "data.ctf", 2, 1, 5, "a", "1");  // the sequence's start
    add(std::move(c));
  }

  // Every byte value in a name: `|a 1 |<b> 5` (stream a, dense, dim 1; line mode; maxErrors 10).
  {
    Case family;
    family.name = "ctf_every_byte_in_a_name";
    family.check = [](const std::string& dir) {
      for (int b = 0; b < 256; ++b) {
        const char ch = static_cast<char>(b);
        std::string content = "|a 1 |";
        content += ch;
        content += " 5\n";
        Outcome o = run_ctf(dir, text(content, "a:dense:1", 10));
        const bool printable = static_cast<signed char>(ch) >= 0x20;
        Expect e;
        if (ch == 'a') {
          e = ok("0 a=[1][5]", {1, 0, 0, {"data.ctf:1:1"}});  // a second sample of a: a count error
        } else if (ch == '\n') {
          // `|` then LF: empty name (1); line 2 ` 5` is a sequence of its own: garbage (2), empty row (3),
          // and stream a is empty there: fatal.
          e = with_skips(format_error(kMalformed, "data.ctf", 2, 1, 7, "a", "1"),
                         {3, 1, 1, {"data.ctf:1:7", "data.ctf:2:2", "data.ctf:2:1"}});
        } else if (ch == '|') {
          e = ok("0 a=[1]", {2, 0, 2, {"data.ctf:1:7", "data.ctf:1:8"}});  // two empty names
        } else if (ch == ' ' || ch == '\t' || !printable) {
          e = ok("0 a=[1]", {1, 0, 1, {"data.ctf:1:7"}});  // empty name
        } else {
          e = ok("0 a=[1]");  // an unknown name (or a comment): skipped without an error
        }
        SCOPED_TRACE("byte " + std::to_string(b) + ": " + o.what);
        ASSERT_EQ(to_string(o.kind), std::string(to_string(e.kind)));
        if (e.kind == Kind::kFormat) {
          EXPECT_EQ(o.cntk_text, e.text);
          EXPECT_EQ(o.location.line, e.location.line);
          EXPECT_EQ(o.location.column, e.location.column);
          EXPECT_EQ(o.location.stream, e.location.stream);
        } else {
          EXPECT_EQ(o.data, *e.data);
        }
        EXPECT_EQ(o.skips.errors, e.skips->errors);
        EXPECT_EQ(o.skips.rows_skipped, e.skips->rows);
        EXPECT_EQ(o.skips.samples_skipped, e.skips->samples);
        EXPECT_EQ(o.skips.first_locations, e.skips->first_locations);
      }
    };
    add(std::move(family));
  }
  // Every byte value after the first digit of a number: `0 |a 4<b>` LF `0 |a 9` (id mode, two rows).
  {
    Case family;
    family.name = "ctf_every_byte_in_a_number";
    family.check = [](const std::string& dir) {
      for (int b = 0; b < 256; ++b) {
        const char ch = static_cast<char>(b);
        std::string content = "0 |a 4";
        content += ch;
        content += "\n0 |a 9\n";
        Outcome o = run_ctf(dir, text(content, "a:dense:1", 10));
        const bool printable = static_cast<signed char>(ch) >= 0x20;
        Expect e;
        if (ch >= '0' && ch <= '9') {
          e = ok("0 a=[" + std::to_string(40 + (ch - '0')) + "][9]");
        } else if (ch == '.' || ch == ' ' || ch == '\t' || ch == '\r' || (!printable && ch != '\n')) {
          e = ok("0 a=[4][9]");  // the number ends there
        } else if (ch == '\n') {
          e = ok("0 a=[4][9]", {2, 1, 0, {"data.ctf:2:1", "data.ctf:1:1"}});  // a blank row inside sequence 0
        } else if (ch == '|') {
          e = ok("0 a=[4][9]", {1, 0, 1, {"data.ctf:1:8"}});  // `|` + LF: an empty name
        } else if (ch == 'e' || ch == 'E') {
          // An exponent without digits: the sample fails, the row has none, sequence 0 is one sample short.
          e = ok("0 a=[9]", {3, 1, 1, {"data.ctf:1:8", "data.ctf:1:1", "data.ctf:1:1"}});
        } else if (ch == '+' || ch == '-') {
          // 4 is read, then a sign starts a second value that has no digits.
          e = ok("0 a=[9]", {3, 1, 1, {"data.ctf:1:8", "data.ctf:1:1", "data.ctf:1:1"}});
        } else {
          // 4 is read, then a second value cannot start with this byte.
          e = ok("0 a=[9]", {3, 1, 1, {"data.ctf:1:7", "data.ctf:1:1", "data.ctf:1:1"}});
        }
        SCOPED_TRACE("byte " + std::to_string(b) + ": " + o.what);
        ASSERT_EQ(to_string(o.kind), std::string(to_string(e.kind)));
        EXPECT_EQ(o.data, *e.data);
        EXPECT_EQ(o.skips.errors, e.skips->errors);
        EXPECT_EQ(o.skips.rows_skipped, e.skips->rows);
        EXPECT_EQ(o.skips.samples_skipped, e.skips->samples);
        EXPECT_EQ(o.skips.first_locations, e.skips->first_locations);
      }
    };
    add(std::move(family));
  }
  return cases;
}

}  // namespace cntkio::catalogue
