// The CTF indexer (spec ctf.md §4): one scan of the file for its sequences, on one or several threads,
// then the chunks they form.
#include "formats/ctf/ctf_index.hpp"

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/line_ends.hpp"
#include "core/mapped_file.hpp"

namespace cntkio::ctf {
namespace {

bool is_c_space(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

[[noreturn]] void fail_at(const std::string& message, std::string_view data, const std::string& file,
                          size_t offset) {
  SourceLocation where;
  where.file = file;
  core::LineColumn lc = core::line_column_at(data, offset);
  where.line = lc.line;
  where.column = lc.column;
  where.byte_offset = offset;
  throw FormatError(message, where);
}

class Indexer {
 public:
  Indexer(std::string_view data, const std::string& file, std::string_view main_alias, KeyTable* keys)
      : data_(data),
        file_(file),
        pattern_(main_alias.empty() ? std::string() : "|" + std::string(main_alias)),
        symbolic_keys_(keys != nullptr && !keys->is_numeric() ? keys : nullptr) {}

  CtfIndex run(bool skip_sequence_ids) {
    const size_t n = data_.size();
    if (n == 0) fail_at("Input file is empty.", data_, file_, 0);
    if (n >= 2 && static_cast<unsigned char>(data_[0]) == 0xFF &&
        static_cast<unsigned char>(data_[1]) == 0xFE) {
      fail_at(
          "Found a UTF-16 BOM at the beginning of the input file. UTF-16 encoding is not supported; "
          "convert the file to UTF-8.",
          data_, file_, 0);
    }
    size_t pos = 0;
    static const unsigned char kBom[3] = {0xEF, 0xBB, 0xBF};
    while (pos < 3 && pos < n && static_cast<unsigned char>(data_[pos]) == kBom[pos]) ++pos;
    while (pos < n && is_c_space(static_cast<unsigned char>(data_[pos]))) {
      if (data_[pos] == '\n') ++line_;
      ++pos;
    }
    if (pos == n) fail_at("Input file is empty (it holds only whitespace).", data_, file_, pos);

    index_.line_mode = skip_sequence_ids || data_[pos] == '|';
    if (index_.line_mode && symbolic_keys_ != nullptr) {
      fail_at(
          "The file has no sequence ids (one sequence per line), but the reader uses non-numeric sequence "
          "keys (useNumericSequenceKeys=false): every line needs a key for the composite reader to join on.",
          data_, file_, pos);
    }
    const size_t parts = symbolic_keys_ != nullptr ? 1 : split_count(n - pos);
    if (parts > 1 && index_in_parts(pos, parts)) return std::move(index_);
    if (index_.line_mode) {
      index_lines(pos);
    } else {
      index_ids(pos);
    }
    return std::move(index_);
  }

  void set_threads(size_t threads, uint64_t min_split_bytes) {
    threads_ = threads;
    min_split_bytes_ = std::max<uint64_t>(1, min_split_bytes);
  }

 private:
  // End of the line starting at `pos`: offset just past its LF, or the file size (one search, for the
  // split points of the parallel index; the scans keep a core::LineEnds of their own).
  size_t line_end(size_t pos) const { return core::LineEnds(data_).after_next_lf(pos); }

  // Whether [begin, end) holds `|mainAlias` followed by a terminator (spec §4.4).
  bool line_has_main_stream(size_t begin, size_t end) const {
    if (pattern_.empty()) return true;
    std::string_view line = data_.substr(begin, end - begin);
    size_t at = 0;
    while ((at = line.find(pattern_, at)) != std::string_view::npos) {
      size_t after = at + pattern_.size();
      if (after >= line.size()) return true;
      auto c = static_cast<unsigned char>(line[after]);
      if (is_c_space(c) || c == '|' || c < 0x20 || c >= 0x80) return true;
      at += 1;
    }
    return false;
  }

  void add(uint64_t key, uint64_t samples, size_t offset, size_t size) {
    index_.sequences.append(checked_sequence(key, samples, offset, size));
  }

  // The record of a sequence; throws the indexer's errors for one that cannot be stored.
  IndexedSequence checked_sequence(uint64_t key, uint64_t samples, size_t offset, size_t size) const {
    if (samples == 0 || size == 0) {
      fail_at("Internal index error: empty sequence " + std::to_string(key) + ".", data_, file_, offset);
    }
    if (samples > std::numeric_limits<uint32_t>::max()) {
      fail_at("Sequence " + std::to_string(key) + " has more than 2^32-1 rows.", data_, file_, offset);
    }
    if (size > std::numeric_limits<uint32_t>::max()) {
      fail_at("Sequence " + std::to_string(key) + " is larger than 4 GiB (" + std::to_string(size) +
                  " bytes); CTF sequences must fit in 32-bit sizes.",
              data_, file_, offset);
    }
    return IndexedSequence{key, static_cast<uint64_t>(offset), static_cast<uint32_t>(samples),
                           static_cast<uint32_t>(size)};
  }

  void index_lines(size_t pos) {
    const size_t n = data_.size();
    core::LineEnds lines(data_);
    while (pos < n) {
      size_t end = lines.after_next_lf(pos);
      if (line_has_main_stream(pos, end)) add(line_, 1, pos, end - pos);
      ++line_;
      pos = end;
    }
  }

  // Whether the line at `pos` starts with the same id text as [id_begin, id_end) (digits), followed by a
  // non-digit before EOF: then its id is the same number, without reading it. False says nothing.
  bool same_id_text(size_t pos, size_t id_begin, size_t id_end) const {
    const size_t length = id_end - id_begin;
    const size_t n = data_.size();
    if (symbolic_keys_ != nullptr || length == 0 || pos + length >= n) return false;
    const char* a = data_.data() + pos;
    const char* b = data_.data() + id_begin;
    if (length <= 8 && pos + 8 <= n && id_begin + 8 <= n) {
      uint64_t x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      const uint64_t mask = length == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * length)) - 1;
      if (((x ^ y) & mask) != 0) return false;
    } else if (std::memcmp(a, b, length) != 0) {
      return false;
    }
    return !is_digit(static_cast<unsigned char>(a[length]));
  }

  // Reads a sequence id at `pos` if the line starts with digits followed by something before EOF.
  // Returns false (no id) otherwise; throws on overflow. `id_end`, if given, receives the end of its digits.
  bool try_read_id(size_t pos, uint64_t& id, size_t* id_end = nullptr) const {
    const size_t n = data_.size();
    if (symbolic_keys_ != nullptr) {
      // A symbolic id is every byte up to the first blank; a line starting with a blank has none.
      size_t p = pos;
      while (p < n && !is_c_space(static_cast<unsigned char>(data_[p]))) ++p;
      if (p == pos || p == n) return false;
      id = symbolic_keys_->id_of(data_.substr(pos, p - pos));
      return true;
    }
    if (pos >= n || !is_digit(static_cast<unsigned char>(data_[pos]))) return false;
    uint64_t value = 0;
    size_t p = pos;
    while (p < n && is_digit(static_cast<unsigned char>(data_[p]))) {
      uint64_t digit = static_cast<uint64_t>(data_[p] - '0');
      if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) {
        fail_at("Overflow while reading a sequence id (it does not fit in 64 bits).", data_, file_, pos);
      }
      value = value * 10 + digit;
      ++p;
    }
    if (p == n) return false;  // digits run into EOF: not an id
    id = value;
    if (id_end != nullptr) *id_end = p;
    return true;
  }

  void index_ids(size_t pos) {
    const size_t n = data_.size();
    uint64_t current_id = 0;
    size_t id_begin = pos;  // the text of current_id, on the sequence's first line
    size_t id_end = pos;
    if (!try_read_id(pos, current_id, &id_end)) {
      fail_at("Expected a sequence id at the offset " + std::to_string(pos) + ", none was found.", data_,
              file_, pos);
    }
    size_t sequence_start = pos;
    uint64_t count = 0;
    bool found = false;
    core::LineEnds lines(data_);
    while (pos < n) {
      size_t end = lines.after_next_lf(pos);
      if (line_has_main_stream(pos, end)) {
        ++count;
        found = true;
      }
      pos = end;
      if (pos >= n) break;
      if (same_id_text(pos, id_begin, id_end)) continue;
      uint64_t id = 0;
      size_t digits_end = pos;
      if (try_read_id(pos, id, &digits_end) && id != current_id) {
        if (found) add(current_id, count, sequence_start, pos - sequence_start);
        current_id = id;
        id_begin = pos;
        id_end = digits_end;
        sequence_start = pos;
        count = 0;
        found = false;
      }
    }
    if (found) add(current_id, count, sequence_start, n - sequence_start);
  }

  // -- Parallel indexing. The lines from `pos` on are split into runs of about equal bytes, one per thread.
  // A run is scanned into segments: one starts at the run's first line and at every line whose id differs
  // from the segment before it. Whether a run's first segment continues the sequence before the run is
  // known only when the runs are joined: it does when it has no id (the run started inside a sequence) or
  // the same id, which is the serial rule. After a first segment without an id, the same holds for the
  // second. These open segments and the run's last one are kept as segments; the ones between are whole
  // sequences and stored at once, compactly like the serial index. A sequence without a line of the
  // main stream is dropped, as serially. Symbolic keys are numbered in file order and stay serial.

  size_t split_count(uint64_t bytes) const {
    const size_t threads = std::max<size_t>(1, threads_);
    return static_cast<size_t>(std::min<uint64_t>(threads, bytes / min_split_bytes_));
  }

  struct Segment {
    bool has_id = false;
    uint64_t id = 0;
    uint64_t count = 0;  // lines with the main stream
    size_t start = 0;    // offset of its first line
  };

  struct Run {
    size_t begin = 0;
    size_t end = 0;
    uint64_t lines = 0;  // line mode: lines in the run
    // Id mode: the open segments (one or two), where the segment after them starts, and the last segment
    // when there are segments after the open ones.
    std::vector<Segment> open;
    size_t open_end = 0;
    std::optional<Segment> tail;
    // Id mode: the whole sequences between the open segments and the tail. Line mode: every line with the
    // main stream, its key the line number within the run.
    SequenceList sequences;
  };

  void scan_ids(Run& run) const {
    size_t pos = run.begin;
    Segment current;
    current.start = pos;
    size_t id_begin = pos;  // the text of current.id (empty while the segment has none)
    size_t id_end = pos;
    current.has_id = try_read_id(pos, current.id, &id_end);
    if (!current.has_id) id_end = id_begin;
    size_t open_left = current.has_id ? 1 : 2;
    core::LineEnds lines(data_);
    while (pos < run.end) {
      const size_t end = lines.after_next_lf(pos);
      if (line_has_main_stream(pos, end)) ++current.count;
      pos = end;
      if (pos >= run.end) break;
      if (same_id_text(pos, id_begin, id_end)) continue;
      uint64_t id = 0;
      size_t digits_end = pos;
      if (try_read_id(pos, id, &digits_end) && (!current.has_id || id != current.id)) {
        id_begin = pos;
        id_end = digits_end;
        if (open_left > 0) {
          run.open.push_back(current);
          run.open_end = pos;
          --open_left;
        } else if (current.count > 0) {
          run.sequences.append(
              checked_sequence(current.id, current.count, current.start, pos - current.start));
        }
        current = Segment{true, id, 0, pos};
      }
    }
    if (open_left > 0) {
      run.open.push_back(current);
    } else {
      run.tail = current;
    }
  }

  void scan_lines(Run& run) const {
    size_t pos = run.begin;
    core::LineEnds lines(data_);
    while (pos < run.end) {
      const size_t end = lines.after_next_lf(pos);
      if (line_has_main_stream(pos, end))
        run.sequences.append(checked_sequence(run.lines, 1, pos, end - pos));
      ++run.lines;
      pos = end;
    }
  }

  // Moves a run's sequences to the index (keys shifted by `key_base`) and frees them.
  void take_sequences(Run& run, uint64_t key_base) { index_.sequences.take(run.sequences, key_base); }

  // False if a run met an error: the caller then indexes serially, which reports the first error exactly.
  bool index_in_parts(size_t pos, size_t parts) {
    const size_t n = data_.size();
    std::vector<Run> runs;
    size_t begin = pos;
    for (size_t k = 1; k <= parts && begin < n; ++k) {
      size_t end = n;
      if (k < parts) {
        const size_t target = pos + (n - pos) / parts * k;
        end = target <= begin ? line_end(begin) : line_end(target - 1);
      }
      Run run;
      run.begin = begin;
      run.end = end;
      runs.push_back(std::move(run));
      begin = end;
    }
    std::vector<std::exception_ptr> failures(runs.size());
    auto scan = [&](size_t k) {
      try {
        if (index_.line_mode) {
          scan_lines(runs[k]);
        } else {
          scan_ids(runs[k]);
        }
      } catch (...) {
        failures[k] = std::current_exception();
      }
    };
    {
      std::vector<std::thread> helpers;
      for (size_t k = 1; k < runs.size(); ++k) helpers.emplace_back(scan, k);
      scan(0);
      for (std::thread& t : helpers) t.join();
    }
    for (const std::exception_ptr& failure : failures) {
      if (failure) return false;
    }
    if (!index_.line_mode && !runs[0].open[0].has_id) return false;  // serially: "Expected a sequence id"
    if (index_.line_mode) {
      for (Run& run : runs) {
        take_sequences(run, line_);
        line_ += run.lines;
      }
      return true;
    }
    Segment current = runs[0].open[0];
    bool first = true;
    for (Run& run : runs) {
      for (const Segment& segment : run.open) {
        if (first) {
          first = false;
        } else if (!segment.has_id || segment.id == current.id) {
          current.count += segment.count;
        } else {
          if (current.count > 0) add(current.id, current.count, current.start, segment.start - current.start);
          current = segment;
        }
      }
      if (!run.tail) continue;
      // The segment after the open ones has another id than the last of them, which `current` now ends with.
      if (current.count > 0) add(current.id, current.count, current.start, run.open_end - current.start);
      take_sequences(run, 0);
      current = *run.tail;
    }
    if (current.count > 0) add(current.id, current.count, current.start, n - current.start);
    return true;
  }

  std::string_view data_;
  const std::string& file_;
  std::string pattern_;
  KeyTable* symbolic_keys_;
  uint64_t line_ = 0;
  size_t threads_ = 1;
  uint64_t min_split_bytes_ = 32ull << 20;
  CtfIndex index_;
};

}  // namespace

CtfIndex build_index(std::string_view data, const std::string& file, bool skip_sequence_ids,
                     std::string_view main_alias, KeyTable* keys, size_t threads, uint64_t min_split_bytes) {
  Indexer indexer(data, file, main_alias, keys);
  indexer.set_threads(threads, min_split_bytes);
  return indexer.run(skip_sequence_ids);
}

void form_chunks(CtfIndex& index, uint64_t chunk_size_in_bytes, uint64_t file_size) {
  index.chunks.clear();
  uint64_t max_span = chunk_size_in_bytes > file_size ? file_size : chunk_size_in_bytes;
  uint64_t chunk_begin = 0;
  uint64_t chunk_end = 0;
  uint64_t i = 0;
  index.sequences.for_each([&](const IndexedSequence& s) {
    uint64_t span = index.chunks.empty() ? 0 : chunk_end - chunk_begin;
    if (span == 0 || span + s.size > max_span) {
      index.chunks.push_back(IndexedChunk{i, 0, 0});
      chunk_begin = s.offset;
    }
    IndexedChunk& c = index.chunks.back();
    ++c.num_sequences;
    c.samples += s.samples;
    chunk_end = s.offset + s.size;
    ++i;
  });
}

}  // namespace cntkio::ctf
