// The .npy header parser of the example plugin (examples/plugin/npy_file.cpp): what NumPy writes is read,
// anything else is a FormatError that names the file and the byte offset of what is wrong.
#include "npy_file.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cntkio/errors.hpp"

namespace cntkio_npy {
namespace {

// A .npy file of format `major`.0 whose header is `dict` (padded with spaces and ended with '\n' to a
// multiple of 64 bytes, as NumPy writes it), followed by `data_bytes` zero bytes.
struct NpyBytes {
  std::string bytes;
  uint64_t dict_offset = 0;  // where `dict` starts in the file
};
NpyBytes npy_bytes(unsigned major, const std::string& dict, uint64_t data_bytes) {
  const uint64_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  for (uint64_t i = 0, n = header.size(); i < preamble - 8; ++i, n >>= 8) out += static_cast<char>(n & 0xff);
  out += header;
  out += std::string(data_bytes, '\0');
  return {out, preamble};
}

NpyHeader parse(const NpyBytes& file) {
  return parse_npy_header(file.bytes, file.bytes.size(), "x.npy");
}

// Parses `file`, which must fail; returns the error.
cntkio::FormatError failure(const NpyBytes& file) {
  try {
    parse(file);
  } catch (const cntkio::FormatError& e) {
    EXPECT_EQ(e.location().file, "x.npy");
    return e;
  }
  ADD_FAILURE() << "no FormatError";
  return cntkio::FormatError("none", {});
}

void expect_failure(const NpyBytes& file, uint64_t offset, const std::string& text) {
  const cntkio::FormatError e = failure(file);
  EXPECT_EQ(e.location().byte_offset, offset) << e.what();
  EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
}

const std::string kDict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }";

TEST(NpyHeader, ReadsWhatNumPyWrites) {
  for (unsigned major : {1u, 2u, 3u}) {
    const NpyBytes file = npy_bytes(major, kDict, 3 * 2 * 4);
    const NpyHeader header = parse(file);
    EXPECT_FALSE(header.is_double);
    EXPECT_EQ(header.rows, 3u);
    EXPECT_EQ(header.columns, 2u);
    EXPECT_EQ(header.data_offset, file.bytes.size() - 24);
    EXPECT_EQ(header.data_offset % 64, 0u);
  }
  // Keys in another order, double quotes, Python 2's long integers, no trailing comma.
  const NpyHeader header =
      parse(npy_bytes(1, "{\"shape\": (2L, 5L), \"fortran_order\": False, \"descr\": \"<f8\"}", 2 * 5 * 8));
  EXPECT_TRUE(header.is_double);
  EXPECT_EQ(header.rows, 2u);
  EXPECT_EQ(header.columns, 5u);
}

TEST(NpyHeader, RefusesAnotherFileOrVersion) {
  NpyBytes file = npy_bytes(1, kDict, 24);
  file.bytes[1] = 'n';
  expect_failure(file, 0, "does not start with the .npy magic bytes");
  expect_failure({"\x93NUM", 0}, 0, "does not start with the .npy magic bytes");
  expect_failure({std::string("\x93NUMPY\x01", 7), 0}, 7, "ends inside its preamble");
  expect_failure(npy_bytes(4, kDict, 24), 6, "format version 4.0 is not read");
  file = npy_bytes(1, kDict, 24);
  file.bytes[7] = 1;
  expect_failure(file, 6, "format version 1.1 is not read");
}

TEST(NpyHeader, RefusesAHeaderLongerThanTheLimitOrTheFile) {
  NpyBytes file = npy_bytes(2, kDict, 24);
  file.bytes[10] = 1;  // header length 65536 + what it was
  expect_failure(file, 8, "above the 65536 bytes read");
  file = npy_bytes(1, kDict, 0);
  file.bytes.resize(40);
  expect_failure(file, 8, "the file ends inside its header");
}

TEST(NpyHeader, RefusesOtherValueTypesAndFortranOrder) {
  for (const std::string descr : {">f4", ">f8"}) {
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3, 2), }";
    const NpyBytes file = npy_bytes(1, dict, 24);
    expect_failure(file, file.dict_offset + dict.find("'" + descr), "big-endian");
  }
  for (const std::string descr : {"<i4", "<f2", "|u1", "<c8"}) {
    const std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (3, 2), }";
    const NpyBytes file = npy_bytes(1, dict, 24);
    expect_failure(file, file.dict_offset + dict.find("'" + descr), "of type '" + descr + "'");
  }
  const std::string dict = "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }";
  const NpyBytes file = npy_bytes(1, dict, 24);
  expect_failure(file, file.dict_offset + dict.find("True"), "Fortran order");
}

TEST(NpyHeader, RefusesShapesThatAreNoSequence) {
  struct Case {
    std::string shape;
    std::string text;
  };
  for (const Case& c :
       {Case{"(6,)", "has 1 dimensions"}, Case{"()", "has 0 dimensions"},
        Case{"(1, 3, 2)", "has 3 dimensions"}, Case{"(0, 3)", "no rows"}, Case{"(3, 0)", "no columns"},
        Case{"(4294967296, 1)", "at most 4294967295 samples"}}) {
    const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + c.shape + ", }";
    const NpyBytes file = npy_bytes(1, dict, 24);
    expect_failure(file, file.dict_offset + dict.find(c.shape), c.text);
  }
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 99999999999999999999), }";
  const NpyBytes file = npy_bytes(1, dict, 24);
  expect_failure(file, file.dict_offset + dict.find("9999"), "too large");
}

TEST(NpyHeader, RefusesValuesThatDoNotFillTheFileExactly) {
  NpyBytes file = npy_bytes(1, kDict, 23);
  expect_failure(file, file.bytes.size() - 23, "needs 24 bytes after the header, the file has 23");
  file = npy_bytes(1, kDict, 25);
  expect_failure(file, file.bytes.size() - 25, "needs 24 bytes after the header, the file has 25");
  const std::string dict =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967295, 4611686018427387904), }";
  file = npy_bytes(1, dict, 8);
  EXPECT_NE(std::string(failure(file).what()).find("needs more than 2^64 bytes"), std::string::npos);
}

TEST(NpyHeader, RefusesAMalformedDictionary) {
  struct Case {
    std::string dict;
    std::string at;  // where the error is, in `dict`
    std::string text;
  };
  const Case cases[] = {
      {"'descr': '<f4'}", "'descr'", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x': 1}", "'x'", "unknown header key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 2)}", "'descr': '<f4', 'f",
       "gives 'descr' twice"},
      {"{'descr': '<f4', 'shape': (3, 2)}", "{", "lacks 'fortran_order'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (3, 2)}", "'fortran", "expected ',' or '}'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (3, 2)}", "'<f4", "of type '<f4, '"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (3, 2)}", "'<f4", "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3 2)}", "2)", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, x)}", "x)", "expected a dimension"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2)} x", "x", "text after the header's closing"},
      {"{'descr': '<f\\4', 'fortran_order': False, 'shape': (3, 2)}", "\\", "escapes"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (3, 2)}", "descr:", "expected a quoted string"},
  };
  for (const Case& c : cases) {
    const NpyBytes file = npy_bytes(1, c.dict, 24);
    const size_t at = c.at == "'descr'" ? c.dict.find(c.at) : c.dict.rfind(c.at);
    expect_failure(file, file.dict_offset + at, c.text);
  }
  // An unclosed string runs into the padding and the end of the header.
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), '}";
  const NpyBytes file = npy_bytes(1, dict, 24);
  expect_failure(file, file.dict_offset + dict.rfind("'"), "is not closed");
}

}  // namespace
}  // namespace cntkio_npy
