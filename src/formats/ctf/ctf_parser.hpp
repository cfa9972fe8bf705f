// Pass 2 of the CTF reader: parsing the rows of a chunk's sequences into per-stream buffers, with CNTK's
// exact rules, messages and error budget (spec ctf.md §6, §7). parse_chunk and ErrorBudget are in
// ctf_parallel_parse.cpp, the row parsers in ctf_row_parser.cpp and ctf_fast_rows.cpp (ctf_chunk_parser.hpp),
// the chunk's storage and StorageRecycler in ctf_chunk_storage.{hpp,cpp}.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cntkio/ctf.hpp"
#include "cntkio/sequence.hpp"
#include "core/logger.hpp"
#include "core/thread_pool.hpp"
#include "formats/ctf/ctf_index.hpp"

namespace cntkio::ctf {

/// What a tolerated error dropped: a whole row, one sample (`|name values`), or nothing (a sequence whose
/// sample count differs from its row count is delivered as parsed).
enum class Dropped { kNothing, kRow, kSample };

/// The error budget shared by all chunk loads of one deserializer (CNTK: per parser, never reset).
class ErrorBudget {
 public:
  explicit ErrorBudget(uint64_t max_errors) : remaining_(max_errors) {}
  /// Counts one error; returns false when the budget was already exhausted (the caller must throw).
  bool consume(const std::string& location, Dropped dropped = Dropped::kNothing);
  uint64_t counted() const;
  uint64_t rows_dropped() const;
  uint64_t samples_dropped() const;
  std::vector<std::string> first_locations() const;

 private:
  mutable std::mutex mutex_;
  uint64_t remaining_;
  uint64_t counted_ = 0;
  uint64_t rows_dropped_ = 0;
  uint64_t samples_dropped_ = 0;
  std::vector<std::string> first_locations_;
};

/// Buffers of released chunks, kept for the chunks parsed next. A parse writes each buffer once, and memory
/// fresh from the system costs a page fault per 4 KiB: about an eighth of a sparse chunk's parse here. One
/// buffer is kept per key (a chunk part's stream and array), the last one released: about one chunk's
/// storage while chunks are parsed in the same number of parts (a chunk parsed again by one thread after a
/// speculative split can leave the other parts' buffers held as well); buffers under kMinBytes are freed at
/// once. Thread-safe.
class StorageRecycler {
 public:
  static constexpr size_t kMinBytes = 64 << 10;
  StorageRecycler() = default;
  ~StorageRecycler();
  StorageRecycler(const StorageRecycler&) = delete;
  StorageRecycler& operator=(const StorageRecycler&) = delete;

  /// The block kept for `key` if it holds at least `min_bytes` (it is freed otherwise): {block, bytes}, or
  /// {nullptr, 0}. The caller owns the block (from malloc).
  std::pair<void*, size_t> take(size_t key, size_t min_bytes);
  /// Keeps `block` (from malloc, `bytes` long) for `key`, freeing the block it replaces, or frees it.
  void give(size_t key, void* block, size_t bytes) noexcept;
  size_t held_bytes() const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::pair<void*, size_t>> blocks_;
};

/// Everything a chunk parse needs from its deserializer.
struct ParseContext {
  std::string_view data;              ///< the whole file
  const std::string* file = nullptr;  ///< path as configured (used in messages)
  const std::vector<StreamInfo>* streams = nullptr;
  ElementType element_type = ElementType::kFloat;
  core::Logger* logger = nullptr;
  ErrorBudget* budget = nullptr;
  /// Hint printed with the budget error when warnings were hidden (trace level < 1).
  std::atomic<bool>* had_warnings = nullptr;
  /// Threads for splitting one chunk's parse when the load does not run on a ThreadPool (which is then
  /// used instead): the deserializer's own pool (CtfOptions::parse_threads), or null.
  core::ThreadPool* pool = nullptr;
  /// A chunk is split only into parts of at least this many bytes (CtfOptions::parse_split_bytes).
  uint64_t min_part_bytes = 1 << 20;
  /// Whether rows are first tried with the fast path (same results; off only to test that it is so).
  bool row_fast_path = true;
  /// Where parsed chunks leave their buffers when released, and new ones take them; null: none.
  std::shared_ptr<StorageRecycler> recycler;
};

/// Parses `sequences` (one chunk's, from the index) and returns the loaded chunk. When the calling thread
/// is a ThreadPool's worker (or names one with ThreadPool::ScopedCurrent), or `context.pool` is set, and
/// that pool has idle workers, the sequences are split into runs of about equal bytes that those workers
/// and the caller parse at once; the chunk delivers the same data as a parse by one thread.
ChunkPtr parse_chunk(const ParseContext& context, std::span<const IndexedSequence> sequences);

/// Parses `sequences` on this thread into a chunk whose sequence k is sequences[k], or returns null where
/// the parse would warn, log or count an error (nothing is logged or counted then): parse_chunk of the
/// sequences' whole chunk gives the same data for them.
ChunkPtr parse_speculatively(const ParseContext& context, std::span<const IndexedSequence> sequences);

}  // namespace cntkio::ctf
