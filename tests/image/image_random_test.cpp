// Random draws of the image transforms: the spec's reference values (image.md §8.1) and Boost.Random.
#include "formats/image/image_random.hpp"

#include <gtest/gtest.h>

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <vector>

namespace cntkio::image {
namespace {

TEST(ImageRandom, RawEnginesMatchTheSpecsReferenceOutputs) {
  EngineSet engines(0);
  engines.grow(2);
  const uint32_t seed0[] = {2357136044u, 2546248239u, 3071714933u, 3626093760u, 2588848963u, 3684848379u};
  for (uint32_t v : seed0) EXPECT_EQ(engines.at(0)(), v);
  const uint32_t seed1[] = {1791095845u, 4282876139u, 3093770124u};
  for (uint32_t v : seed1) EXPECT_EQ(engines.at(1)(), v);
}

TEST(ImageRandom, GrowingKeepsTheStateOfExistingEngines) {
  EngineSet engines(5);
  engines.grow(1);
  const uint32_t first = engines.at(0)();
  engines.grow(3);
  Engine fresh(5);
  fresh();
  EXPECT_EQ(engines.at(0)(), fresh());  // engine 0 went on, not reseeded
  EXPECT_NE(first, 0u);
  Engine seven(7);
  EXPECT_EQ(engines.at(2)(), seven());  // engine j is seeded seed + j
}

TEST(ImageRandom, UniformRealMatchesTheSpecsReferenceValues) {
  Engine e(0);
  EXPECT_DOUBLE_EQ(uniform_real(e, -0.2, 0.2), 0.019525400921702379);
  EXPECT_DOUBLE_EQ(uniform_real(e, -0.2, 0.2), 0.037137846555560822);
  EXPECT_DOUBLE_EQ(uniform_real(e, -0.2, 0.2), 0.086075745988637209);
}

TEST(ImageRandom, UniformIntMatchesTheSpecsReferenceValuesAndDrawsNothingForAnEmptyRange) {
  Engine e(0);
  for (int v : {6, 6, 7, 9, 6}) EXPECT_EQ(uniform_int(e, 0, 10), v);
  Engine a(3), b(3);
  EXPECT_EQ(uniform_int(a, 4, 4), 4);
  EXPECT_EQ(a(), b());  // no draw
}

TEST(ImageRandom, BernoulliMatchesTheSpecsReferenceValues) {
  Engine e(0);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(bernoulli_half(e));
  Engine f(1);
  EXPECT_TRUE(bernoulli_half(f));  // 1791095845 <= 2^31 - 1
}

TEST(ImageRandom, NormalMatchesTheSpecsReferenceValues) {
  Engine e(0);
  const float expected[] = {-0.0678141043f, 0.131082773f, 0.115548007f,
                            -0.092212297f,  0.120922402f, 0.0365954936f};
  for (float v : expected) EXPECT_FLOAT_EQ(normal_float(e, 0.1f), v);
}

// The re-implemented draws agree with Boost.Random's own distributions draw for draw.
TEST(ImageRandom, ReimplementedDrawsAgreeWithBoostOverManyDrawsAndRanges) {
  for (uint32_t seed : {0u, 1u, 42u, 12345u}) {
    Engine mine(seed), theirs(seed);
    for (int i = 0; i < 2000; ++i) {
      const int hi = i % 37;
      const int lo = -(i % 5);
      ASSERT_EQ(uniform_int(mine, lo, hi), boost::random::uniform_int_distribution<int>(lo, hi)(theirs));
      const double a = -0.01 * (i % 50), b = 0.3 + 0.01 * (i % 20);
      ASSERT_EQ(uniform_real(mine, a, b), boost::random::uniform_real_distribution<double>(a, b)(theirs));
      ASSERT_EQ(bernoulli_half(mine), boost::random::bernoulli_distribution<>()(theirs));
    }
  }
}

TEST(ImageRandom, EnginesCountTheirOutputsAndRepositionExactly) {
  Engine e(9);
  std::vector<uint32_t> outputs;
  for (int i = 0; i < 1000; ++i) outputs.push_back(e());
  EXPECT_EQ(e.draws(), 1000u);
  Engine later(9);
  later.reposition(600);
  EXPECT_EQ(later.draws(), 600u);
  EXPECT_EQ(later(), outputs[600]);
  later.reposition(10);  // backwards: re-seeded
  EXPECT_EQ(later(), outputs[10]);
  // Boost's distributions draw through the counting engine: every output they take is counted.
  Engine n(0);
  normal_float(n, 0.1f);
  EXPECT_GE(n.draws(), 1u);
}

TEST(ImageRandom, EngineSetsReportAndRepositionEverySlot) {
  EngineSet engines(3);
  engines.grow(4);
  engines.at(0)();
  engines.at(2)();
  engines.at(2)();
  EXPECT_EQ(engines.draws(), (std::vector<uint64_t>{1, 0, 2}));  // the idle last engine is left out
  EngineSet restored(3);
  restored.reposition(engines.draws());
  restored.grow(4);
  for (size_t j = 0; j < 4; ++j) EXPECT_EQ(restored.at(j)(), engines.at(j)()) << "slot " << j;
  restored.reposition({});  // back to the seeds
  EXPECT_EQ(restored.at(1)(), Engine(4)());
}

}  // namespace
}  // namespace cntkio::image
