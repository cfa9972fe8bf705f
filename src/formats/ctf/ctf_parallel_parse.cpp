// Parsing one CTF chunk: by one thread, or split at sequence boundaries into parts that a pool's threads
// parse at once (speculatively: a part that would warn or count an error sends the chunk back to one thread);
// and the error budget the loads of one deserializer share.
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/thread_pool.hpp"
#include "formats/ctf/ctf_chunk_parser.hpp"
#include "formats/ctf/ctf_chunk_storage.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace cntkio::ctf {

bool ErrorBudget::consume(const std::string& location, Dropped dropped) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (remaining_ == 0) return false;
  --remaining_;
  ++counted_;
  if (dropped == Dropped::kRow) ++rows_dropped_;
  if (dropped == Dropped::kSample) ++samples_dropped_;
  if (first_locations_.size() < 10 && !location.empty()) first_locations_.push_back(location);
  return true;
}

uint64_t ErrorBudget::counted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counted_;
}

uint64_t ErrorBudget::rows_dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return rows_dropped_;
}

uint64_t ErrorBudget::samples_dropped() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_dropped_;
}

std::vector<std::string> ErrorBudget::first_locations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_locations_;
}

namespace {

// First sequence (relative to the chunk's first) of each of `parts` runs of about equal bytes, and `count`.
std::vector<uint64_t> split_sequences(std::span<const IndexedSequence> sequences, uint64_t bytes,
                                      size_t parts) {
  const uint64_t count = sequences.size();
  std::vector<uint64_t> begins{0};
  uint64_t done = 0;
  for (uint64_t i = 0; i < count && begins.size() < parts; ++i) {
    done += sequences[i].size;
    if (done * parts >= bytes * begins.size() && i + 1 < count) begins.push_back(i + 1);
  }
  begins.push_back(count);
  return begins;
}

template <typename T>
ChunkPtr parse_sequential(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  auto chunk = std::make_shared<CtfChunk<T>>(*context.streams, sequences.size(), 1, context.recycler);
  reserve_part(context, sequences, 0, chunk->parts_[0]);
  ChunkParser<T> parser(context, *chunk, 0, false);
  for (size_t i = 0; i < sequences.size(); ++i) parser.parse_sequence(sequences[i], i);
  chunk->share_ones(parser.longest_one_entry_each());
  return chunk;
}

template <typename T>
ChunkPtr parse_chunk_as(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  const uint64_t count = sequences.size();
  // The workers of the pool this load runs on (the pipeline's chunk loaders), else of the deserializer's,
  // are all offered parts, busy or not: a worker still loading another chunk takes what parts remain when
  // it finishes, so the last chunks of a window do not end on one thread while the others wait (asking only
  // the workers idle at the start left a window's last chunk to one thread: dense pipeline 4 % slower).
  core::ThreadPool* pool = core::ThreadPool::current();
  size_t helpers = pool != nullptr ? pool->size() : 0;
  if (pool == nullptr && context.pool != nullptr) {
    pool = context.pool;
    helpers = pool->size();
  }
  // Info lines are written per sequence: a speculative parse would always fall back.
  if (context.logger->enabled(core::LogLevel::kInfo)) helpers = 0;
  uint64_t bytes = 0;
  if (helpers > 0) {
    for (const IndexedSequence& s : sequences) bytes += s.size;
  }
  const uint64_t min_part = std::max<uint64_t>(1, context.min_part_bytes);
  const size_t parts = static_cast<size_t>(std::min<uint64_t>({count, (helpers + 1) * 4, bytes / min_part}));
  if (parts < 2) return parse_sequential<T>(context, sequences);

  // Each part is parsed speculatively into its own storage. Where a part would warn or count an error, the
  // chunk is parsed again by this thread alone, which gives every message and error in file order.
  const std::vector<uint64_t> begins = split_sequences(sequences, bytes, parts);
  auto chunk = std::make_shared<CtfChunk<T>>(*context.streams, count, begins.size() - 1, context.recycler);
  std::vector<char> clean(begins.size() - 1, 0);
  std::vector<size_t> longest_one_entry_each(begins.size() - 1, 0);
  core::run_parts(pool, helpers, begins.size() - 1, [&](size_t k) {
    try {
      const uint64_t b = begins[k];
      const uint64_t n = begins[k + 1] - b;
      reserve_part(context, sequences.subspan(b, n), k, chunk->parts_[k]);
      ChunkParser<T> parser(context, *chunk, k, true);
      for (uint64_t i = b; i < b + n; ++i) parser.parse_sequence(sequences[i], i);
      longest_one_entry_each[k] = parser.longest_one_entry_each();
      clean[k] = 1;
    } catch (...) {
      // NotClean, or anything else the parse by one thread will meet again and report.
    }
  });
  for (char c : clean) {
    if (!c) return parse_sequential<T>(context, sequences);
  }
  chunk->share_ones(*std::max_element(longest_one_entry_each.begin(), longest_one_entry_each.end()));
  return chunk;
}

template <typename T>
ChunkPtr parse_speculatively_as(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  // A few sequences: their buffers are not worth keeping for the chunks' parses (they would replace larger
  // ones in the recycler).
  ParseContext own = context;
  own.recycler = nullptr;
  auto chunk = std::make_shared<CtfChunk<T>>(*own.streams, sequences.size(), 1, nullptr);
  reserve_part(own, sequences, 0, chunk->parts_[0]);
  ChunkParser<T> parser(own, *chunk, 0, true);
  try {
    for (size_t i = 0; i < sequences.size(); ++i) parser.parse_sequence(sequences[i], i);
  } catch (const NotClean&) {
    return nullptr;
  }
  chunk->share_ones(parser.longest_one_entry_each());
  return chunk;
}

}  // namespace

ChunkPtr parse_chunk(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  if (context.element_type == ElementType::kFloat) return parse_chunk_as<float>(context, sequences);
  return parse_chunk_as<double>(context, sequences);
}

ChunkPtr parse_speculatively(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  if (context.element_type == ElementType::kFloat) return parse_speculatively_as<float>(context, sequences);
  return parse_speculatively_as<double>(context, sequences);
}

}  // namespace cntkio::ctf
