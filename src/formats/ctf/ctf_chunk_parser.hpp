// The parser of one part of a CTF chunk (ChunkParser): the general row parser (ctf_row_parser.cpp) and the
// fast row path (ctf_fast_rows.cpp). Private to the CTF parser; ctf_parallel_parse.cpp drives it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/logger.hpp"
#include "formats/ctf/ctf_chunk_storage.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace cntkio::ctf {

constexpr char kNamePrefix = '|';
constexpr char kCommentMarker = '#';
constexpr char kIndexDelimiter = ':';
constexpr char kRowDelimiter = '\n';

inline bool is_value_delimiter(char c) {
  return c == ' ' || c == '\t';
}
// CNTK compares a signed char with 0x20: bytes 0x80..0xFF are "non-printable" too (spec §2).
inline bool is_printable(char c) {
  return static_cast<signed char>(c) >= 0x20;
}
inline bool is_column_delimiter(char c) {
  return is_value_delimiter(c) || (!is_printable(c) && c != kRowDelimiter);
}
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Thrown by a speculative parse (one part of a chunk parsed on several threads) where the parse would warn,
// log, or count an error: such a chunk is parsed again by one thread, so that messages, the error budget
// and its exceptions come in file order whatever the number of threads.
struct NotClean {};

template <typename T>
class ChunkParser {
 public:
  // Parses into part `part` of `chunk`. A `speculative` parser throws NotClean instead of any side effect.
  ChunkParser(const ParseContext& context, CtfChunk<T>& chunk, size_t part, bool speculative)
      : ctx_(context),
        data_(context.data.data()),
        file_size_(context.data.size()),
        chunk_(chunk),
        storage_(chunk.parts_[part]),
        part_(static_cast<uint32_t>(part)),
        speculative_(speculative) {
    const auto& streams = *ctx_.streams;
    for (size_t i = 0; i < streams.size(); ++i) {
      aliases_.push_back(streams[i].alias);
      dims_.push_back(streams[i].sample_dim());
      dense_.push_back(streams[i].storage == StorageFormat::kDense);
      max_alias_length_ = std::max(max_alias_length_, streams[i].alias.size());
      if (streams[i].defines_mb_size) defining_stream_ = static_cast<int>(i);
    }
    samples_.resize(streams.size());
  }

  void parse_sequence(const IndexedSequence& sequence, size_t index_in_chunk);

  // The most samples of a stream of one sequence stored as Slot::kOneEntryEach (CtfChunk::share_ones).
  size_t longest_one_entry_each() const { return longest_one_entry_each_; }

 private:
  bool can_read() const { return pos_ < end_; }
  char current() const { return data_[pos_]; }

  static bool one_entry_each(const PodBuffer<uint32_t>& counts, size_t begin) {
    for (size_t i = begin; i < counts.size(); ++i) {
      if (counts.data()[i] != 1) return false;
    }
    return true;
  }

  std::string where() const {
    return " at offset " + std::to_string(pos_) + " in the input file (" + *ctx_.file + ")";
  }

  // Messages are built only when their level is enabled: some (sparse suffix, sequence done) are per sample.
  // Called before anything a speculative parse must not do.
  void side_effect() const {
    if (speculative_) throw NotClean{};
  }

  template <typename MakeText>
  void warn(MakeText&& make_text) {
    side_effect();
    if (ctx_.had_warnings != nullptr) ctx_.had_warnings->store(true, std::memory_order_relaxed);
    if (ctx_.logger->enabled(core::LogLevel::kWarning)) {
      ctx_.logger->log(core::LogLevel::kWarning, "WARNING: " + std::string(make_text()));
    }
  }
  template <typename MakeText>
  void info(MakeText&& make_text) {
    if (ctx_.logger->enabled(core::LogLevel::kInfo)) {
      side_effect();
      ctx_.logger->log(core::LogLevel::kInfo, "INFO: " + std::string(make_text()));
    }
  }

  static constexpr size_t kHere = SIZE_MAX;  // an error's offset: the parser's position

  // The general row parser (ctf_row_parser.cpp). Declared inline, as they were when defined in the class:
  // only that file calls them. read_sample and read_sparse_pairs, each called from one place, are forced
  // inline: GCC inlined them while this class was local to one file, but not once it was shared between
  // files, and the general parse of bench/ctf_throughput's sequences file then took 12 % longer.
  inline SourceLocation location(int stream, size_t at = kHere) const;
  inline void count_error(int stream, Dropped dropped = Dropped::kNothing, size_t at = kHere);
  inline void skip_to_next_input();
  inline bool read_row();
  inline void warn_row_exhausted();
  [[gnu::always_inline]] inline bool read_sample();
  inline bool read_dense(StreamStorage<T>& storage, size_t dim);
  inline bool finish_dense(StreamStorage<T>& storage, size_t dim, size_t begin, size_t count);
  [[gnu::always_inline]] inline void read_sparse_pairs(StreamStorage<T>& storage, size_t dim,
                                                       uint32_t& count);
  inline void read_dense_values(StreamStorage<T>& storage, size_t& count);
  inline bool read_sparse(StreamStorage<T>& storage, size_t dim, size_t stream);
  inline bool read_index(uint64_t& value);
  inline bool read_number_fast(double& out);
  inline bool read_number(double& out);

  // The fast row path (ctf_fast_rows.cpp).
  bool read_rows_fast(uint64_t& rows_read);
  [[gnu::noinline]] static bool parse_number_slow(const char*& p, const char* e, double& value);

  // Index of the stream with alias `name`, or aliases_.size(). Streams are usually few: a linear scan beats
  // hashing. Rows usually list the streams in the same order, so the search starts after the last one found.
  // Beyond kStreamsScanned streams, a miss of that guess is looked up in a map: a scan of thousands of
  // streams for each sample would make a row's parse quadratic in the streams.
  size_t find_stream(std::string_view name) {
    const size_t n = aliases_.size();
    if (n > kStreamsScanned) {
      size_t i = next_stream_guess_;
      if (aliases_[i] != name) {
        if (stream_by_alias_.empty()) {
          stream_by_alias_.reserve(n);
          for (size_t k = 0; k < n; ++k) stream_by_alias_.emplace(aliases_[k], k);
        }
        const auto it = stream_by_alias_.find(name);
        if (it == stream_by_alias_.end()) return n;
        i = it->second;
      }
      next_stream_guess_ = i + 1 == n ? 0 : i + 1;
      return i;
    }
    for (size_t k = 0, i = next_stream_guess_; k < n; ++k, i = i + 1 == n ? 0 : i + 1) {
      const std::string& alias = aliases_[i];
      if (alias.size() != name.size()) continue;
      size_t j = 0;
      while (j < name.size() && alias[j] == name[j]) ++j;  // aliases are short: no memcmp call
      if (j == name.size()) {
        next_stream_guess_ = i + 1 == n ? 0 : i + 1;
        return i;
      }
    }
    return n;
  }

  const ParseContext& ctx_;
  const char* data_;
  size_t file_size_;
  CtfChunk<T>& chunk_;
  std::vector<StreamStorage<T>>& storage_;  // this parser's part of the chunk, per stream
  uint32_t part_;
  bool speculative_;
  size_t next_stream_guess_ = 0;
  size_t longest_one_entry_each_ = 0;
  uint64_t fast_attempts_ = 0;  // sequences tried with read_rows_fast, and how many of them failed
  uint64_t fast_failures_ = 0;
  std::vector<size_t> dims_;  // per stream: values of a dense sample, or the sparse dimension
  std::vector<bool> dense_;   // per stream

  std::vector<std::string> aliases_;
  static constexpr size_t kStreamsScanned = 16;
  // Views of aliases_, built at the first miss of the guess beyond kStreamsScanned streams.
  std::unordered_map<std::string_view, size_t> stream_by_alias_;
  size_t max_alias_length_ = 0;
  int defining_stream_ = -1;
  std::vector<uint64_t> samples_;
  Slot* current_slots_ = nullptr;
  uint64_t key_ = 0;
  size_t pos_ = 0;
  size_t range_end_ = 0;
  size_t end_ = 0;
};

}  // namespace cntkio::ctf
