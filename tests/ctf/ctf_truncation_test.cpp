// A CTF file cut by another process while a reader has it mapped: a located IoError, never SIGBUS, and never
// data the file did not hold (issue #21).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "config/config_test_util.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;

namespace {

std::string corpus(size_t sequences) {
  std::string text;
  for (size_t k = 0; k < sequences; ++k) {
    text += std::to_string(k) + " |x " + std::to_string(k % 1000) + ".5 " + std::to_string(k % 7) + "\n";
  }
  return text;
}

CtfOptions options_for(const std::string& file) {
  CtfOptions o;
  o.file = file;
  CtfStreamOptions x;
  x.name = "x";
  x.dim = 2;
  o.streams = {x};
  o.chunk_size_in_bytes = 64 * 1024;
  o.trace_level = 0;
  return o;
}

// Loads every chunk and checks every value against the corpus: true if all were read, false if an IoError
// naming the file stopped the read (anything else fails the test).
bool read_all_checked(Deserializer& d, const std::string& file) {
  try {
    for (const ChunkInfo& c : d.chunk_infos()) {
      ChunkPtr chunk = d.load_chunk(c.id);
      std::vector<SequenceInfo> infos;
      d.sequence_infos_for_chunk(c.id, infos);
      for (const SequenceInfo& s : infos) {
        std::vector<SequenceData> data;
        chunk->get_sequence(s.index_in_chunk, data);
        const auto* v = static_cast<const float*>(data[0].values);
        const uint64_t k = s.key.sequence;
        EXPECT_EQ(v[0], static_cast<float>(k % 1000) + 0.5f) << "sequence " << k;
        EXPECT_EQ(v[1], static_cast<float>(k % 7)) << "sequence " << k;
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

TEST(CtfTruncation, AFileCutAfterItWasIndexedFailsTheNextLoadWithTheFileNamed) {
  TempDir dir;
  const std::string file = dir.write("d.ctf", corpus(40000));
  auto d = make_ctf_deserializer(options_for(file));
  ASSERT_GT(d->chunk_infos().size(), 4u);
  d->load_chunk(0);
  ASSERT_EQ(::truncate(file.c_str(), 1000), 0);
  EXPECT_FALSE(read_all_checked(*d, file));
}

TEST(CtfTruncation, AFileCutWhileChunksAreParsedNeverKillsTheProcessNorGivesZeros) {
  TempDir dir;
  std::mt19937 rng(11);
  int stopped = 0;
  for (int round = 0; round < 12; ++round) {
    const std::string file = dir.write("d" + std::to_string(round) + ".ctf", corpus(120000));
    auto d = make_ctf_deserializer(options_for(file));
    const int delay_us = static_cast<int>(rng() % 30000);
    std::jthread cutter([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      ASSERT_EQ(::truncate(file.c_str(), 4096), 0);
    });
    if (!read_all_checked(*d, file)) ++stopped;
  }
  EXPECT_GT(stopped, 0);  // most rounds are cut before the end
}
