// CNTK's conversion of CTF numbers (spec ctf.md §6.6), bit for bit, and a fast path with identical results.
//
// The grammar is [+|-]digits[.[digits]][(e|E)[+|-]digits], computed in double as N + F/D and C * 10^E with
// std::pow, then cast to the element type by the caller. This is not strtod: it can differ by one ulp.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace cntkio::ctf {

enum class NumberStatus : uint8_t {
  kOk,
  kBadCharacter,          ///< a value cannot start with this byte
  kBadAfterSign,          ///< a sign not followed by a digit
  kBadAfterExponent,      ///< 'e' not followed by a sign or digit
  kBadAfterExponentSign,  ///< exponent sign not followed by a digit
  kExhausted,             ///< the input ended where a digit was required
  kFileTooShort,          ///< the file ends before the bytes the index promised
};

struct NumberResult {
  NumberStatus status = NumberStatus::kOk;
  const char* end = nullptr;  ///< first byte not consumed (the offending byte on failure)
  double value = 0;
};

/// CNTK's state machine over [p, end). `end_is_sequence_end`: reaching `end` means the sequence's bytes are
/// all read (otherwise the file is shorter than indexed and any number running into `end` fails).
NumberResult parse_number_exact(const char* p, const char* end, bool end_is_sequence_end);

/// std::pow(10.0, e) for |e| <= 999 from a table computed with std::pow.
double power_of_ten(int exponent);

/// The common spellings (up to 15 integer digits, 15 fraction digits, 3 exponent digits) without the state
/// machine; same bits as parse_number_exact. Returns false (leaving `p` alone) when it cannot decide; the
/// caller then uses parse_number_exact, which also produces every failure.
[[gnu::always_inline]] inline bool parse_number_fast(const char*& p_in, const char* e,
                                                     bool end_is_sequence_end, double& out) {
  static constexpr double kPowersOfTen[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                              1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const char* p = p_in;
  bool negative = false;
  if (p < e && (*p == '-' || *p == '+')) negative = *p++ == '-';
  const char* digits = p;
  uint64_t whole = 0;
  while (p < e && static_cast<unsigned char>(*p - '0') < 10)
    whole = whole * 10 + static_cast<uint64_t>(*p++ - '0');
  if (p == digits || p - digits > 15) return false;
  // Below 2^53 an integer is the same double whether accumulated digit by digit (CNTK) or at once.
  double value = static_cast<double>(whole);
  bool exponent_allowed = true;
  if (p < e && *p == '.') {
    ++p;
    const char* fraction = p;
    uint64_t part = 0;
    while (p < e && static_cast<unsigned char>(*p - '0') < 10)
      part = part * 10 + static_cast<uint64_t>(*p++ - '0');
    const ptrdiff_t count = p - fraction;
    if (count > 15) return false;
    if (count > 0) value = value + static_cast<double>(part) / kPowersOfTen[count];  // 10^k is exact
    exponent_allowed = count > 0;  // CNTK ends "5.e3" after "5.": the 'e' starts the next value
  }
  if (negative) value = -value;
  if (exponent_allowed && p < e && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative_exponent = false;
    if (p < e && (*p == '-' || *p == '+')) negative_exponent = *p++ == '-';
    const char* exponent_digits = p;
    int exponent = 0;
    // Only up to 4 digits are accumulated (more than 3 go to the slow path): no int overflow on long runs.
    while (p < e && static_cast<unsigned char>(*p - '0') < 10) {
      if (p - exponent_digits < 4) exponent = exponent * 10 + (*p - '0');
      ++p;
    }
    if (p == exponent_digits || p - exponent_digits > 3) return false;
    value = value * power_of_ten(negative_exponent ? -exponent : exponent);
  }
  if (p == e && !end_is_sequence_end) return false;
  p_in = p;
  out = value;
  return true;
}

}  // namespace cntkio::ctf
