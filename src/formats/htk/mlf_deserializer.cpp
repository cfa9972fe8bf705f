// HTKMLFDeserializer: frame labels from HTK MLF files, joined to features by key (spec htk.md §9, §10).
#include <algorithm>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "core/logger.hpp"
#include "core/mapped_file.hpp"
#include "formats/htk/alive_chunks.hpp"
#include "formats/htk/mlf.hpp"

namespace cntkio {
namespace {

// The lookup of a frame past the end of its utterance's labels (frame mode) points here.
constexpr uint32_t kBeyondLabels = 0xFFFFFFFFu;

struct MlfUtterance {
  uint64_t id = 0;
  uint32_t file = 0;
  uint64_t begin = 0;  // byte range of the utterance's text
  uint64_t end = 0;
  uint32_t frames = 0;
  uint64_t key_line = 0;
  uint32_t chunk = 0;
  uint32_t index_in_chunk = 0;
  uint32_t first_frame_in_chunk = 0;
};

struct MlfChunkDescription {
  uint32_t first_utterance = 0;
  uint32_t num_utterances = 0;
  uint64_t frames = 0;
};

// A parsed label chunk: the label ranges of its utterances, checked, so that what it holds follows the MLF
// text and not the frame counts the text claims (a label line of 30 bytes may cover millions of frames).
// Frame mode reads a frame's class from the span holding it (value and count are the constant 1; the frames
// of an invalid utterance form one span of class -1). Sequence mode expands an utterance into a class per
// frame with value 1 (2 on phone starts) when it is first asked for: only utterances that the features
// join are expanded.
class MlfChunk final : public Chunk {
 public:
  struct Utterance {
    uint32_t first_frame = 0;  // in the chunk
    uint32_t frames = 0;
    uint32_t first_range = 0;  // its ranges are [first_range, end_range)
    uint32_t end_range = 0;
    bool valid = true;
  };

  MlfChunk(bool frame_mode, bool is_double, bool phone_boundaries, uint64_t frames,
           std::vector<htk::FrameRange> ranges, std::vector<Utterance> utterances)
      : frame_mode_(frame_mode),
        is_double_(is_double),
        phone_boundaries_(phone_boundaries),
        frames_(frames),
        ranges_(std::move(ranges)),
        utterances_(std::move(utterances)) {
    if (frame_mode_) {
      for (const Utterance& u : utterances_) {
        if (!u.valid) {
          spans_.push_back(Span{u.first_frame, -1});
          continue;
        }
        for (uint32_t r = u.first_range; r < u.end_range; ++r) {
          if (ranges_[r].count == 0) continue;
          spans_.push_back(Span{u.first_frame + ranges_[r].first, ranges_[r].class_id});
        }
      }
      index_spans();
      ranges_ = {};  // only sequence mode expands them later
    } else {
      expanded_.resize(utterances_.size());
    }
  }

  void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
    static constexpr float kOneFloat = 1.0f;
    static constexpr double kOneDouble = 1.0;
    static constexpr uint32_t kOneEntry = 1;
    SequenceData data;
    if (frame_mode_) {
      // Past the end: a feature frame beyond its labels (counted against maxErrors).
      const Span* span = index < frames_ ? span_of(index) : nullptr;
      if (span == nullptr || span->class_id < 0) {
        data.valid = false;
      } else {
        data.number_of_samples = 1;
        data.values =
            is_double_ ? static_cast<const void*>(&kOneDouble) : static_cast<const void*>(&kOneFloat);
        data.indices = &span->class_id;
        data.nnz_counts = &kOneEntry;
        data.total_nnz = 1;
      }
    } else if (!utterances_.at(index).valid) {
      data.valid = false;
    } else {
      const Expanded& e = expanded(index);
      data.number_of_samples = utterances_[index].frames;
      data.values =
          is_double_ ? static_cast<const void*>(e.doubles.data()) : static_cast<const void*>(e.floats.data());
      data.indices = e.classes.data();
      data.nnz_counts = e.ones.data();
      data.total_nnz = utterances_[index].frames;
    }
    out.push_back(data);
  }

 private:
  struct Span {
    uint32_t start;    // first chunk frame
    int32_t class_id;  // of its frames; -1: an invalid utterance's
  };

  struct Expanded {
    std::vector<int32_t> classes;  // per frame
    std::vector<float> floats;     // per frame, float streams
    std::vector<double> doubles;   // per frame, double streams
    std::vector<uint32_t> ones;    // one non-zero per frame
  };

  // A table of the span at every 2^shift-th frame narrows the search to a few neighbouring spans (frame-mode
  // throughput as with a class per frame, bench/htk_throughput), and holds no more entries than there are
  // spans, whatever frame counts the text claims.
  void index_spans() {
    bucket_shift_ = 6;
    while ((frames_ >> bucket_shift_) > spans_.size()) ++bucket_shift_;
    bucket_first_span_.resize(static_cast<size_t>(frames_ >> bucket_shift_) + 1);
    uint32_t span = 0;
    for (size_t b = 0; b < bucket_first_span_.size(); ++b) {
      const uint64_t frame = static_cast<uint64_t>(b) << bucket_shift_;
      while (span + 1 < spans_.size() && spans_[span + 1].start <= frame) ++span;
      bucket_first_span_[b] = span;
    }
  }

  const Span* span_of(uint32_t frame) const {
    const size_t bucket = frame >> bucket_shift_;
    const Span* first = spans_.data() + bucket_first_span_[bucket];
    const Span* end = bucket + 1 < bucket_first_span_.size()
                          ? spans_.data() + bucket_first_span_[bucket + 1] + 1
                          : spans_.data() + spans_.size();
    const Span* after =
        std::upper_bound(first, end, frame, [](uint32_t f, const Span& s) { return f < s.start; });
    return after - 1;
  }

  const Expanded& expanded(uint32_t index) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<Expanded>& slot = expanded_[index];
    if (slot) return *slot;
    const Utterance& u = utterances_[index];
    auto e = std::make_unique<Expanded>();
    e->classes.resize(u.frames);
    e->ones.assign(u.frames, 1);
    std::vector<float> values(u.frames, 1.0f);
    for (uint32_t r = u.first_range; r < u.end_range; ++r) {
      const htk::FrameRange& range = ranges_[r];
      std::fill(e->classes.begin() + range.first, e->classes.begin() + range.first + range.count,
                static_cast<int32_t>(range.class_id));
      if (phone_boundaries_ && range.first < u.frames) values[range.first] = 2.0f;
    }
    if (is_double_) {
      e->doubles.assign(values.begin(), values.end());
    } else {
      e->floats = std::move(values);
    }
    slot = std::move(e);
    return *slot;
  }

  bool frame_mode_;
  bool is_double_;
  bool phone_boundaries_;
  uint64_t frames_;
  std::vector<htk::FrameRange> ranges_;
  std::vector<Utterance> utterances_;
  std::vector<Span> spans_;                  // frame mode: ascending from frame 0, contiguous
  std::vector<uint32_t> bucket_first_span_;  // frame mode: the span holding frame b << bucket_shift_
  uint32_t bucket_shift_ = 0;
  mutable std::mutex mutex_;
  mutable std::vector<std::unique_ptr<Expanded>> expanded_;  // sequence mode: per utterance, once asked for
};

class MlfDeserializer final : public Deserializer {
 public:
  explicit MlfDeserializer(const MlfOptions& options)
      : options_(options), logger_(options.trace_level, core::sink_from_options(options.log_sink)) {
    if (!options_.keys) options_.keys = std::make_shared<KeyTable>(KeyMode::kString);
    if (options_.name.empty()) throw ConfigError("An MLF label stream needs a name.", "input");
    if (options_.label_dim == 0) {
      throw ConfigError("Labels must specify dimension: 'dim/labelDim' property is missing.",
                        "input." + options_.name + ".labelDim");
    }
    if (options_.label_dim > 0xFFFF) {
      throw ConfigError("Label dimension " + std::to_string(options_.label_dim) + " of stream '" +
                            options_.name + "' exceeds the maximum of 65535 classes.",
                        "input." + options_.name + ".labelDim");
    }
    if (options_.mlf_files.empty()) {
      throw ConfigError("HTKMLFDeserializer: No mlf files were specified",
                        "input." + options_.name + ".mlfFile");
    }
    if (options_.phone_boundaries && options_.frame_mode) {
      throw ConfigError("frameMode and phoneBoundaries are mutually exclusive options.",
                        "input." + options_.name + ".phoneBoundaries");
    }
    if (options_.chunk_size_in_bytes == 0) {
      throw ConfigError("chunkSizeInBytes must be greater than 0.", "chunkSizeInBytes");
    }
    if (!options_.label_mapping_file.empty()) {
      states_ = htk::StateTable::read(options_.label_mapping_file);
      logger_.log(core::LogLevel::kInfo, "Total (" + std::to_string(states_.size()) +
                                             ") state names in state list '" + options_.label_mapping_file +
                                             "'");
    }
    for (const std::string& path : options_.mlf_files) index_file(path);
    if (utterances_.empty()) throw_no_utterances();
    by_id_.reserve(utterances_.size());
    for (uint32_t i = 0; i < utterances_.size(); ++i) by_id_.emplace_back(utterances_[i].id, i);
    // Stable: of duplicate keys the first in file order is found (CNTK: unspecified, silently). The others
    // are never read: warned about and counted in the skip report.
    std::stable_sort(by_id_.begin(), by_id_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    report_duplicate_keys();
    uint64_t frames = 0;
    for (const MlfUtterance& u : utterances_) frames += u.frames;
    logger_.log(core::LogLevel::kInfo, "MLF Deserializer: '" + std::to_string(utterances_.size()) +
                                           "' utterances with '" + std::to_string(frames) + "' frames");

    StreamInfo info;
    info.id = 0;
    info.name = options_.name;
    info.alias = options_.name;
    info.storage = StorageFormat::kSparseCsc;
    info.element_type = options_.element_type;
    info.sample_shape = {options_.label_dim};
    streams_.push_back(std::move(info));
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  bool labels_primary_samples() const override { return true; }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    auto it =
        std::lower_bound(by_id_.begin(), by_id_.end(), key.sequence,
                         [](const std::pair<uint64_t, uint32_t>& e, uint64_t id) { return e.first < id; });
    if (it == by_id_.end() || it->first != key.sequence) return {};
    return utterance_location(utterances_[it->second]);
  }

  void add_skips(SkipReport& report) const override {
    report.sequences_skipped += unreachable_duplicates_;
    report.first_locations.insert(report.first_locations.end(), duplicate_locations_.begin(),
                                  duplicate_locations_.end());
  }

  std::vector<ChunkInfo> chunk_infos() const override { throw_not_primary(); }

  void sequence_infos_for_chunk(uint32_t, std::vector<SequenceInfo>&) const override { throw_not_primary(); }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    auto it =
        std::lower_bound(by_id_.begin(), by_id_.end(), key.sequence,
                         [](const std::pair<uint64_t, uint32_t>& e, uint64_t id) { return e.first < id; });
    if (it == by_id_.end() || it->first != key.sequence) return std::nullopt;
    const MlfUtterance& utt = utterances_[it->second];
    if (!options_.frame_mode) {
      return SequenceInfo{utt.index_in_chunk, utt.frames, utt.chunk, SequenceKey{utt.id, 0}};
    }
    if (key.sample >= utt.frames) {
      // CNTK reads the labels of the following utterance here (out of bounds at the chunk end); cntkio
      // remembers the utterance and makes these frames invalid (see load_chunk).
      std::lock_guard<std::mutex> lock(beyond_mutex_);
      uint32_t& requested = beyond_labels_[it->second];
      requested = std::max(requested, key.sample + 1);
      return SequenceInfo{kBeyondLabels, 1, utt.chunk, key};
    }
    return SequenceInfo{utt.first_frame_in_chunk + key.sample, 1, utt.chunk, key};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (chunk_id >= chunks_.size()) {
      throw UsageError("MLF stream '" + options_.name + "' has " + std::to_string(chunks_.size()) +
                       " chunks; chunk " + std::to_string(chunk_id) + " does not exist.");
    }
    check_frames_beyond_labels(chunk_id);
    return alive_.get(chunk_id, [&] { return parse_chunk(chunk_id); });
  }

 private:
  ChunkPtr parse_chunk(uint32_t chunk_id) const {
    const MlfChunkDescription& chunk = chunks_[chunk_id];
    std::vector<htk::FrameRange> ranges;
    std::vector<MlfChunk::Utterance> utterances(chunk.num_utterances);
    for (uint32_t u = 0; u < chunk.num_utterances; ++u) {
      const MlfUtterance& utt = utterances_[chunk.first_utterance + u];
      MlfChunk::Utterance& described = utterances[u];
      described.first_frame = utt.first_frame_in_chunk;
      described.frames = utt.frames;
      described.first_range = static_cast<uint32_t>(ranges.size());
      described.valid = parse_utterance(utt, ranges);
      described.end_range = static_cast<uint32_t>(ranges.size());
    }
    // A chunk's utterances are all in one file: an error if it was cut while it was read.
    files_[utterances_[chunk.first_utterance].file]->check_intact();
    return std::make_shared<MlfChunk>(options_.frame_mode, options_.element_type == ElementType::kDouble,
                                      options_.phone_boundaries, chunk.frames, std::move(ranges),
                                      std::move(utterances));
  }

 public:
  std::string key_to_string(const SequenceKey& key) const override {
    return options_.keys->key_of(key.sequence);
  }

  std::vector<std::string> describe() const override {
    const MlfSummary s = summary();
    std::string files;
    for (const std::string& f : options_.mlf_files) files += (files.empty() ? "" : ", ") + f;
    return {
        "MLF labels from " + files + ": " + std::to_string(s.utterances) + " utterances, " +
        std::to_string(s.frames) + " frames, " + std::to_string(s.chunks) + " chunk(s)" +
        (s.states > 0 ? ", " + std::to_string(s.states) + " states in " + options_.label_mapping_file : "")};
  }

  MlfSummary summary() const {
    MlfSummary s;
    s.utterances = utterances_.size();
    for (const MlfUtterance& u : utterances_) s.frames += u.frames;
    s.chunks = chunks_.size();
    s.states = states_.size();
    return s;
  }

 private:
  [[noreturn]] void throw_not_primary() const {
    throw ConfigError(
        "MLFDeserializer currently does not support primary mode. Put an HTKFeatureDeserializer first in "
        "'deserializers'.",
        "deserializers");
  }

  // CNTK finds this out only when no key matches the features ("Could not reconcile data between different
  // deserializers..."), which names no file.
  [[noreturn]] void throw_no_utterances() const {
    SourceLocation where;
    where.file = options_.mlf_files.back();
    where.byte_offset = files_.back()->size();  // read to its end without finding one
    where.stream = options_.name;
    std::string text = "HTKMLFDeserializer: No utterances to process: ";
    if (options_.mlf_files.size() == 1) {
      text += "the MLF file holds no complete utterance (a quoted key line, label lines and a '.' line).";
    } else {
      text += "none of its " + std::to_string(options_.mlf_files.size()) +
              " MLF files holds a complete utterance (a quoted key line, label lines and a '.' line).";
    }
    throw FormatError(text, where);
  }

  SourceLocation utterance_location(const MlfUtterance& utt) const {
    SourceLocation where;
    where.file = options_.mlf_files[utt.file];
    where.line = utt.key_line;
    where.byte_offset = utt.begin;
    where.stream = options_.name;
    where.sequence_key = options_.keys->key_of(utt.id);
    return where;
  }

  // Feature frames past the end of their labels (frame mode): an error, or with maxErrors > 0 invalid
  // frames that the cleaner drops and counts.
  void check_frames_beyond_labels(uint32_t chunk_id) const {
    std::lock_guard<std::mutex> lock(beyond_mutex_);
    for (const auto& [index, requested] : beyond_labels_) {
      const MlfUtterance& utt = utterances_[index];
      if (utt.chunk != chunk_id) continue;
      const std::string text =
          "Utterance '" + options_.keys->key_of(utt.id) + "' has " + std::to_string(requested) +
          " feature frames but only " + std::to_string(utt.frames) +
          " label frames; in frame mode the feature frames beyond the labels have no label";
      if (options_.max_errors == 0) {
        throw FormatError(text + " (raise maxErrors to skip them as invalid sequences).",
                          utterance_location(utt));
      }
      if (warned_.insert(index).second) {
        logger_.log(core::LogLevel::kWarning, "WARNING: " + text + "; skipping those " +
                                                  std::to_string(requested - utt.frames) + " frame(s) " +
                                                  utterance_location(utt).describe());
      }
    }
  }

  // An utterance whose key an earlier one holds is never read by the composite reader: say which.
  void report_duplicate_keys() {
    constexpr size_t kReported = 10;
    std::vector<std::pair<uint32_t, uint32_t>> duplicates;  // (utterance kept, utterance never read)
    for (size_t i = 1; i < by_id_.size(); ++i) {
      if (by_id_[i].first != by_id_[i - 1].first) continue;
      size_t first = i - 1;
      while (first > 0 && by_id_[first - 1].first == by_id_[i].first) --first;
      ++unreachable_duplicates_;
      duplicates.emplace_back(by_id_[first].second, by_id_[i].second);
    }
    // The earliest in file order (utterances are numbered in file order).
    std::sort(duplicates.begin(), duplicates.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    if (duplicates.size() > kReported) duplicates.resize(kReported);
    auto place = [&](uint32_t u) {
      return files_[utterances_[u].file]->path() + ":" + std::to_string(utterances_[u].key_line);
    };
    for (const auto& [kept, dropped] : duplicates) {
      const std::string key = options_.keys->key_of(utterances_[kept].id);
      duplicate_locations_.push_back(place(dropped) + " (utterance " + key + ": its key repeats " +
                                     place(kept) + "; a composite reader joins on the first only)");
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: utterance key " + key +
                      " appears more than once in the MLF: a composite reader reads the "
                      "labels at " +
                      place(kept) + " and never those at " + place(dropped) + ".");
    }
    if (unreachable_duplicates_ > duplicates.size()) {
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: " + std::to_string(unreachable_duplicates_) +
                      " MLF utterances repeat an earlier utterance's key and are never "
                      "read by the composite reader.");
    }
  }

  void index_file(const std::string& path) {
    const auto file_index = static_cast<uint32_t>(files_.size());
    files_.push_back(std::make_unique<core::MappedFile>(path, "error opening file"));
    const core::MappedFile& file = *files_.back();
    std::vector<htk::MlfIndexEntry> entries = htk::index_mlf(
        file.view(), path, [this](const std::string& line) { logger_.log(core::LogLevel::kWarning, line); });
    file.check_intact();
    bool new_chunk = true;
    uint64_t chunk_begin = 0;
    for (htk::MlfIndexEntry& e : entries) {
      if (!new_chunk && e.end - chunk_begin > options_.chunk_size_in_bytes) new_chunk = true;
      // Frames are numbered in 32 bits inside a chunk (CNTK chunks by bytes alone). An utterance has at most
      // htk::kMaxUtteranceFrames.
      if (!new_chunk && chunks_.back().frames + e.frames > 0xFFFFFFFFull) new_chunk = true;
      if (new_chunk) {
        chunks_.push_back(MlfChunkDescription{static_cast<uint32_t>(utterances_.size()), 0, 0});
        chunk_begin = e.begin;
        new_chunk = false;
      }
      MlfChunkDescription& c = chunks_.back();
      MlfUtterance u;
      u.id = options_.keys->id_of(e.key);
      u.file = file_index;
      u.begin = e.begin;
      u.end = e.end;
      u.frames = static_cast<uint32_t>(e.frames);
      u.key_line = e.key_line;
      u.chunk = static_cast<uint32_t>(chunks_.size() - 1);
      u.index_in_chunk = c.num_utterances++;
      u.first_frame_in_chunk = static_cast<uint32_t>(c.frames);
      c.frames += e.frames;
      utterances_.push_back(u);
    }
  }

  // Appends the utterance's label ranges to `ranges`; false (with a warning, nothing appended) if it is
  // invalid (spec §9.6). The ranges of a valid utterance follow each other from frame 0 to its last frame.
  bool parse_utterance(const MlfUtterance& utt, std::vector<htk::FrameRange>& ranges) const {
    const core::MappedFile& file = *files_[utt.file];
    const std::string& path = options_.mlf_files[utt.file];
    const std::string_view text = file.view().substr(utt.begin, utt.end - utt.begin);
    // Lines split on CR and LF, empty ones removed; the first is the key, the last the "." line.
    std::vector<std::pair<std::string_view, uint64_t>> lines;
    size_t pos = 0;
    while (pos <= text.size()) {
      size_t end = text.find_first_of("\r\n", pos);
      if (end == std::string_view::npos) end = text.size();
      if (end > pos) lines.emplace_back(text.substr(pos, end - pos), utt.begin + pos);
      pos = end + 1;
    }
    const std::string key = options_.keys->key_of(utt.id);
    const std::string_view key_line = lines.empty() ? std::string_view() : lines.front().first;
    // CNTK's warnings, then where the utterance or label line is (CNTK names neither the file nor the line).
    SourceLocation key_line_at;
    key_line_at.file = path;
    key_line_at.line = utt.key_line;
    key_line_at.byte_offset = utt.begin;
    if (key_line.size() < 3 || key_line.front() != '"' || key_line.back() != '"') {
      logger_.log(core::LogLevel::kWarning, "WARNING: skipping sequence entry '" + std::string(key_line) +
                                                "' due to it being too short or not quoted " +
                                                key_line_at.describe());
      return false;
    }
    if (lines.size() < 3) {
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: sequence entry (" + key + ") is empty " + key_line_at.describe());
      return false;
    }
    // CNTK's order (MLFUtils' utterance parser, then its chunk): each line is parsed (a malformed one throws)
    // and must follow on from the one before, up to the first that does not; then the first must start at
    // frame 0; the class ids are checked only in an utterance that passed both.
    const size_t first_range = ranges.size();
    std::vector<uint64_t> line_offsets;
    auto located = [&](uint64_t byte_offset) {
      SourceLocation where;
      where.file = path;
      where.byte_offset = byte_offset;
      return where;
    };
    uint64_t expected_first = 0;
    for (size_t i = 1; i + 1 < lines.size(); ++i) {
      const htk::FrameRange range =
          htk::parse_label_line(lines[i].first, lines[i].second, path, states_.empty() ? nullptr : &states_);
      if (i > 1 && range.first != expected_first) {
        logger_.log(core::LogLevel::kWarning,
                    "WARNING: Labels are not in the consecutive order MLF in label set for utterance '" +
                        key + "' " + located(lines[i].second).describe());
        ranges.resize(first_range);
        return false;
      }
      expected_first = static_cast<uint64_t>(range.first) + range.count;
      ranges.push_back(range);
      line_offsets.push_back(lines[i].second);
    }
    if (ranges[first_range].first != 0) {
      logger_.log(core::LogLevel::kWarning, "WARNING: Invalid first frame in utterance '" + key + "' " +
                                                located(line_offsets.front()).describe());
      ranges.resize(first_range);
      return false;
    }
    for (size_t r = first_range; r < ranges.size(); ++r) {
      if (ranges[r].class_id < options_.label_dim) continue;
      SourceLocation where = located(line_offsets[r - first_range]);
      where.stream = options_.name;
      where.sequence_key = key;
      throw FormatError("Class id '" + std::to_string(ranges[r].class_id) +
                            "d' exceeds the model output dimension '" + std::to_string(options_.label_dim) +
                            "'.",
                        where);
    }
    // The index took the utterance's frames from its last label line: the ranges end there unless the file
    // changed since it was indexed.
    if (expected_first != utt.frames) {
      ranges.resize(first_range);
      return false;
    }
    return true;
  }

  MlfOptions options_;
  core::Logger logger_;
  std::vector<StreamInfo> streams_;
  htk::StateTable states_;
  std::vector<std::unique_ptr<core::MappedFile>> files_;
  std::vector<MlfUtterance> utterances_;
  std::vector<MlfChunkDescription> chunks_;
  std::vector<std::pair<uint64_t, uint32_t>> by_id_;  // (key id, utterance), sorted by id
  uint64_t unreachable_duplicates_ = 0;               // utterances whose key an earlier one holds
  std::vector<std::string> duplicate_locations_;      // the first of them, for the skip report
  mutable std::mutex beyond_mutex_;
  mutable std::unordered_map<uint32_t, uint32_t> beyond_labels_;  // utterance -> feature frames asked for
  mutable std::set<uint32_t> warned_;
  htk::AliveChunks alive_;
};

}  // namespace

std::shared_ptr<Deserializer> make_mlf_deserializer(const MlfOptions& options) {
  return std::make_shared<MlfDeserializer>(options);
}

MlfSummary mlf_summary(const Deserializer& deserializer) {
  const auto* mlf = dynamic_cast<const MlfDeserializer*>(&deserializer);
  if (mlf == nullptr) throw UsageError("mlf_summary: not an MLF deserializer");
  return mlf->summary();
}

}  // namespace cntkio
