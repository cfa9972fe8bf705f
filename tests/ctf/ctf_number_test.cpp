// The fast number path must give exactly what CNTK's state machine gives (spec ctf.md §6.6).
#include "formats/ctf/ctf_number.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>

using namespace cntkio::ctf;

namespace {

uint64_t bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Compares the two paths on `token` (with a terminator after it, and at the end of the input).
bool agree(const char* token, size_t size, std::string* why) {
  char text[64];
  std::memcpy(text, token, size);
  text[size] = ' ';
  for (size_t length : {size + 1, size}) {
    const char* end = text + length;
    NumberResult exact = parse_number_exact(text, end, true);
    const char* p = text;
    double fast = 0;
    if (!parse_number_fast(p, end, true, fast)) continue;  // undecided: the exact path is used anyway
    if (exact.status != NumberStatus::kOk || exact.end != p || bits(exact.value) != bits(fast)) {
      *why = "'" + std::string(token, size) + "': exact " + std::to_string(exact.value) + " fast " +
             std::to_string(fast);
      return false;
    }
  }
  return true;
}
bool agree(const std::string& token, std::string* why) {
  return agree(token.data(), token.size(), why);
}

bool long_tests() {
  return std::getenv("CNTKIO_LONG_TESTS") != nullptr;
}

// Sanitizer builds run the suite 5-10 times slower: the randomized proof is then a sample of it.
constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

// Every digit string of min_digits..max_digits digits, with the decimal point at every position (or, with
// `point_after_first`, only after the first digit), each with every exponent suffix; plus the negated
// integer. The mantissas of each length are split among `threads` threads.
uint64_t exhaustive(int min_digits, int max_digits, bool point_after_first,
                    const std::vector<std::string>& exponents, unsigned threads = 1) {
  std::atomic<uint64_t> checked{0};
  std::atomic<bool> failed{false};
  // Compares the spellings of the mantissas [first, last) of `length` digits.
  auto run = [&](int length, uint64_t first, uint64_t last) {
    std::string why;
    char digits[16];
    char token[48];
    uint64_t count = 0;
    for (uint64_t m = first; m < last && !failed.load(std::memory_order_relaxed); ++m) {
      uint64_t v = m;
      for (int i = length - 1; i >= 0; --i, v /= 10) digits[i] = static_cast<char>('0' + v % 10);
      const int first_point = point_after_first ? 1 : 0;
      const int last_point = point_after_first ? 1 : length;
      for (int point = first_point; point <= last_point; ++point) {  // point == length: "45." form
        size_t n = 0;
        if (point == 0) token[n++] = '0';
        std::memcpy(token + n, digits, static_cast<size_t>(point));
        n += static_cast<size_t>(point);
        token[n++] = '.';
        std::memcpy(token + n, digits + point, static_cast<size_t>(length - point));
        n += static_cast<size_t>(length - point);
        for (const std::string& e : exponents) {
          std::memcpy(token + n, e.data(), e.size());
          if (!agree(token, n + e.size(), &why)) {
            ADD_FAILURE() << why;
            failed = true;
            break;
          }
          ++count;
        }
      }
      token[0] = '-';
      std::memcpy(token + 1, digits, static_cast<size_t>(length));
      if (!agree(token, static_cast<size_t>(length) + 1, &why)) {
        ADD_FAILURE() << why;
        failed = true;
      }
      ++count;
    }
    checked += count;
  };
  for (int length = min_digits; length <= max_digits && !failed; ++length) {
    uint64_t limit = 1;
    for (int i = 0; i < length; ++i) limit *= 10;
    std::vector<std::thread> workers;
    for (unsigned t = 1; t < threads; ++t) {
      workers.emplace_back(run, length, limit * t / threads, limit * (t + 1) / threads);
    }
    run(length, 0, limit / threads);
    for (std::thread& w : workers) w.join();
  }
  return checked;
}

}  // namespace

TEST(CtfNumber, ExactPathFollowsTheSpecExamples) {
  struct Case {
    const char* text;
    double value;
  };
  for (Case c : {Case{"1", 1},
                 {"-123", -123},
                 {"+5", 5},
                 {"45.", 45},
                 {"02.0", 2},
                 {"6.78", 6.78},
                 {"1E+05", 1e5},
                 {"-6.4265e+020", -6.4265e20}}) {
    std::string text = std::string(c.text) + " ";
    NumberResult r = parse_number_exact(text.data(), text.data() + text.size(), true);
    EXPECT_EQ(r.status, NumberStatus::kOk) << c.text;
    EXPECT_EQ(r.value, c.value) << c.text;
  }
  for (const char* bad : {".5", "-.5", "inf", "nan", "1e ", "1e+ ", "- "}) {
    std::string text(bad);
    NumberResult r = parse_number_exact(text.data(), text.data() + text.size(), true);
    EXPECT_NE(r.status, NumberStatus::kOk) << bad;
  }
  // CNTK's formula, not strtod: one ulp apart here.
  std::string t = "71.792817565 ";
  EXPECT_EQ(parse_number_exact(t.data(), t.data() + t.size(), true).value, 0x1.1f2bd85e257a4p+6);
  // "5.e3" is 5, and the exponent is left unread.
  std::string q = "5.e3";
  NumberResult r = parse_number_exact(q.data(), q.data() + q.size(), true);
  EXPECT_EQ(r.value, 5);
  EXPECT_EQ(r.end, q.data() + 2);
}

TEST(CtfNumber, FastPathDefersWhenTheFileIsShorterThanIndexed) {
  std::string t = "12.5";
  const char* p = t.data();
  double v;
  EXPECT_FALSE(parse_number_fast(p, t.data() + t.size(), false, v));
  EXPECT_EQ(parse_number_exact(t.data(), t.data() + t.size(), false).status, NumberStatus::kFileTooShort);
}

TEST(CtfNumber, FastPathAgreesOnRandomTokens) {
  // Issue #9's proof: 10^8 generated tokens (26 s on the 2-core CI machine), in every plain build's suite.
  const uint64_t count = kSanitized && !long_tests() ? 2'000'000 : 100'000'000;
  std::mt19937_64 rng(20261122);
  std::string why;
  std::string token;
  for (uint64_t i = 0; i < count; ++i) {
    token.clear();
    uint64_t r = rng();
    if (r & 1) token += (r & 2) ? '-' : '+';
    int whole = 1 + static_cast<int>((r >> 2) % 16);
    for (int k = 0; k < whole; ++k) token += static_cast<char>('0' + rng() % 10);
    if ((r >> 8) % 4 != 0) {
      token += '.';
      int fraction = static_cast<int>((r >> 10) % 17);
      for (int k = 0; k < fraction; ++k) token += static_cast<char>('0' + rng() % 10);
    }
    if ((r >> 16) % 3 == 0) {
      token += (r >> 18) & 1 ? 'e' : 'E';
      if ((r >> 19) & 1) token += (r >> 20) & 1 ? '-' : '+';
      int exponent = 1 + static_cast<int>((r >> 21) % 3);
      for (int k = 0; k < exponent; ++k) token += static_cast<char>('0' + rng() % 10);
    }
    ASSERT_TRUE(agree(token, &why)) << why;
  }
}

TEST(CtfNumber, FastPathAgreesOnEveryShortMantissa) {
  // Every mantissa of 1-5 digits with every decimal point position and exponent suffix.
  const std::vector<std::string> exponents = {"", "e-5", "E+2", "e07", "e-300"};
  uint64_t checked = exhaustive(1, 5, false, exponents);
  EXPECT_GT(checked, 2'000'000u);
  std::printf("compared %llu spellings\n", static_cast<unsigned long long>(checked));
}

TEST(CtfNumber, FastPathAgreesOnEveryMantissaUpToNineDigits) {
  // Long (CNTKIO_LONG_TESTS=1, about 4.4e9 spellings): mantissas of 6-9 digits as d.ddd with short exponents.
  // About 4 minutes of CPU, split among the hardware threads (2.5 minutes on the 2-core CI machine): CI
  // runs it (scripts/test.sh); elsewhere on demand with
  //   CNTKIO_LONG_TESTS=1 build/tests/cntkio_unit_tests --gtest_filter='CtfNumber.*
  if (!long_tests()) GTEST_SKIP() << "set CNTKIO_LONG_TESTS=1 to run";
  uint64_t checked =
      exhaustive(6, 9, true, {"", "e-5", "E+2"}, std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_EQ(checked, 4'444'000'000u);
  std::printf("compared %llu spellings\n", static_cast<unsigned long long>(checked));
}
