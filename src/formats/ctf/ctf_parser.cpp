#include "formats/ctf/ctf_parser.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "cntkio/errors.hpp"
#include "core/mapped_file.hpp"
#include "core/thread_pool.hpp"
#include "formats/ctf/ctf_chunk_storage.hpp"
#include "formats/ctf/ctf_number.hpp"

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

  void parse_sequence(const IndexedSequence& sequence, size_t index_in_chunk) {
    const auto& streams = *ctx_.streams;
    const size_t num_streams = streams.size();
    key_ = sequence.key;
    pos_ = sequence.offset;
    range_end_ = sequence.offset + sequence.size;
    end_ = std::min<size_t>(range_end_, file_size_);
    for (size_t s = 0; s < num_streams; ++s) {
      Slot& slot = chunk_.slots_[index_in_chunk * num_streams + s];
      slot.part = part_;
      slot.value_begin = storage_[s].values.size();
      slot.nnz_begin = storage_[s].nnz_counts.size();
      samples_[s] = 0;
    }
    current_slots_ = &chunk_.slots_[index_in_chunk * num_streams];

    uint64_t rows_read = 0;
    // Where the fast path keeps failing (rows with CNTK comments, unknown streams, warnings), each sequence
    // would be read twice: after 8 failures in at least every 8th sequence, this parser stops trying.
    const bool try_fast = ctx_.row_fast_path && (fast_failures_ < 8 || fast_failures_ * 8 < fast_attempts_);
    fast_attempts_ += try_fast ? 1 : 0;
    if (try_fast && !read_rows_fast(rows_read)) {
      ++fast_failures_;
      // Something the fast path does not decide: parse the sequence again with every rule and message.
      for (size_t s = 0; s < num_streams; ++s) {
        const Slot& slot = current_slots_[s];
        storage_[s].values.set_size(slot.value_begin);
        if (!dense_[s]) {
          storage_[s].indices.set_size(slot.value_begin);
          storage_[s].nnz_counts.set_size(slot.nnz_begin);
        }
        samples_[s] = 0;
      }
      rows_read = 0;
      pos_ = sequence.offset;
    }
    uint64_t row_number = 0;
    while (pos_ < end_) {
      ++row_number;
      const size_t row_start = pos_;
      if (read_row()) {
        ++rows_read;
      } else {
        warn([&] {
          return "Could not read a row (# " + std::to_string(row_number) +
                 ") while loading sequence (id = " + std::to_string(key_) + ")" + where() + ".";
        });
        count_error(-1, Dropped::kRow, row_start);
      }
    }

    const uint64_t expected_rows = sequence.samples;
    if (rows_read < expected_rows) {
      warn([&] {
        return "Exhausted all input expected for the current sequence (id = " + std::to_string(key_) + ")" +
               where() + ", but only read " + std::to_string(rows_read) + " out of " +
               std::to_string(expected_rows) + " expected rows.";
      });
    }
    int empty_stream = -1;
    for (size_t s = 0; s < num_streams; ++s) {
      if (samples_[s] == 0) {
        side_effect();
        ctx_.logger->always(core::LogLevel::kError, "ERROR: Input ('" + streams[s].name +
                                                        "') is empty in sequence (id = " +
                                                        std::to_string(key_) + ")" + where() + ".");
        if (empty_stream < 0) empty_stream = static_cast<int>(s);
      }
    }
    uint64_t length = 0;
    bool duplicate = false;
    for (size_t s = 0; s < num_streams; ++s) {
      if (defining_stream_ >= 0 && static_cast<int>(s) != defining_stream_) continue;
      length = std::max<uint64_t>(length, samples_[s]);
      if (samples_[s] > expected_rows) {
        warn([&] {
          return "Input ('" + streams[s].name + "') contains more samples than expected (" +
                 std::to_string(samples_[s]) + " vs. " + std::to_string(expected_rows) +
                 ") for sequence (id = " + std::to_string(key_) + ")" + where() + ".";
        });
        duplicate = true;
      }
    }
    const size_t sequence_start = static_cast<size_t>(sequence.offset);
    if (empty_stream >= 0) {
      throw FormatError("Malformed input file. Bailing out.", location(empty_stream, sequence_start));
    }
    if (duplicate) {
      count_error(-1, Dropped::kNothing, sequence_start);
    } else if (length < expected_rows) {
      warn([&] {
        return "Number of samples for sequence (id = " + std::to_string(key_) + ")" + where() +
               " is less than expected (" + std::to_string(length) + " vs. " + std::to_string(expected_rows) +
               ").";
      });
      count_error(-1, Dropped::kNothing, sequence_start);
    }
    info([&] {
      return "Finished loading sequence (id = " + std::to_string(key_) + ")" + where() +
             ", successfully read " + std::to_string(rows_read) + " out of expected " +
             std::to_string(expected_rows) + " rows.";
    });

    for (size_t s = 0; s < num_streams; ++s) {
      Slot& slot = current_slots_[s];
      slot.samples = samples_[s];
      slot.total_nnz = storage_[s].indices.size() - slot.value_begin;
      if (streams[s].storage == StorageFormat::kDense) {
        slot.total_nnz = 0;
      } else if (slot.total_nnz == slot.samples && one_entry_each(storage_[s].nnz_counts, slot.nnz_begin)) {
        storage_[s].nnz_counts.set_size(slot.nnz_begin);  // this sequence's counts are the last ones stored
        slot.nnz_begin = Slot::kOneEntryEach;
        longest_one_entry_each_ = std::max<size_t>(longest_one_entry_each_, slot.samples);
      }
    }
  }

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

  // Where an error is: `at`, or the parser's position. Errors found at the end of a row or sequence (the
  // parser then stands past its LF, as in CNTK's "at offset" text) pass the row's or sequence's start, so
  // the line named is the one at fault, not the next one.
  SourceLocation location(int stream, size_t at = kHere) const {
    if (at == kHere) at = pos_;
    SourceLocation loc;
    loc.file = *ctx_.file;
    core::LineColumn lc = core::line_column_at(ctx_.data, at);
    loc.line = lc.line;
    loc.column = lc.column;
    loc.byte_offset = at;
    if (stream >= 0) loc.stream = (*ctx_.streams)[static_cast<size_t>(stream)].name;
    loc.sequence_key = std::to_string(key_);
    return loc;
  }

  // One error against maxErrors; throws CNTK's budget error when none is left.
  void count_error(int stream, Dropped dropped = Dropped::kNothing, size_t at = kHere) {
    side_effect();
    if (at == kHere) at = pos_;
    std::string where_text;
    if (ctx_.budget->counted() < 10) {
      core::LineColumn lc = core::line_column_at(ctx_.data, at);
      where_text = *ctx_.file + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
    }
    if (ctx_.budget->consume(where_text, dropped)) return;
    if (ctx_.logger->trace_level() < 1 && ctx_.had_warnings != nullptr && ctx_.had_warnings->load()) {
      ctx_.logger->always(
          core::LogLevel::kError,
          "WARNING: Warnings were generated while reading the input file; set traceLevel to 1 "
          "or higher to see them.");
    }
    throw FormatError(
        "Reached the maximum number of allowed errors while reading the input file (" + *ctx_.file + ").",
        location(stream, at));
  }

  void skip_to_next_input() {
    while (can_read()) {
      char c = current();
      if (c == kNamePrefix || c == kRowDelimiter) return;
      ++pos_;
    }
  }

  // The rows of the current sequence, as read_row() reads them, for rows made only of what the fast path
  // decides: an optional id; samples `|name` of known streams separated by blanks (' ', '\t', '\r'); a
  // dense sample of exactly its dimension of numbers that parse_number_fast decides, a sparse sample of
  // `index:number` pairs with indices below the dimension; at most one sample per stream; a final LF. Such
  // a row draws no message and no error in the general path, whose loop it mirrors step for step; the
  // values and sample counts are the same. Returns false at anything else, leaving partial output that the
  // caller discards before parsing the sequence again with read_row().
  bool read_rows_fast(uint64_t& rows_read) {
    const size_t num_streams = storage_.size();
    const char* p = data_ + pos_;
    const char* const e = data_ + end_;
    while (p < e) {
      while (p < e && is_digit(*p)) ++p;  // the sequence id, already known from the index
      size_t samples_in_row = 0;
      for (;;) {
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) ++p;
        if (p >= e) return false;
        if (*p == kRowDelimiter) break;
        if (*p != kNamePrefix) return false;
        ++p;
        const char* const name = p;
        const char* const name_stop =
            e - p > static_cast<ptrdiff_t>(max_alias_length_) ? p + max_alias_length_ + 1 : e;
        while (p < name_stop && !is_value_delimiter(*p) && *p != kNamePrefix && is_printable(*p)) ++p;
        const size_t name_length = static_cast<size_t>(p - name);
        if (p >= e || name_length == 0 || name_length > max_alias_length_ || *name == kCommentMarker) {
          return false;
        }
        const size_t stream = find_stream(std::string_view(name, name_length));
        if (stream == num_streams) return false;
        StreamStorage<T>& storage = storage_[stream];
        if (dense_[stream]) {
          const size_t dim = dims_[stream];
          T* const first = storage.values.make_room(dim);
          T* out = first;
          T* const out_end = first + dim;
          for (;;) {
            while (p < e && is_value_delimiter(*p)) ++p;
            double value;
            if (!parse_number_fast(p, e, false, value)) {
              // The end of the sample, or a number only the state machine decides.
              if (p >= e) return false;
              if (*p == kNamePrefix || *p == kRowDelimiter || *p == '\r') break;
              if (!parse_number_slow(p, e, value)) return false;
            }
            if (out == out_end) return false;
            *out++ = static_cast<T>(value);
          }
          if (out != out_end) return false;
          storage.values.set_size(storage.values.size() + dim);
        } else {
          const uint64_t dim = dims_[stream];
          T* values = storage.values.data();
          int32_t* indices = storage.indices.data();
          size_t n = storage.values.size();
          const size_t first = n;
          // Room grows with the sample's entries (the part's storage was reserved ahead): room for the rest
          // of the sequence in every sparse stream would cost streams times bytes.
          size_t room = std::min(storage.values.capacity(), storage.indices.capacity());
          for (;;) {
            while (p < e && is_value_delimiter(*p)) ++p;
            if (p >= e) return false;
            if (*p == kNamePrefix || *p == kRowDelimiter || *p == '\r') break;
            if (n == room) {
              const size_t more = std::max<size_t>(16, n - first);
              values = storage.values.make_room(n - first + more) - first;  // size() is still `first`
              indices = storage.indices.make_room(n - first + more) - first;
              room = n + more;
            }
            const char* const digits = p;
            uint64_t index = 0;
            while (p < e && is_digit(*p) && p - digits < 10)
              index = index * 10 + static_cast<uint64_t>(*p++ - '0');
            double value;
            if (p == digits || p >= e || *p != kIndexDelimiter || index >= dim) return false;
            ++p;
            if (!parse_number_fast(p, e, false, value) && !parse_number_slow(p, e, value)) {
              return false;
            }
            values[n] = static_cast<T>(value);
            indices[n] = static_cast<int32_t>(index);
            ++n;
          }
          storage.values.set_size(n);
          storage.indices.set_size(n);
          storage.nnz_counts.push_back(static_cast<uint32_t>(n - first));
        }
        ++samples_[stream];
        if (++samples_in_row > num_streams) return false;
      }
      if (samples_in_row == 0) return false;
      ++p;  // the LF
      ++rows_read;
    }
    pos_ = static_cast<size_t>(p - data_);
    return true;
  }

  // The numbers parse_number_fast leaves undecided, by the exact state machine, without messages; a number
  // running into `e` fails. Out of line: it is rare, and the hot loops stay small.
  [[gnu::noinline]] static bool parse_number_slow(const char*& p, const char* e, double& value) {
    const NumberResult r = parse_number_exact(p, e, false);
    if (r.status != NumberStatus::kOk || r.end >= e) return false;
    p = r.end;
    value = r.value;
    return true;
  }

  bool read_row() {
    while (can_read() && is_digit(current())) ++pos_;  // the sequence id, already known from the index
    size_t samples_in_row = 0;
    while (can_read()) {
      char c = current();
      if (c == kRowDelimiter) {
        ++pos_;
        if (samples_in_row == 0) {
          warn([&] { return "Empty input row" + where() + "."; });
        } else if (samples_in_row > ctx_.streams->size()) {
          warn([&] {
            return "Input row" + where() + " contains more samples than expected (" +
                   std::to_string(samples_in_row) + " vs. " + std::to_string(ctx_.streams->size()) + ").";
          });
        }
        return samples_in_row > 0;
      }
      if (is_column_delimiter(c)) {
        ++pos_;
        continue;
      }
      if (read_sample()) {
        ++samples_in_row;
      } else {
        skip_to_next_input();
      }
    }
    warn_row_exhausted();
    return pos_ >= range_end_;
  }

  void warn_row_exhausted() {
    warn([&] {
      return "Exhausted all input expected for the current sequence while reading an input row" + where() +
             ". Possibly, a trailing newline is missing.";
    });
  }

  bool read_sample() {
    if (current() != kNamePrefix) {
      warn([&] {
        return std::string("Unexpected character ('") + current() +
               "') in place of the input name prefix ('|')" + where() + ".";
      });
      // Only the stray text up to the next '|' or the row's end is passed over: no sample is lost.
      count_error(-1, Dropped::kNothing);
      return false;
    }
    ++pos_;
    if (can_read() && current() == kCommentMarker) {
      ++pos_;
      return false;
    }
    const size_t name_begin = pos_;
    {
      // Scan at most one byte past the longest alias with a local pointer; the loop below then sees either
      // the terminator or the over-long case exactly as CNTK's byte-by-byte reading does.
      const char* p = data_ + pos_;
      const char* const stop = data_ + std::min(end_, name_begin + max_alias_length_);
      while (p < stop && !is_value_delimiter(*p) && *p != kNamePrefix && is_printable(*p)) ++p;
      pos_ = static_cast<size_t>(p - data_);
    }
    while (can_read()) {
      char c = current();
      if (is_value_delimiter(c) || c == kNamePrefix || !is_printable(c)) break;
      if (pos_ - name_begin >= max_alias_length_) {
        info([&] {
          return "Skipping over-long input name starting with '" +
                 std::string(data_ + name_begin, pos_ - name_begin) + "'" + where() +
                 ": it is longer than every input name in the reader config section.";
        });
        return false;
      }
      ++pos_;
    }
    if (!can_read()) {
      warn([&] {
        return "Exhausted all input expected for the current sequence while reading an input name" + where() +
               ".";
      });
      count_error(-1, Dropped::kSample);
      return false;
    }
    if (pos_ == name_begin) {
      warn([&] {
        return std::string("Input name prefix ('|') is followed by an invalid character ('") + current() +
               "')" + where() + ".";
      });
      count_error(-1, Dropped::kSample);
      return false;
    }
    std::string_view name(data_ + name_begin, pos_ - name_begin);
    const size_t stream = find_stream(name);
    if (stream == aliases_.size()) {
      info([&] {
        return "Skipping unknown input ('" + std::string(name) + "')" + where() + ". Input name '" +
               std::string(name) + "' was not specified in the reader config section.";
      });
      return false;
    }
    StreamStorage<T>& storage = storage_[stream];
    const size_t values_before = storage.values.size();
    const size_t nnz_before = storage.nnz_counts.size();
    const bool dense = dense_[stream];
    bool ok = dense ? read_dense(storage, dims_[stream]) : read_sparse(storage, dims_[stream], stream);
    if (!ok) {
      storage.values.resize(values_before);
      if (!dense) {
        storage.indices.resize(values_before);
        storage.nnz_counts.resize(nnz_before);
      }
      count_error(static_cast<int>(stream), Dropped::kSample);
      return false;
    }
    ++samples_[stream];
    return true;
  }

  bool read_dense(StreamStorage<T>& storage, size_t dim) {
    const size_t begin = storage.values.size();
    size_t count = 0;
    read_dense_values(storage, count);
    while (can_read()) {
      char c = current();
      if (is_value_delimiter(c)) {
        ++pos_;
        continue;
      }
      if (!is_printable(c) || c == kNamePrefix) return finish_dense(storage, dim, begin, count);
      double value;
      if (!read_number_fast(value) && !read_number(value)) return false;
      storage.values.push_back(static_cast<T>(value));
      ++count;
    }
    warn_row_exhausted();
    warn([&] {
      return "Exhausted all input expected for the current sequence while reading a dense sample" + where() +
             ".";
    });
    if (count == 0 && pos_ >= range_end_) return false;
    // CNTK skips the size check and the zero padding here, which misaligns the stream; we apply both.
    return finish_dense(storage, dim, begin, count);
  }

  bool finish_dense(StreamStorage<T>& storage, size_t dim, size_t begin, size_t count) {
    if (count > dim) {
      warn([&] {
        return "Dense sample (size = " + std::to_string(count) + ")" + where() +
               " exceeds the expected size (" + std::to_string(dim) + ").";
      });
      return false;
    }
    if (count < dim) {
      warn([&] {
        return "A dense sample" + where() + " has a sparse suffix (expected size = " + std::to_string(dim) +
               ", actual size = " + std::to_string(count) + ").";
      });
      storage.values.resize(begin + dim, T(0));
    }
    return true;
  }

  // Well-formed "index:value" pairs with the fast number path and no per-byte bookkeeping. Stops before
  // anything else (a bad index, a long number, the end of the sample), which the general loop then handles
  // with CNTK's rules and messages, so the outcome is the same as without this loop.
  void read_sparse_pairs(StreamStorage<T>& storage, size_t dim, uint32_t& count) {
    const char* p = data_ + pos_;
    const char* const e = data_ + end_;
    const bool ends_sequence = end_ >= range_end_;
    for (;;) {
      while (p < e && (*p == ' ' || *p == '\t')) ++p;
      const char* const start = p;
      uint64_t index = 0;
      while (p < e && is_digit(*p) && p - start < 10) index = index * 10 + static_cast<uint64_t>(*p++ - '0');
      double value;
      if (p == start || p >= e || *p != kIndexDelimiter || index >= dim ||
          !parse_number_fast(++p, e, ends_sequence, value)) {
        p = start;
        break;
      }
      storage.values.push_back(static_cast<T>(value));
      storage.indices.push_back(static_cast<int32_t>(index));
      ++count;
    }
    pos_ = static_cast<size_t>(p - data_);
  }

  // Dense values separated by blanks, as read_sparse_pairs does for sparse ones.
  void read_dense_values(StreamStorage<T>& storage, size_t& count) {
    const char* p = data_ + pos_;
    const char* const e = data_ + end_;
    const bool ends_sequence = end_ >= range_end_;
    for (;;) {
      while (p < e && (*p == ' ' || *p == '\t')) ++p;
      double value;
      if (!parse_number_fast(p, e, ends_sequence, value)) break;
      storage.values.push_back(static_cast<T>(value));
      ++count;
    }
    pos_ = static_cast<size_t>(p - data_);
  }

  bool read_sparse(StreamStorage<T>& storage, size_t dim, size_t stream) {
    uint32_t count = 0;
    read_sparse_pairs(storage, dim, count);
    while (can_read()) {
      char c = current();
      if (is_value_delimiter(c)) {
        ++pos_;
        continue;
      }
      if (!is_printable(c) || c == kNamePrefix) {
        storage.nnz_counts.push_back(count);
        return true;
      }
      uint64_t index;
      if (!read_index(index)) return false;
      if (index >= dim) {
        warn([&] {
          return "Sparse index value (" + std::to_string(index) + ")" + where() +
                 " exceeds the maximum expected value (" + std::to_string(dim - 1) + ").";
        });
        return false;
      }
      if (!can_read() || current() != kIndexDelimiter) {
        if (!can_read()) {
          warn([&] {
            return "Exhausted all input expected for the current sequence while reading a sparse sample" +
                   where() + ".";
          });
        } else {
          warn([&] {
            return std::string("Unexpected character('") + current() +
                   "') in place of the index delimiter (':') after a sparse value index (" +
                   std::to_string(index) + ")" + where() + ".";
          });
        }
        return false;
      }
      ++pos_;
      double value;
      if (!read_number_fast(value) && !read_number(value)) return false;
      storage.values.push_back(static_cast<T>(value));
      storage.indices.push_back(static_cast<int32_t>(index));
      ++count;
    }
    warn_row_exhausted();
    warn([&] {
      return "Exhausted all input expected for the current sequence while reading a sparse sample" + where() +
             ".";
    });
    // CNTK: success if the file is shorter than indexed or this stream already holds entries for this
    // sequence.
    const bool has_entries = storage.values.size() > current_slots_[stream].value_begin;
    if (pos_ < range_end_ || has_entries) {
      storage.nnz_counts.push_back(count);
      return true;
    }
    return false;
  }

  bool read_index(uint64_t& value) {
    if (!is_digit(current())) {
      warn([&] { return "Expected a uint64 value, but none found" + where() + "."; });
      return false;
    }
    value = 0;
    while (can_read() && is_digit(current())) {
      uint64_t digit = static_cast<uint64_t>(current() - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
        warn([&] { return "Overflow while reading a uint64 value" + where() + "."; });
        return false;
      }
      value = value * 10 + digit;
      ++pos_;
    }
    if (!can_read()) {
      warn([&] {
        return "Exhausted all input expected for the current sequence while reading a uint64 value" +
               where() + ".";
      });
      return false;
    }
    return true;
  }

  bool read_number_fast(double& out) {
    const char* p = data_ + pos_;
    if (!parse_number_fast(p, data_ + end_, end_ >= range_end_, out)) return false;
    pos_ = static_cast<size_t>(p - data_);
    return true;
  }

  // CNTK's number state machine (ctf_number.hpp) with CNTK's warning for each failure.
  bool read_number(double& out) {
    NumberResult r = parse_number_exact(data_ + pos_, data_ + end_, end_ >= range_end_);
    pos_ = static_cast<size_t>(r.end - data_);
    const char bad = r.end < data_ + end_ ? *r.end : '\0';
    switch (r.status) {
      case NumberStatus::kOk:
        out = r.value;
        return true;
      case NumberStatus::kBadCharacter:
        warn([&] {
          return std::string("Unexpected character ('") + bad + "') in a floating point value" + where() +
                 ".";
        });
        return false;
      case NumberStatus::kBadAfterSign:
        warn([&] {
          return std::string("A sign symbol is followed by an invalid character ('") + bad +
                 "') in a floating point value" + where() + ".";
        });
        return false;
      case NumberStatus::kBadAfterExponent:
        warn([&] {
          return std::string("An exponent symbol is followed by an invalid character ('") + bad +
                 "') in a floating point value" + where() + ".";
        });
        return false;
      case NumberStatus::kBadAfterExponentSign:
        warn([&] {
          return std::string("An exponent sign is followed by an invalid character ('") + bad +
                 "') in a floating point value" + where() + ".";
        });
        return false;
      case NumberStatus::kFileTooShort:
        warn([&] {
          return "Expected more bytes of a floating point value, but the file ends" + where() + ".";
        });
        return false;
      case NumberStatus::kExhausted:
        warn([&] {
          return "Exhausted all input expected for the current sequence while reading a floating point "
                 "value" +
                 where() + ".";
        });
        return false;
    }
    return false;
  }

  const ParseContext& ctx_;
  const char* data_;
  size_t file_size_;
  CtfChunk<T>& chunk_;
  std::vector<StreamStorage<T>>& storage_;  // this parser's part of the chunk, per stream
  uint32_t part_;
  bool speculative_;
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

}  // namespace

ChunkPtr parse_chunk(const ParseContext& context, std::span<const IndexedSequence> sequences) {
  if (context.element_type == ElementType::kFloat) return parse_chunk_as<float>(context, sequences);
  return parse_chunk_as<double>(context, sequences);
}

}  // namespace cntkio::ctf
