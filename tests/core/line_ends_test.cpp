// core::LineEnds must find what memchr finds, for every position, in texts whose lines run from empty to
// several blocks long and whose end falls anywhere in a block. The texts are allocated to their exact size,
// so a read past the end shows up under AddressSanitizer.
#include "core/line_ends.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>

namespace cntkio::core {
namespace {

size_t reference(const char* text, size_t size, size_t pos) {
  const void* hit = std::memchr(text + pos, '\n', size - pos);
  return hit == nullptr ? size : static_cast<size_t>(static_cast<const char*>(hit) - text) + 1;
}

std::string random_text(std::mt19937_64& rng) {
  std::string text;
  const size_t lines = rng() % 40;
  for (size_t l = 0; l < lines; ++l) {
    const size_t kind = rng() % 10;
    const size_t length = kind < 6 ? rng() % 40 : kind < 9 ? rng() % 200 : 100 + rng() % 700;
    for (size_t i = 0; i < length; ++i) text += static_cast<char>('a' + rng() % 26);
    text += '\n';
  }
  const size_t tail = rng() % 80;  // a last line without LF, sometimes
  for (size_t i = 0; i < tail; ++i) text += static_cast<char>(' ' + rng() % 90);
  return text;
}

TEST(LineEnds, FindsEveryLineEndAsMemchrDoes) {
  std::mt19937_64 rng(7);
  for (int t = 0; t < 3000; ++t) {
    const std::string source = random_text(rng);
    const size_t size = source.size();
    auto text = std::make_unique<char[]>(size == 0 ? 1 : size);
    std::memcpy(text.get(), source.data(), size);
    const std::string_view view(text.get(), size);
    // Line after line, as the indexer reads.
    LineEnds lines(view);
    for (size_t pos = 0; pos < size;) {
      const size_t end = lines.after_next_lf(pos);
      ASSERT_EQ(end, reference(text.get(), size, pos)) << "text " << t << " pos " << pos;
      ASSERT_GT(end, pos);
      pos = end;
    }
    // Any position, in any order.
    LineEnds jumps(view);
    for (int k = 0; k < 50 && size > 0; ++k) {
      const size_t pos = rng() % (size + 1);
      ASSERT_EQ(jumps.after_next_lf(pos), reference(text.get(), size, pos)) << "text " << t << " pos " << pos;
    }
  }
}

TEST(LineEnds, ATextWithoutLineFeedsEndsAtItsSize) {
  const std::string text(1000, 'x');
  LineEnds lines(text);
  EXPECT_EQ(lines.after_next_lf(0), 1000u);
  EXPECT_EQ(lines.after_next_lf(999), 1000u);
  EXPECT_EQ(lines.after_next_lf(1000), 1000u);
}

}  // namespace
}  // namespace cntkio::core
