// Buffers of released CTF chunks are reused by the chunks parsed next (StorageRecycler): the recycler keeps
// one block per key and frees what it replaces, and chunks parsed into reused blocks read exactly what chunks
// parsed into fresh memory read, in any load order, on one thread or several.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace fs = std::filesystem;

namespace cntkio::ctf {
namespace {

void* block_of(size_t bytes, unsigned char fill) {
  void* block = std::malloc(bytes);
  std::memset(block, fill, bytes);
  return block;
}

TEST(StorageRecycler, KeepsTheLastBlockPerKeyAndHandsItOutOnce) {
  StorageRecycler recycler;
  const size_t big = StorageRecycler::kMinBytes;
  EXPECT_EQ(recycler.take(1, 0).first, nullptr);

  void* first = block_of(big, 1);
  recycler.give(1, first, big);
  void* second = block_of(2 * big, 2);
  recycler.give(1, second, 2 * big);  // replaces (and frees) the first
  EXPECT_EQ(recycler.held_bytes(), 2 * big);

  const auto [block, bytes] = recycler.take(1, big);
  EXPECT_EQ(block, second);
  EXPECT_EQ(bytes, 2 * big);
  EXPECT_EQ(recycler.take(1, 0).first, nullptr);  // handed out once
  EXPECT_EQ(recycler.held_bytes(), 0u);
  std::free(block);
}

TEST(StorageRecycler, FreesBlocksTooSmallToKeepOrToServe) {
  StorageRecycler recycler;
  const size_t big = StorageRecycler::kMinBytes;
  recycler.give(3, block_of(big - 1, 0), big - 1);  // under kMinBytes: freed at once
  EXPECT_EQ(recycler.held_bytes(), 0u);
  EXPECT_EQ(recycler.take(3, 0).first, nullptr);

  recycler.give(4, block_of(big, 0), big);
  EXPECT_EQ(recycler.take(4, big + 1).first, nullptr);  // too small for the request: freed, not kept
  EXPECT_EQ(recycler.held_bytes(), 0u);

  recycler.give(5, block_of(big, 0), big);  // still held when the recycler goes: freed by it
  EXPECT_EQ(recycler.held_bytes(), big);
}

// Sequences of 1-4 rows with a dense stream of 3 values and a sparse stream of 0-40 entries (absent from
// some rows after the first), so that chunks differ in size and each chunk's buffers exceed kMinBytes.
std::string generated_ctf(size_t sequences) {
  std::mt19937_64 rng(7);
  std::string text;
  for (size_t s = 0; s < sequences; ++s) {
    const size_t rows = 1 + rng() % 4;
    for (size_t r = 0; r < rows; ++r) {
      text += std::to_string(s) + " |d " + std::to_string(rng() % 1000) + " " + std::to_string(rng() % 7) +
              ".5 -" + std::to_string(rng() % 3);
      if (r == 0 || rng() % 5 != 0) {
        text += " |s";
        const size_t entries = (r == 0 ? 1 : 0) + rng() % 41;
        for (size_t e = 0; e < entries; ++e) {
          text += " " + std::to_string(rng() % 5000) + ":" + std::to_string(rng() % 100) + "." +
                  std::to_string(rng() % 10);
        }
      }
      text += "\n";
    }
  }
  return text;
}

// Everything a chunk's sequences hold, in sequence order.
struct ChunkContents {
  std::vector<uint32_t> samples;
  std::vector<float> values;
  std::vector<int32_t> indices;
  std::vector<uint32_t> nnz_counts;
  friend bool operator==(const ChunkContents&, const ChunkContents&) = default;
};

ChunkContents contents(const Chunk& chunk, size_t sequences) {
  ChunkContents out;
  std::vector<SequenceData> data;
  for (uint32_t i = 0; i < sequences; ++i) {
    data.clear();
    chunk.get_sequence(i, data);
    const SequenceData& d = data[0];
    const SequenceData& s = data[1];
    out.samples.push_back(d.number_of_samples);
    out.samples.push_back(s.number_of_samples);
    const auto* dv = static_cast<const float*>(d.values);
    out.values.insert(out.values.end(), dv, dv + 3 * d.number_of_samples);
    const auto* sv = static_cast<const float*>(s.values);
    out.values.insert(out.values.end(), sv, sv + s.total_nnz);
    out.indices.insert(out.indices.end(), s.indices, s.indices + s.total_nnz);
    out.nnz_counts.insert(out.nnz_counts.end(), s.nnz_counts, s.nnz_counts + s.number_of_samples);
  }
  return out;
}

class RecycledChunks : public ::testing::TestWithParam<size_t> {};

TEST_P(RecycledChunks, ReadWhatFreshChunksRead) {
  const fs::path dir = fs::temp_directory_path() / ("cntkio_recycler_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string file = (dir / "data.ctf").string();
  std::ofstream(file, std::ios::binary) << generated_ctf(3000);

  CtfOptions options;
  options.file = file;
  CtfStreamOptions d;
  d.name = "d";
  d.dim = 3;
  CtfStreamOptions s;
  s.name = "s";
  s.dim = 5000;
  s.storage = StorageFormat::kSparseCsc;
  options.streams = {d, s};
  options.chunk_size_in_bytes = 256 << 10;
  options.parse_threads = GetParam();
  options.parse_split_bytes = 32 << 10;
  options.trace_level = 0;

  auto reused = make_ctf_deserializer(options);
  const std::vector<ChunkInfo> chunks = reused->chunk_infos();
  ASSERT_GE(chunks.size(), 4u);
  // Each chunk parsed by a deserializer of its own: nothing to reuse.
  std::vector<ChunkContents> fresh;
  for (const ChunkInfo& c : chunks) {
    auto own = make_ctf_deserializer(options);
    fresh.push_back(contents(*own->load_chunk(c.id), c.number_of_sequences));
  }
  // One deserializer, each chunk released before the next loads: later loads reuse earlier chunks' buffers,
  // in an order where chunks of other sizes came before.
  std::vector<uint32_t> order;
  for (const ChunkInfo& c : chunks) order.push_back(c.id);
  for (size_t i = chunks.size(); i-- > 0;) order.push_back(chunks[i].id);
  order.push_back(chunks[chunks.size() / 2].id);
  for (uint32_t id : order) {
    const ChunkContents got = contents(*reused->load_chunk(id), chunks[id].number_of_sequences);
    EXPECT_TRUE(got == fresh[id]) << "chunk " << id;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ParseThreads, RecycledChunks, ::testing::Values(1, 2));

}  // namespace
}  // namespace cntkio::ctf
