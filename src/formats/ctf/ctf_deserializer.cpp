#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "core/local_cache.hpp"
#include "core/logger.hpp"
#include "core/mapped_file.hpp"
#include "core/subset_chunk.hpp"
#include "core/text.hpp"
#include "core/thread_pool.hpp"
#include "formats/ctf/ctf_index.hpp"
#include "formats/ctf/ctf_index_registry.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace cntkio {
namespace {

// Sparse indices are int32 (CNTK's limit). Dense streams get the same limit: a sample is zero-padded to dim
// values, so a larger dim would allocate gigabytes for a one-value row.
constexpr uint64_t kMaxDim = 0x7FFFFFFFull;

std::string main_alias(const CtfOptions& options) {
  for (const auto& s : options.streams) {
    if (s.defines_mb_size) return s.alias.empty() ? s.name : s.alias;
  }
  return {};
}

// Rank that decides who writes the index cache: only local rank 0 of a job on each machine does (OpenMPI,
// MPICH/PMI, torchrun), so the processes of one machine do not all index-and-write the same file. Where only
// a global rank is known, rank 0 writes.
bool is_cache_writer() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK",
                           "OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return std::string(value) == "0";
  }
  return true;
}

int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const std::string& checked_path(const std::string& file) {
  if (file.empty()) throw ConfigError("The CTF deserializer needs a 'file'.", "file");
  return file;
}

// The data file's path, its identity asked for first where an index cache may make the data unneeded at open:
// a remote file is then opened without fetching its first bytes (the remote Env answers the open with the
// identity it just had, docs/remote-data.md), and one whose cache is valid reads nothing until a chunk loads.
const std::string& identified_path(const CtfOptions& options) {
  const std::string& path = checked_path(options.file);
  if (options.cache_index && !Env::url_scheme(path).empty()) {
    try {
      (void)Env::current()->file_identity(path);
    } catch (const Error&) {
      // the open that follows says why, as it would have without this
    }
  }
  return path;
}

class CtfDeserializer final : public Deserializer {
 public:
  explicit CtfDeserializer(const CtfOptions& options)
      : options_(options),
        file_(identified_path(options)),
        logger_(options.trace_level, core::sink_from_options(options.log_sink)),
        budget_(options.max_errors) {
    validate_and_build_streams();
    const std::string alias = main_alias(options_);
    const bool string_keys = options_.keys && options_.keys->mode() == KeyMode::kString;
    if (options_.cache_index && !string_keys) {
      summary_.cache_file = ctf_cache_file_name(options_);
      open_cache();
    }
    if (!summary_.loaded_from_cache) {
      // Numeric ids are all the index holds of a file's keys; string and hashed ids also live in the
      // reader's key table, which a shared index would leave empty.
      const bool shareable = (!options_.keys || options_.keys->is_numeric()) &&
                             ctf::settled_for_sharing(file_.identity(), realtime_ns());
      const bool has_inode = file_.identity().device != 0 || file_.identity().inode != 0;
      const ctf::SharedIndexKey shared_key{file_.identity(), has_inode ? std::string() : options_.file,
                                           options_.skip_sequence_ids, alias, options_.chunk_size_in_bytes};
      if (shareable) index_ = ctf::find_shared_index(shared_key);
      summary_.shared_in_process = index_ != nullptr;
      if (!index_) {
        size_t index_threads = options_.index_threads;
        if (index_threads == 0) index_threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8);
        std::shared_ptr<ctf::CtfIndex> built;
        try {
          built = std::make_shared<ctf::CtfIndex>(
              ctf::build_index(file_.view(), options_.file, options_.skip_sequence_ids, alias,
                               options_.keys.get(), index_threads, options_.index_split_bytes));
        } catch (const Error&) {
          file_.check_intact();  // zeros where the file was cut, or a block a remote fetch lost: not the
                                 // format
          throw;
        }
        file_.check_intact();  // the scan read zeros where the file was cut under it
        ctf::form_chunks(*built, options_.chunk_size_in_bytes, file_.size());
        ctf::count_index_build();
        index_ = std::move(built);
        if (shareable) ctf::share_index(shared_key, index_);
      }
      shared_ = shareable;
      // Ids of a string-key corpus depend on the order files are read in, so only numeric or hashed ids are
      // cached.
      const bool cacheable = !options_.keys || options_.keys->mode() != KeyMode::kString;
      if (options_.cache_index) {
        if (!cacheable) {
          summary_.cache_not_written_reason = "string sequence keys are not cached";
        } else if (!is_cache_writer()) {
          summary_.cache_not_written_reason = "local rank 0 of this machine writes it";
        } else if (std::string failure;
                   ctf::write_index_cache(summary_.cache_file, *index_, options_.chunk_size_in_bytes,
                                          ctf::stamp_data_file(file_.view(), file_.identity()), &failure)) {
          summary_.cache_written = true;
        } else {
          summary_.cache_not_written_reason = "it could not be written: " + failure;
        }
      }
    }
    for (const auto& c : index_->chunks) {
      summary_.sequences += c.num_sequences;
      summary_.samples += c.samples;
    }
    if (summary_.sequences == 0) {
      SourceLocation where;
      where.file = options_.file;
      throw FormatError(
          "The input file holds no sequence" +
              (alias.empty() ? std::string(".") : " with the input '" + alias + "' (definesMBSize)."),
          where);
    }
    summary_.chunks = index_->chunks.size();
    summary_.file_size = file_.size();
    summary_.line_mode = index_->line_mode;
    if (options_.keep_data_in_memory) kept_chunks_.resize(index_->chunks.size());

    context_.data = file_.view();
    context_.file = &options_.file;
    context_.streams = &streams_;
    context_.element_type = options_.element_type;
    context_.logger = &logger_;
    context_.budget = &budget_;
    context_.had_warnings = &had_warnings_;
    if (options_.parse_threads > 1) pool_ = std::make_unique<core::ThreadPool>(options_.parse_threads - 1);
    context_.pool = pool_.get();
    context_.min_part_bytes = options_.parse_split_bytes;
    context_.row_fast_path = options_.row_fast_path;
    context_.recycler = std::make_shared<ctf::StorageRecycler>();
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    out.reserve(index_->chunks.size());
    for (size_t i = 0; i < index_->chunks.size(); ++i) {
      out.push_back(
          ChunkInfo{static_cast<uint32_t>(i), index_->chunks[i].samples, index_->chunks[i].num_sequences});
    }
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    const std::vector<ctf::IndexedSequence> sequences = chunk_sequences(chunk_id);
    out.reserve(out.size() + sequences.size());  // a chunk of 32 MB lists 200,000 sequences and more
    for (size_t i = 0; i < sequences.size(); ++i) {
      const ctf::IndexedSequence& s = sequences[i];
      out.push_back(SequenceInfo{static_cast<uint32_t>(i), s.samples, chunk_id, SequenceKey{s.key, 0}});
    }
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    std::call_once(key_lookup_once_, [this] { prepare_key_lookup(); });
    uint64_t position = 0;
    ctf::IndexedSequence record;
    if (!find_key(key.sequence, position, record)) return std::nullopt;
    // The chunk holding record `position`: the last whose first record is not after it.
    const auto chunk =
        std::upper_bound(index_->chunks.begin(), index_->chunks.end(), position,
                         [](uint64_t p, const ctf::IndexedChunk& c) { return p < c.first_sequence; }) -
        1;
    return SequenceInfo{static_cast<uint32_t>(position - chunk->first_sequence), record.samples,
                        static_cast<uint32_t>(chunk - index_->chunks.begin()), SequenceKey{record.key, 0}};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (options_.keep_data_in_memory) {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      if (kept_chunks_[chunk_id]) return kept_chunks_[chunk_id];
    }
    const std::vector<ctf::IndexedSequence> sequences = chunk_sequences(chunk_id);
    // A file cut since it was indexed fails here, before its mapping is read past the new end; one cut
    // during the parse gives zeros there, and the check after the parse refuses them.
    if (!sequences.empty()) {
      file_.check_covers(sequences.back().offset + sequences.back().size);
      // The parts of the parse read the chunk's bytes at once: a remote file fetches them all now.
      file_.will_need(sequences.front().offset,
                      sequences.back().offset + sequences.back().size - sequences.front().offset);
    }
    ChunkPtr loaded;
    try {
      loaded = ctf::parse_chunk(context_, sequences);
    } catch (const Error&) {
      file_.check_intact();  // zeros read past a new end are no format error: say the file was cut
      throw;
    }
    file_.check_intact();
    if (options_.keep_data_in_memory) {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      if (!kept_chunks_[chunk_id]) kept_chunks_[chunk_id] = loaded;
      return kept_chunks_[chunk_id];
    }
    return loaded;
  }

  bool loads_sequences_alone() const override { return true; }
  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices_in_chunk) override {
    if (options_.keep_data_in_memory) {
      std::lock_guard<std::mutex> lock(kept_mutex_);
      if (kept_chunks_[chunk_id]) return kept_chunks_[chunk_id];
    }
    const ctf::IndexedChunk& chunk = checked_chunk(chunk_id);
    std::vector<ctf::IndexedSequence> records;
    records.reserve(indices_in_chunk.size());
    uint64_t end = 0;
    for (const uint32_t i : indices_in_chunk) {
      if (i >= chunk.num_sequences) return nullptr;
      records.push_back(record_at(chunk.first_sequence + i));
      end = std::max(end, records.back().offset + records.back().size);
    }
    file_.check_covers(end);
    ChunkPtr parsed;
    try {
      parsed = ctf::parse_speculatively(context_, records);
    } catch (const Error&) {
      file_.check_intact();
      return nullptr;  // the chunk's load reports it
    }
    file_.check_intact();
    if (!parsed) return nullptr;
    return std::make_shared<core::SubsetChunk>(
        std::move(parsed), std::vector<uint32_t>(indices_in_chunk.begin(), indices_in_chunk.end()));
  }

  std::string key_to_string(const SequenceKey& key) const override {
    return options_.keys ? options_.keys->key_of(key.sequence) : std::to_string(key.sequence);
  }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    const std::optional<SequenceInfo> info = sequence_info_by_key(key);
    if (!info) return {};
    const ctf::IndexedSequence s = chunk_sequences(info->chunk_id)[info->index_in_chunk];
    SourceLocation where;
    where.file = options_.file;
    const core::LineColumn lc = core::line_column_at(file_.view(), static_cast<size_t>(s.offset));
    where.line = lc.line;
    where.column = lc.column;
    where.byte_offset = s.offset;
    where.sequence_key = key_to_string(key);
    return where;
  }

  void check_inputs_intact() const override { file_.check_intact(); }
  std::vector<InputFileVersion> input_files() const override { return {{file_.path(), file_.identity()}}; }

  std::vector<std::string> describe() const override {
    std::vector<std::string> lines;
    lines.push_back("CTF file " + options_.file + ": " + std::to_string(summary_.file_size) + " bytes, " +
                    std::to_string(summary_.sequences) + " sequences, " + std::to_string(summary_.samples) +
                    " samples, " + std::to_string(summary_.chunks) + " chunk(s)" +
                    (summary().line_mode ? ", one sequence per line" : ", sequence ids"));
    if (!summary_.cache_file.empty()) {
      std::string cache = "index cache " + summary_.cache_file;
      if (summary_.loaded_from_cache) {
        cache += " (used)";
      } else if (summary_.cache_written) {
        cache += summary_.cache_was_stale
                     ? " (stale: it described another version of the data file; rewritten)"
                     : " (written)";
      } else {
        cache += " (not written: " + summary_.cache_not_written_reason + ")";
      }
      lines.push_back(cache);
    }
    return lines;
  }

  std::shared_ptr<const void> shared_index() const override { return shared_ ? index_ : nullptr; }

  const CtfIndexSummary& summary() const {
    // A cached index says nothing of the line mode, which only the summary shows: the data file's first
    // bytes tell, read when asked for rather than at open (a remote file would fetch them for it).
    std::call_once(line_mode_once_, [this] {
      if (summary_.loaded_from_cache) {
        const size_t first = first_content_byte();
        summary_.line_mode =
            options_.skip_sequence_ids || (first < file_.size() && file_.data()[first] == '|');
      }
    });
    return summary_;
  }
  CtfErrorSummary errors() const {
    return CtfErrorSummary{budget_.counted(), budget_.rows_dropped(), budget_.samples_dropped(),
                           budget_.first_locations()};
  }

  void add_skips(SkipReport& report) const override {
    const CtfErrorSummary e = errors();
    report.errors += e.errors;
    report.rows_skipped += e.rows_skipped;
    report.samples_skipped += e.samples_skipped;
    report.first_locations.insert(report.first_locations.end(), e.first_locations.begin(),
                                  e.first_locations.end());
    if (key_lookup_ready_.load(std::memory_order_acquire)) {
      report.sequences_skipped += unreachable_duplicates_;
      report.first_locations.insert(report.first_locations.end(), duplicate_locations_.begin(),
                                    duplicate_locations_.end());
    }
  }

 private:
  // One entry of the key table (keys in no order): 12 bytes.
  struct __attribute__((packed)) KeyEntry {
    uint64_t key;
    uint32_t position;  // record number
  };

  // Reads the index from the cache, if there is one that describes this data file: a cache cntkio wrote
  // records the data file's size, modification time (nanoseconds) and the fingerprint of its first and last
  // 64 KiB, which must all match; a cache without that record (CNTK's) must be newer than the data file, to
  // the nanosecond. Only the chunk table is read when it was made for this chunk size (records are then
  // read per chunk, at each use), else every record (and the chunks are formed again).
  void open_cache() {
    if (file_.view().empty()) return;
    try {
      cache_ = std::make_unique<core::MappedFile>(summary_.cache_file);
    } catch (const Error&) {
      return;  // missing or unreadable: index the file as if there were no cache
    }
    auto index = std::make_shared<ctf::CtfIndex>();
    try {
      const std::optional<ctf::CacheFooter> footer = ctf::read_cache_footer(cache_->view());
      const bool current = footer ? footer->data == ctf::stamp_data_file(file_.view(), file_.identity())
                                  : cache_->identity().mtime_ns > file_.identity().mtime_ns;
      file_.check_intact();
      if (!current) {
        summary_.cache_was_stale = true;
        cache_.reset();
        return;
      }
      if (footer && ctf::load_cache_chunk_table(cache_->view(), *footer, file_.size(),
                                                options_.chunk_size_in_bytes, *index)) {
        summary_.lazy_sequence_records = true;
        cached_keys_ascending_ = footer->keys_ascending;
        cached_adjacent_equal_keys_ = footer->adjacent_equal_keys;
      } else if (ctf::load_index_cache(cache_->view(), file_.size(), *index)) {
        ctf::form_chunks(*index, options_.chunk_size_in_bytes, file_.size());
        cache_->check_intact();
        cache_.reset();
      } else {
        cache_.reset();
        return;
      }
      if (cache_) cache_->check_intact();
    } catch (const IoError&) {
      cache_.reset();  // the cache was cut while being read: index the file instead
      return;
    }
    summary_.loaded_from_cache = true;
    index_ = std::move(index);
  }

  // The index records of a chunk's sequences: decoded from the index, or read from the cache (and checked
  // against its chunk table) at every use when the index is the cache's chunk table.
  std::vector<ctf::IndexedSequence> chunk_sequences(uint32_t chunk_id) const {
    const ctf::IndexedChunk& chunk = checked_chunk(chunk_id);
    std::vector<ctf::IndexedSequence> records;
    if (!cache_) {
      index_->sequences.decode(chunk.first_sequence, chunk.num_sequences, records);
      return records;
    }
    records = ctf::read_cached_chunk(cache_->view(), file_.size(), chunk);
    cache_->check_intact();
    if (records.empty()) {
      // The chunk table was checked at open; records that disagree with it mean the cache was damaged or
      // written over since. Its chunking may already be in use, so stop rather than re-index and differ.
      SourceLocation where;
      where.file = summary_.cache_file;
      throw FormatError("The index cache of '" + options_.file + "' is damaged: the records of chunk " +
                            std::to_string(chunk_id) +
                            " do not match its chunk table. Delete the cache file; the next run rebuilds it.",
                        where);
    }
    return records;
  }

  // Record `position` of the index (from the cache when the index is its chunk table).
  ctf::IndexedSequence record_at(uint64_t position) const {
    if (!cache_) return index_->sequences.at(position);
    ctf::IndexedSequence record;
    const bool ok = ctf::read_cached_record(cache_->view(), file_.size(), position, record);
    cache_->check_intact();
    if (!ok) {
      SourceLocation where;
      where.file = summary_.cache_file;
      throw FormatError("The index cache of '" + options_.file + "' is damaged: record " +
                            std::to_string(position) +
                            " points outside the data file. Delete the cache file; "
                            "the next run rebuilds it.",
                        where);
    }
    return record;
  }

  uint64_t record_count() const { return summary_.sequences; }

  bool keys_ascending() const { return cache_ ? cached_keys_ascending_ : index_->sequences.keys_ascending(); }

  // Prepares key lookups (a composite reader's secondary): with keys that never decrease in file order, a
  // binary search over the records needs nothing more; otherwise a table of (key, record) sorted by key is
  // built, 12 bytes per sequence. A key held by several records is reachable only in its first record: the
  // others are counted, reported and warned about.
  void prepare_key_lookup() const {
    std::vector<std::pair<uint64_t, uint64_t>> duplicates;  // (record kept, record never read), first few
    uint64_t unreachable = 0;
    constexpr size_t kReported = 10;
    if (keys_ascending()) {
      const uint64_t adjacent =
          cache_ ? cached_adjacent_equal_keys_ : index_->sequences.adjacent_equal_keys();
      if (adjacent > 0) {
        uint64_t first_of_run = 0;
        uint64_t previous_key = 0;
        for (uint64_t i = 0; i < record_count(); ++i) {
          const uint64_t key = record_at(i).key;
          if (i > 0 && key == previous_key) {
            ++unreachable;
            if (duplicates.size() < kReported) duplicates.emplace_back(first_of_run, i);
          } else {
            first_of_run = i;
          }
          previous_key = key;
        }
      }
    } else {
      if (record_count() > std::numeric_limits<uint32_t>::max()) {
        throw UsageError("CTF file '" + options_.file +
                         "' has more than 2^32 sequences with keys in no order: "
                         "it cannot be a secondary deserializer of a composite reader.");
      }
      key_table_.reserve(record_count());
      for (uint32_t c = 0; c < index_->chunks.size(); ++c) {
        const std::vector<ctf::IndexedSequence> sequences = chunk_sequences(c);
        for (size_t i = 0; i < sequences.size(); ++i) {
          key_table_.push_back(
              KeyEntry{sequences[i].key, static_cast<uint32_t>(index_->chunks[c].first_sequence + i)});
        }
      }
      std::sort(key_table_.begin(), key_table_.end(), [](const KeyEntry& a, const KeyEntry& b) {
        return a.key != b.key ? a.key < b.key : a.position < b.position;
      });
      size_t kept = 0;
      for (size_t i = 0; i < key_table_.size(); ++i) {
        if (kept > 0 && key_table_[kept - 1].key == key_table_[i].key) {
          ++unreachable;
          // Keep the kReported earliest in file order.
          duplicates.emplace_back(uint64_t{key_table_[kept - 1].position}, uint64_t{key_table_[i].position});
          if (duplicates.size() > kReported) {
            duplicates.erase(
                std::max_element(duplicates.begin(), duplicates.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; }));
          }
          continue;
        }
        key_table_[kept++] = key_table_[i];
      }
      key_table_.resize(kept);
      key_table_.shrink_to_fit();
    }
    unreachable_duplicates_ = unreachable;
    std::sort(duplicates.begin(), duplicates.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    if (unreachable > 0) report_duplicates(duplicates, unreachable);
    key_lookup_ready_.store(true, std::memory_order_release);
  }

  // Warns about (and keeps for the skip report) the first records whose key an earlier record holds.
  void report_duplicates(const std::vector<std::pair<uint64_t, uint64_t>>& duplicates,
                         uint64_t unreachable) const {
    std::vector<uint64_t> offsets;
    for (const auto& [kept, dropped] : duplicates) {
      offsets.push_back(record_at(kept).offset);
      offsets.push_back(record_at(dropped).offset);
    }
    const std::vector<core::LineColumn> places = lines_at(offsets);
    auto place = [&](size_t i) {
      return options_.file + ":" + std::to_string(places[i].line) + ":" + std::to_string(places[i].column);
    };
    for (size_t d = 0; d < duplicates.size(); ++d) {
      const std::string key = key_to_string(SequenceKey{record_at(duplicates[d].first).key, 0});
      duplicate_locations_.push_back(place(2 * d + 1) + " (sequence " + key + ": its key repeats " +
                                     place(2 * d) + "; a composite reader joins on the first only)");
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: sequence key " + key + " appears more than once in '" + options_.file +
                      "': a composite reader reads the sequence at " + place(2 * d) +
                      " and never the one at " + place(2 * d + 1) + ".");
    }
    if (unreachable > duplicates.size()) {
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: " + std::to_string(unreachable) + " sequences of '" + options_.file +
                      "' repeat an earlier sequence's key and are never read by the composite reader.");
    }
  }

  // Line and column of each byte offset, in one pass over the file up to the largest.
  std::vector<core::LineColumn> lines_at(const std::vector<uint64_t>& offsets) const {
    std::vector<size_t> order(offsets.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return offsets[a] < offsets[b]; });
    std::vector<core::LineColumn> out(offsets.size());
    const std::string_view text = file_.view();
    core::LineColumn at;
    size_t line_start = 0;
    size_t scanned = 0;
    for (size_t i : order) {
      const size_t target = std::min<size_t>(offsets[i], text.size());
      while (scanned < target) {
        const void* hit = std::memchr(text.data() + scanned, '\n', target - scanned);
        if (hit == nullptr) {
          scanned = target;
          break;
        }
        ++at.line;
        scanned = static_cast<size_t>(static_cast<const char*>(hit) - text.data()) + 1;
        line_start = scanned;
      }
      out[i] = core::LineColumn{at.line, target - line_start + 1};
    }
    file_.check_intact();
    return out;
  }

  // The first record with `key` (its number and fields), if there is one.
  bool find_key(uint64_t key, uint64_t& position, ctf::IndexedSequence& record) const {
    if (keys_ascending()) {
      if (!cache_) return index_->sequences.find_first(key, position, record);
      uint64_t low = 0;
      uint64_t high = record_count();
      while (low < high) {
        const uint64_t mid = low + (high - low) / 2;
        if (record_at(mid).key < key) {
          low = mid + 1;
        } else {
          high = mid;
        }
      }
      if (low == record_count()) return false;
      record = record_at(low);
      position = low;
      return record.key == key;
    }
    auto it = std::lower_bound(key_table_.begin(), key_table_.end(), key,
                               [](const KeyEntry& e, uint64_t k) { return e.key < k; });
    if (it == key_table_.end() || it->key != key) return false;
    position = it->position;
    record = record_at(position);
    return true;
  }

  const ctf::IndexedChunk& checked_chunk(uint32_t chunk_id) const {
    if (chunk_id >= index_->chunks.size()) {
      throw UsageError("CTF file '" + options_.file + "' has " + std::to_string(index_->chunks.size()) +
                       " chunks; chunk " + std::to_string(chunk_id) + " does not exist.");
    }
    return index_->chunks[chunk_id];
  }

  size_t first_content_byte() const {
    std::string_view v = file_.view();
    size_t pos = 0;
    static const unsigned char kBom[3] = {0xEF, 0xBB, 0xBF};
    while (pos < 3 && pos < v.size() && static_cast<unsigned char>(v[pos]) == kBom[pos]) ++pos;
    while (pos < v.size() && (v[pos] == ' ' || (v[pos] >= '\t' && v[pos] <= '\r'))) ++pos;
    return pos;
  }

  void validate_and_build_streams() {
    if (options_.file.empty()) throw ConfigError("The CTF deserializer needs a 'file'.", "file");
    if (options_.streams.empty()) {
      throw ConfigError(
          "The CTF deserializer for '" + options_.file + "' needs at least one stream in 'input'.", "input");
    }
    std::set<std::string> aliases;
    int defining = 0;
    for (size_t i = 0; i < options_.streams.size(); ++i) {
      CtfStreamOptions& s = options_.streams[i];
      if (s.name.empty()) {
        throw ConfigError("Stream " + std::to_string(i) + " of the CTF deserializer for '" + options_.file +
                              "' has no name.",
                          "input");
      }
      if (s.alias.empty()) s.alias = s.name;
      const std::string key = "input." + s.name;
      if (s.dim == 0)
        throw ConfigError("Stream '" + s.name + "' needs a dimension 'dim' greater than 0.", key + ".dim");
      if (s.dim > kMaxDim) {
        throw ConfigError(std::string(s.storage == StorageFormat::kSparseCsc ? "Sparse" : "Dense") +
                              " stream '" + s.name + "' has dim " + std::to_string(s.dim) +
                              ", above the maximum 2147483647.",
                          key + ".dim");
      }
      if (!aliases.insert(s.alias).second) {
        throw ConfigError("Two streams use the alias '" + s.alias + "'; every input needs its own alias.",
                          key + ".alias");
      }
      if (s.defines_mb_size && ++defining > 1) {
        throw ConfigError("Only one stream may set definesMBSize=true ('" + s.name + "' is the second).",
                          key + ".definesMBSize");
      }
      StreamInfo info;
      info.id = static_cast<uint32_t>(i);
      info.name = s.name;
      info.alias = s.alias;
      info.storage = s.storage;
      info.element_type = options_.element_type;
      info.sample_shape = {s.dim};
      info.defines_mb_size = s.defines_mb_size;
      streams_.push_back(std::move(info));
    }
  }

  CtfOptions options_;
  core::MappedFile file_;
  core::Logger logger_;
  ctf::ErrorBudget budget_;
  std::atomic<bool> had_warnings_{false};
  std::vector<StreamInfo> streams_;
  // Read-only once built, so deserializers of the same file may share it (ctf_index_registry.hpp).
  std::shared_ptr<const ctf::CtfIndex> index_;
  bool shared_ = false;  // index_ is in the process's registry
  // With a cache's chunk table: the mapped cache, whose records are read at each use (index_->sequences
  // stays empty), and what its footer says of their keys.
  std::unique_ptr<core::MappedFile> cache_;
  bool cached_keys_ascending_ = false;
  uint64_t cached_adjacent_equal_keys_ = 0;
  mutable CtfIndexSummary summary_;  // mutable: its line mode is found when first asked for (summary())
  mutable std::once_flag line_mode_once_;
  ctf::ParseContext context_;
  std::unique_ptr<core::ThreadPool> pool_;  // helpers of one chunk's parse (parse_threads - 1), or null
  std::mutex kept_mutex_;
  std::vector<ChunkPtr> kept_chunks_;
  // Key lookups (prepare_key_lookup), ready once key_lookup_ready_ is set.
  mutable std::once_flag key_lookup_once_;
  mutable std::atomic<bool> key_lookup_ready_{false};
  mutable std::vector<KeyEntry> key_table_;  // empty when keys ascend
  mutable uint64_t unreachable_duplicates_ = 0;
  mutable std::vector<std::string> duplicate_locations_;
};

}  // namespace

std::string ctf_cache_file_name(const CtfOptions& options) {
  std::string alias = main_alias(options);
  const bool symbolic = options.keys && !options.keys->is_numeric();
  const bool hashed = options.keys && options.keys->mode() == KeyMode::kHashed;
  const std::string suffix = std::string(".") + (alias.empty() ? "_" : alias) + "." +
                             (options.skip_sequence_ids ? "1" : "0") + "." + (symbolic ? "1" : "0") + "." +
                             (hashed ? "1" : "0") + ".v1.cache";
  if (!Env::url_scheme(options.file).empty()) {  // a remote file: its cache is local (docs/remote-data.md)
    return core::local_cache_path(options.file, Env::current()->file_identity(options.file), suffix);
  }
  return options.file + suffix;
}

std::shared_ptr<Deserializer> make_ctf_deserializer(const CtfOptions& options) {
  // One file: a corpus (more_files, file_list) is joined by a reader built from a spec
  // (MinibatchSource::create).
  if (!options.more_files.empty() || !options.file_list.empty()) {
    throw UsageError(
        "make_ctf_deserializer reads one file; more_files and file_list make a corpus, which a reader "
        "built from a ReaderSpec (MinibatchSource::create) reads.");
  }
  return std::make_shared<CtfDeserializer>(options);
}

CtfIndexSummary ctf_index_summary(const Deserializer& deserializer) {
  const auto* ctf = dynamic_cast<const CtfDeserializer*>(&deserializer);
  if (ctf == nullptr) throw UsageError("ctf_index_summary: not a CTF deserializer");
  return ctf->summary();
}

CtfErrorSummary ctf_error_summary(const Deserializer& deserializer) {
  const auto* ctf = dynamic_cast<const CtfDeserializer*>(&deserializer);
  if (ctf == nullptr) throw UsageError("ctf_error_summary: not a CTF deserializer");
  return ctf->errors();
}

}  // namespace cntkio
