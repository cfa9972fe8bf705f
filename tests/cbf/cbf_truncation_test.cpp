// A CBF file cut by another process while a reader has it mapped (its chunks hand out views into the mapping,
// which the packer copies later): a located IoError, never SIGBUS, and never zeros the file did not hold
// (issue #21).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "config/config_test_util.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;

namespace {

// 60000 sequences of 1-3 samples of a dense stream of 4 values, each value k % 1000 + 1 (never 0).
std::string write_cbf(const TempDir& dir, const std::string& name) {
  std::string text;
  for (int k = 0; k < 60000; ++k) {
    for (int row = 0; row <= k % 3; ++row) {
      const std::string v = std::to_string(k % 1000 + 1);
      text += std::to_string(k) + " |x " + v + " " + v + " " + v + " " + v + "\n";
    }
  }
  const std::string ctf = dir.write(name + ".ctf", text);
  ConvertOptions options;
  options.streams = {parse_convert_stream("x:x:4:dense")};
  options.chunk_size_in_bytes = 64 * 1024;
  options.log = [](std::string_view) {};
  const std::string cbf = dir.path(name + ".bin");
  convert_file(ctf, DataFormat::kCtf, cbf, options);
  return cbf;
}

// `files` is one path or a config array of paths: "(a:b)".
std::unique_ptr<MinibatchSource> reader_for(const std::string& files, bool randomize) {
  const std::string quoted = files.front() == '(' ? files : "\"" + files + "\"";
  const std::string config = "r = [ readerType = CNTKBinaryReader ; file = " + quoted +
                             " ; randomize = " + (randomize ? "true" : "false") +
                             " ; input = [ x = [ alias = x ; dim = 4 ; format = dense ] ] ]\n";
  return MinibatchSource::from_config(Config::from_text(config).get_block("r"));
}

// Reads a sweep: true if it ended, false if an IoError naming the file stopped it. No value may be 0.
bool read_sweep(MinibatchSource& source, const std::string& file) {
  try {
    source.start_epoch(256, 0, kFullSweep);
    Minibatch mb;
    while (source.next_minibatch(mb)) {
      const auto* v = reinterpret_cast<const float*>(mb.streams[0].values.data());
      const Layout& layout = mb.streams[0].layout;
      for (size_t row = 0; row < layout.num_parallel; ++row) {
        for (size_t t = 0; t < layout.num_time_steps; ++t) {
          if (layout.is_gap(row, t)) continue;
          const size_t column = t * layout.num_parallel + row;
          for (size_t k = 0; k < 4; ++k) EXPECT_NE(v[column * 4 + k], 0.0f) << "a zero the file never held";
        }
      }
    }
    return true;
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), file);
    EXPECT_NE(std::string(e.what()).find("cut while being read"), std::string::npos) << e.what();
    return false;
  }
}

}  // namespace

TEST(CbfTruncation, AFileCutWhileReadIsAnIoErrorNamingIt) {
  TempDir dir;
  const std::string cbf = write_cbf(dir, "d");
  auto source = reader_for(cbf, false);
  source->start_epoch(256, 0, kFullSweep);
  Minibatch mb;
  ASSERT_TRUE(source->next_minibatch(mb));
  ASSERT_EQ(::truncate(cbf.c_str(), 100000), 0);
  EXPECT_FALSE(read_sweep(*source, cbf));
}

// In a corpus of several files the check looks at the files read since the last one.
TEST(CbfTruncation, AFileOfACorpusCutWhileReadIsAnIoErrorNamingIt) {
  TempDir dir;
  const std::string a = write_cbf(dir, "a");
  const std::string b = write_cbf(dir, "b");
  for (const bool randomize : {false, true}) {
    auto source = reader_for("(" + a + ":" + b + ")", randomize);
    source->start_epoch(256, 0, kFullSweep);
    Minibatch mb;
    ASSERT_TRUE(source->next_minibatch(mb));
    ASSERT_EQ(::truncate(a.c_str(), 100000), 0);
    EXPECT_FALSE(read_sweep(*source, a)) << "randomize " << randomize;
    write_cbf(dir, "a");
  }
}

TEST(CbfTruncation, AFileCutAtAnyMomentNeverKillsTheProcessNorGivesZeros) {
  TempDir dir;
  std::mt19937 rng(5);
  int stopped = 0;
  for (int round = 0; round < 12; ++round) {
    const std::string cbf = write_cbf(dir, "d" + std::to_string(round));
    auto source = reader_for(cbf, round % 2 == 0);
    const int delay_us = static_cast<int>(rng() % 20000);
    std::jthread cutter([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      ASSERT_EQ(::truncate(cbf.c_str(), 5000), 0);
    });
    if (!read_sweep(*source, cbf)) ++stopped;
  }
  EXPECT_GT(stopped, 0);
}
