// The general row parser of a CTF chunk: CNTK's rules, messages and error budget, row by row and byte by
// byte (spec ctf.md §6, §7), for the sequences the fast row path (ctf_fast_rows.cpp) does not decide.
#include <algorithm>
#include <limits>
#include <string>

#include "cntkio/errors.hpp"
#include "core/mapped_file.hpp"
#include "formats/ctf/ctf_chunk_parser.hpp"
#include "formats/ctf/ctf_number.hpp"

namespace cntkio::ctf {

template <typename T>
void ChunkParser<T>::parse_sequence(const IndexedSequence& sequence, size_t index_in_chunk) {
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
      ctx_.logger->always(core::LogLevel::kError,
                          "ERROR: Input ('" + streams[s].name +
                              "') is empty in sequence (id = " + std::to_string(key_) + ")" + where() + ".");
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

// Where an error is: `at`, or the parser's position. Errors found at the end of a row or sequence (the
// parser then stands past its LF, as in CNTK's "at offset" text) pass the row's or sequence's start, so
// the line named is the one at fault, not the next one.
template <typename T>
inline SourceLocation ChunkParser<T>::location(int stream, size_t at) const {
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
template <typename T>
inline void ChunkParser<T>::count_error(int stream, Dropped dropped, size_t at) {
  side_effect();
  if (at == kHere) at = pos_;
  std::string where_text;
  if (ctx_.budget->counted() < 10) {
    core::LineColumn lc = core::line_column_at(ctx_.data, at);
    where_text = *ctx_.file + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column);
  }
  if (ctx_.budget->consume(where_text, dropped)) return;
  if (ctx_.logger->trace_level() < 1 && ctx_.had_warnings != nullptr && ctx_.had_warnings->load()) {
    ctx_.logger->always(core::LogLevel::kError,
                        "WARNING: Warnings were generated while reading the input file; set traceLevel to 1 "
                        "or higher to see them.");
  }
  throw FormatError(
      "Reached the maximum number of allowed errors while reading the input file (" + *ctx_.file + ").",
      location(stream, at));
}

template <typename T>
inline void ChunkParser<T>::skip_to_next_input() {
  while (can_read()) {
    char c = current();
    if (c == kNamePrefix || c == kRowDelimiter) return;
    ++pos_;
  }
}

template <typename T>
inline bool ChunkParser<T>::read_row() {
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

template <typename T>
inline void ChunkParser<T>::warn_row_exhausted() {
  warn([&] {
    return "Exhausted all input expected for the current sequence while reading an input row" + where() +
           ". Possibly, a trailing newline is missing.";
  });
}

template <typename T>
inline bool ChunkParser<T>::read_sample() {
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

template <typename T>
inline bool ChunkParser<T>::read_dense(StreamStorage<T>& storage, size_t dim) {
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

template <typename T>
inline bool ChunkParser<T>::finish_dense(StreamStorage<T>& storage, size_t dim, size_t begin, size_t count) {
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
template <typename T>
inline void ChunkParser<T>::read_sparse_pairs(StreamStorage<T>& storage, size_t dim, uint32_t& count) {
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
template <typename T>
inline void ChunkParser<T>::read_dense_values(StreamStorage<T>& storage, size_t& count) {
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

template <typename T>
inline bool ChunkParser<T>::read_sparse(StreamStorage<T>& storage, size_t dim, size_t stream) {
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

template <typename T>
inline bool ChunkParser<T>::read_index(uint64_t& value) {
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
      return "Exhausted all input expected for the current sequence while reading a uint64 value" + where() +
             ".";
    });
    return false;
  }
  return true;
}

template <typename T>
inline bool ChunkParser<T>::read_number_fast(double& out) {
  const char* p = data_ + pos_;
  if (!parse_number_fast(p, data_ + end_, end_ >= range_end_, out)) return false;
  pos_ = static_cast<size_t>(p - data_);
  return true;
}

// CNTK's number state machine (ctf_number.hpp) with CNTK's warning for each failure.
template <typename T>
inline bool ChunkParser<T>::read_number(double& out) {
  NumberResult r = parse_number_exact(data_ + pos_, data_ + end_, end_ >= range_end_);
  pos_ = static_cast<size_t>(r.end - data_);
  const char bad = r.end < data_ + end_ ? *r.end : '\0';
  switch (r.status) {
    case NumberStatus::kOk:
      out = r.value;
      return true;
    case NumberStatus::kBadCharacter:
      warn([&] {
        return std::string("Unexpected character ('") + bad + "') in a floating point value" + where() + ".";
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
      warn(
          [&] { return "Expected more bytes of a floating point value, but the file ends" + where() + "."; });
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

template void ChunkParser<float>::parse_sequence(const IndexedSequence&, size_t);
template void ChunkParser<double>::parse_sequence(const IndexedSequence&, size_t);

}  // namespace cntkio::ctf
