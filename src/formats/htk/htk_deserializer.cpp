// HTKFeatureDeserializer: SCP-listed utterances of HTK feature files (spec htk.md §3–§8).
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "core/logger.hpp"
#include "core/text.hpp"
#include "formats/htk/alive_chunks.hpp"
#include "formats/htk/htk_file.hpp"
#include "formats/htk/scp.hpp"

namespace cntkio {
namespace {

// A new I/O chunk starts once the current one holds more than 15 minutes of 10 ms frames.
constexpr uint64_t kChunkFrames = 90000;
constexpr uint32_t kNoPath = 0xFFFFFFFFu;

struct Utterance {
  uint64_t id = 0;
  uint32_t path = 0;   // index into paths_
  uint32_t first = 0;  // first frame in the file
  uint32_t frames = 0;
  uint32_t scp_file = 0;  // which SCP list: 0 = scp_file, then more_scp_files
  uint64_t scp_line = 0;
  uint32_t chunk = 0;
  uint32_t index_in_chunk = 0;  // utterance index inside its chunk
  uint32_t first_frame_in_chunk = 0;
};

struct ChunkDescription {
  uint32_t first_utterance = 0;
  uint32_t num_utterances = 0;
  uint64_t frames = 0;
};

// The output samples of one loaded chunk: frame after frame (chunk order), each `sample_dim` values of the
// stream's element type, already expanded by the context window.
class HtkChunk final : public Chunk {
 public:
  HtkChunk(std::vector<float> floats, std::vector<double> doubles, size_t sample_dim, bool frame_mode,
           bool expand, std::vector<uint32_t> first_frames, std::vector<uint32_t> lengths, std::string name)
      : floats_(std::move(floats)),
        doubles_(std::move(doubles)),
        sample_bytes_(sample_dim * (doubles_.empty() ? sizeof(float) : sizeof(double))),
        frame_mode_(frame_mode),
        expand_(expand),
        first_frames_(std::move(first_frames)),
        lengths_(std::move(lengths)),
        name_(std::move(name)) {
    base_ = doubles_.empty() ? reinterpret_cast<const unsigned char*>(floats_.data())
                             : reinterpret_cast<const unsigned char*>(doubles_.data());
  }

  void get_sequence(uint32_t index, std::vector<SequenceData>& out) const override {
    SequenceData data;
    if (frame_mode_) {
      data.number_of_samples = 1;
      data.values = base_ + static_cast<size_t>(index) * sample_bytes_;
    } else if (expand_) {
      // The single frame is repeated to the length of the first stream of this bundled item (the primary's).
      if (out.empty()) {
        throw ConfigError("Expansion of utterance is not allowed for primary deserializer.",
                          "input." + name_ + ".expandToUtterance");
      }
      const uint32_t length = out.front().number_of_samples;
      data.number_of_samples = length;
      data.values = expanded(index, length);
    } else {
      data.number_of_samples = lengths_.at(index);
      data.values = base_ + static_cast<size_t>(first_frames_[index]) * sample_bytes_;
    }
    out.push_back(data);
  }

 private:
  const unsigned char* expanded(uint32_t index, uint32_t length) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<unsigned char>& buffer = expanded_[{index, length}];
    if (buffer.empty() && length > 0) {
      const unsigned char* frame = base_ + static_cast<size_t>(first_frames_.at(index)) * sample_bytes_;
      buffer.resize(static_cast<size_t>(length) * sample_bytes_);
      for (uint32_t t = 0; t < length; ++t)
        std::memcpy(buffer.data() + t * sample_bytes_, frame, sample_bytes_);
    }
    return buffer.data();
  }

  std::vector<float> floats_;
  std::vector<double> doubles_;
  const unsigned char* base_ = nullptr;
  size_t sample_bytes_;
  bool frame_mode_;
  bool expand_;
  std::vector<uint32_t> first_frames_;  // per utterance, in frames
  std::vector<uint32_t> lengths_;       // per utterance
  std::string name_;                    // the stream's
  mutable std::mutex mutex_;
  mutable std::map<std::pair<uint32_t, uint32_t>, std::vector<unsigned char>> expanded_;
};

// Writes the context-window expansion of `frames` (an utterance of `length` frames of `file_dim` values)
// to `out`: per frame, blocks t-L .. t+R clamped to the utterance, oldest first.
template <typename T>
void augment(const float* frames, uint32_t length, size_t file_dim, size_t left, size_t right, T* out) {
  const size_t window = 1 + left + right;
  for (uint32_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < window; ++j) {
      const int64_t wanted = static_cast<int64_t>(t) - static_cast<int64_t>(left) + static_cast<int64_t>(j);
      const auto source =
          static_cast<size_t>(std::clamp<int64_t>(wanted, 0, static_cast<int64_t>(length) - 1));
      const float* src = frames + source * file_dim;
      T* dst = out + (static_cast<size_t>(t) * window + j) * file_dim;
      for (size_t k = 0; k < file_dim; ++k) dst[k] = static_cast<T>(src[k]);
    }
  }
}

class HtkFeatureDeserializer final : public Deserializer {
 public:
  explicit HtkFeatureDeserializer(const HtkFeatureOptions& options)
      : options_(options), logger_(options.trace_level, core::sink_from_options(options.log_sink)) {
    if (!options_.keys) options_.keys = std::make_shared<KeyTable>(KeyMode::kString);
    if (options_.name.empty()) throw ConfigError("An HTK feature stream needs a name.", "input");
    if (options_.scp_file.empty() || std::find(options_.more_scp_files.begin(), options_.more_scp_files.end(),
                                               "") != options_.more_scp_files.end()) {
      throw ConfigError("HTK feature stream '" + options_.name + "' needs an 'scpFile'.",
                        "input." + options_.name + ".scpFile");
    }
    if (options_.dim == 0) {
      throw ConfigError("Features must specify dimension: 'dim' property is missing.",
                        "input." + options_.name + ".dim");
    }
    check_sample_size();
    index_utterances();
    learn_file_format();
    StreamInfo info;
    info.id = 0;
    info.name = options_.name;
    info.alias = options_.name;
    info.storage = StorageFormat::kDense;
    info.element_type = options_.element_type;
    info.sample_shape = {output_dim_};
    info.defines_mb_size = options_.defines_mb_size;
    streams_.push_back(std::move(info));
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  std::vector<ChunkInfo> chunk_infos() const override {
    check_may_be_primary();
    std::vector<ChunkInfo> out;
    out.reserve(chunks_.size());
    for (size_t c = 0; c < chunks_.size(); ++c) {
      out.push_back(ChunkInfo{static_cast<uint32_t>(c), chunks_[c].frames,
                              options_.frame_mode ? chunks_[c].frames : chunks_[c].num_utterances});
    }
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    check_may_be_primary();
    const ChunkDescription& chunk = checked_chunk(chunk_id);
    // One description per frame: the frames the SCP claims must be in the files first.
    if (options_.frame_mode) check_chunk_files_once(chunk_id);
    for (uint32_t u = 0; u < chunk.num_utterances; ++u) {
      const Utterance& utt = utterances_[chunk.first_utterance + u];
      if (options_.frame_mode) {
        for (uint32_t k = 0; k < utt.frames; ++k) {
          out.push_back(SequenceInfo{utt.first_frame_in_chunk + k, 1, chunk_id, SequenceKey{utt.id, k}});
        }
      } else {
        out.push_back(SequenceInfo{u, utt.frames, chunk_id, SequenceKey{utt.id, 0}});
      }
    }
  }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    auto it =
        std::lower_bound(by_id_.begin(), by_id_.end(), key.sequence,
                         [](const std::pair<uint64_t, uint32_t>& e, uint64_t id) { return e.first < id; });
    if (it == by_id_.end() || it->first != key.sequence) return {};
    return scp_location(utterances_[it->second]);
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    auto it =
        std::lower_bound(by_id_.begin(), by_id_.end(), key.sequence,
                         [](const std::pair<uint64_t, uint32_t>& e, uint64_t id) { return e.first < id; });
    if (it == by_id_.end() || it->first != key.sequence) return std::nullopt;
    const Utterance& utt = utterances_[it->second];
    if (options_.frame_mode && !options_.expand_to_utterance) {
      if (key.sample >= utt.frames) {
        SourceLocation where = scp_location(utt);
        where.stream = options_.name;
        throw FormatError("Sequence with key '" + options_.keys->key_of(utt.id) + "' has '" +
                              std::to_string(utt.frames) +
                              "' frame(s), whereas the primary sequence expects at least '" +
                              std::to_string(static_cast<uint64_t>(key.sample) + 1) + "' frames",
                          where);
      }
      return SequenceInfo{utt.first_frame_in_chunk + key.sample, 1, utt.chunk, key};
    }
    return SequenceInfo{utt.index_in_chunk, utt.frames, utt.chunk, SequenceKey{utt.id, 0}};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    checked_chunk(chunk_id);
    return alive_.get(chunk_id, [&] { return parse_chunk(chunk_id); });
  }

 private:
  ChunkPtr parse_chunk(uint32_t chunk_id) const {
    const ChunkDescription& chunk = checked_chunk(chunk_id);
    check_chunk_files(chunk);  // before the frames the SCP claims size anything
    std::vector<float> raw(static_cast<size_t>(chunk.frames) * file_dim_);
    std::vector<uint32_t> first_frames(chunk.num_utterances);
    std::vector<uint32_t> lengths(chunk.num_utterances);
    htk::PositionedFile file;
    htk::HtkHeader header;
    uint32_t open_path = kNoPath;
    for (uint32_t u = 0; u < chunk.num_utterances; ++u) {
      const Utterance& utt = utterances_[chunk.first_utterance + u];
      // Checked again: a file may have changed since check_chunk_files().
      open_utterance_file(utt, file, header, open_path);
      check_utterance_range(utt, file, header);
      first_frames[u] = utt.first_frame_in_chunk;
      lengths[u] = utt.frames;
      htk::read_frames(file, header, utt.first, utt.frames,
                       raw.data() + static_cast<size_t>(utt.first_frame_in_chunk) * file_dim_);
    }

    const bool window = left_ + right_ > 0;
    std::vector<float> floats;
    std::vector<double> doubles;
    if (options_.element_type == ElementType::kFloat && !window) {
      floats = std::move(raw);
    } else if (options_.element_type == ElementType::kFloat) {
      floats.resize(static_cast<size_t>(chunk.frames) * output_dim_);
      expand_all(raw, first_frames, lengths, floats.data());
    } else {
      doubles.resize(static_cast<size_t>(chunk.frames) * output_dim_);
      expand_all(raw, first_frames, lengths, doubles.data());
    }
    return std::make_shared<HtkChunk>(std::move(floats), std::move(doubles), output_dim_, options_.frame_mode,
                                      options_.expand_to_utterance, std::move(first_frames),
                                      std::move(lengths), options_.name);
  }

  // Opens the file of `utt` unless it is the one open (consecutive utterances of an archive share it) and
  // checks that its kind, dimension and period are those of the stream.
  void open_utterance_file(const Utterance& utt, htk::PositionedFile& file, htk::HtkHeader& header,
                           uint32_t& open_path) const {
    if (utt.path == open_path) return;
    try {
      file = htk::PositionedFile(paths_[utt.path]);
    } catch (const IoError& e) {
      throw IoError(e, scp_location(utt));  // which SCP line named the file
    }
    header = htk::read_header(file);
    open_path = utt.path;
    if (header.kind != kind_ || header.dim != file_dim_ || header.sample_period != sample_period_) {
      throw FormatError("setkind: inconsistent feature kind for file '" + paths_[utt.path] + "'",
                        scp_location(utt));
    }
  }

  // The SCP range of `utt` lies inside the frames its file's header declares and the file holds.
  void check_utterance_range(const Utterance& utt, const htk::PositionedFile& file,
                             const htk::HtkHeader& header) const {
    const uint64_t last = static_cast<uint64_t>(utt.first) + utt.frames - 1;
    if (last >= header.num_frames) {
      throw FormatError("open: end frame exceeds archive's total number of frames " +
                            std::to_string(header.num_frames) + " in '" + paths_[utt.path] + "'",
                        scp_location(utt));
    }
    htk::check_frames_present(file, header, utt.first, utt.frames);
  }

  // Every utterance of the chunk against its file, before anything is sized by the frames the SCP claims (a
  // 30-byte SCP line can claim 2^32 frames). CNTK checks a range only while it reads the chunk, after
  // allocating the chunk's frames.
  void check_chunk_files(const ChunkDescription& chunk) const {
    htk::PositionedFile file;
    htk::HtkHeader header;
    uint32_t open_path = kNoPath;
    for (uint32_t u = 0; u < chunk.num_utterances; ++u) {
      const Utterance& utt = utterances_[chunk.first_utterance + u];
      open_utterance_file(utt, file, header, open_path);
      check_utterance_range(utt, file, header);
    }
  }

  void check_chunk_files_once(uint32_t chunk_id) const {
    std::lock_guard<std::mutex> lock(checked_mutex_);
    if (checked_chunks_[chunk_id] != 0) return;
    check_chunk_files(chunks_[chunk_id]);
    checked_chunks_[chunk_id] = 1;
  }

 public:
  std::string key_to_string(const SequenceKey& key) const override {
    return options_.keys->key_of(key.sequence);
  }

  std::vector<std::string> describe() const override {
    const HtkFeatureSummary s = summary();
    std::string lists = options_.scp_file;
    for (const std::string& more : options_.more_scp_files) lists += ", " + more;
    std::string text = "HTK features from " + lists + ": " + std::to_string(s.utterances) + " utterances, " +
                       std::to_string(s.frames) + " frames, " + std::to_string(s.chunks) + " chunk(s), " +
                       s.kind + " with " + std::to_string(s.file_dim) + " values a frame";
    if (s.left_context + s.right_context > 0) {
      text += ", context " + std::to_string(s.left_context) + ":" + std::to_string(s.right_context) + " (" +
              std::to_string(s.output_dim) + " values a sample)";
    }
    if (s.duplicates > 0) text += ", " + std::to_string(s.duplicates) + " duplicate utterances dropped";
    return {text};
  }

  HtkFeatureSummary summary() const {
    HtkFeatureSummary s;
    s.utterances = utterances_.size();
    for (const Utterance& u : utterances_) s.frames += u.frames;
    s.chunks = chunks_.size();
    s.duplicates = duplicates_;
    s.file_dim = file_dim_;
    s.output_dim = output_dim_;
    s.left_context = left_;
    s.right_context = right_;
    s.kind = kind_;
    s.sample_period = sample_period_;
    return s;
  }

 private:
  template <typename T>
  void expand_all(const std::vector<float>& raw, const std::vector<uint32_t>& first_frames,
                  const std::vector<uint32_t>& lengths, T* out) const {
    for (size_t u = 0; u < lengths.size(); ++u) {
      augment<T>(raw.data() + static_cast<size_t>(first_frames[u]) * file_dim_, lengths[u], file_dim_, left_,
                 right_, out + static_cast<size_t>(first_frames[u]) * output_dim_);
    }
  }

  void check_may_be_primary() const {
    if (options_.expand_to_utterance) {
      throw ConfigError("Cannot expand utterances of the primary stream " + options_.name +
                            ", please change your configuration.",
                        "input." + options_.name + ".expandToUtterance");
    }
  }

  const ChunkDescription& checked_chunk(uint32_t chunk_id) const {
    if (chunk_id >= chunks_.size()) {
      throw UsageError("HTK feature stream '" + options_.name + "' has " + std::to_string(chunks_.size()) +
                       " chunks; chunk " + std::to_string(chunk_id) + " does not exist.");
    }
    return chunks_[chunk_id];
  }

  const std::string& scp_path(uint32_t index) const {
    return index == 0 ? options_.scp_file : options_.more_scp_files[index - 1];
  }

  SourceLocation scp_location(const Utterance& utt) const {
    SourceLocation where;
    where.file = scp_path(utt.scp_file);
    where.line = utt.scp_line;
    where.sequence_key = options_.keys->key_of(utt.id);
    return where;
  }

  // Appends the entries of SCP list `list` (0: scp_file) to `candidates` (spec §3.4).
  void add_scp_entries(uint32_t list, std::unordered_map<std::string, uint32_t>& path_ids,
                       std::unordered_map<uint64_t, size_t>& occurrences,
                       std::vector<Utterance>& candidates) {
    const std::string& scp = scp_path(list);
    std::vector<htk::ScpEntry> entries = htk::read_scp_file(scp, options_.prefix_path_in_scp);
    candidates.reserve(candidates.size() + entries.size());
    for (const htk::ScpEntry& e : entries) {
      const uint64_t frames = static_cast<uint64_t>(e.last) - e.first + 1;
      if (options_.expand_to_utterance && frames != 1) {
        SourceLocation where;
        where.file = scp;
        where.line = e.line;
        throw FormatError("Expanded stream should only contain sequences of length 1, utterance '" + e.key +
                              "' has " + std::to_string(frames),
                          where);
      }
      if (frames > options_.max_sequence_size) continue;
      Utterance u;
      u.id = options_.keys->id_of(e.key);
      auto [it, inserted] = path_ids.emplace(e.physical, static_cast<uint32_t>(paths_.size()));
      if (inserted) paths_.push_back(e.physical);
      u.path = it->second;
      u.first = e.first;
      u.frames = static_cast<uint32_t>(frames);
      u.scp_line = e.line;
      u.scp_file = list;
      ++occurrences[u.id];
      candidates.push_back(u);
    }
  }

  // SCP scan, filtering, de-duplication and chunking (spec §3.4, §5).
  void index_utterances() {
    std::unordered_map<std::string, uint32_t> path_ids;
    std::unordered_map<uint64_t, size_t> occurrences;
    std::vector<Utterance> candidates;
    for (uint32_t list = 0; list <= options_.more_scp_files.size(); ++list) {
      add_scp_entries(list, path_ids, occurrences, candidates);
    }
    for (const auto& [id, count] : occurrences) {
      if (count > 1) duplicates_ += count;
    }
    if (duplicates_ > 0) {
      logger_.log(core::LogLevel::kWarning,
                  "WARNING: Number of duplicates is '" + std::to_string(duplicates_) +
                      "'. All duplicates will be dropped. Consider switching to numeric "
                      "sequence ids.");
    }
    for (const Utterance& u : candidates) {
      if (occurrences[u.id] == 1) utterances_.push_back(u);
    }
    if (utterances_.empty()) {
      SourceLocation where;
      where.file = options_.scp_file;
      const std::string more =
          options_.more_scp_files.empty()
              ? std::string()
              : " (nor in the " + std::to_string(options_.more_scp_files.size()) + " SCP list(s) after it)";
      throw FormatError("HTKDeserializer: No utterances to process." + more, where);
    }
    for (size_t i = 0; i < utterances_.size(); ++i) {
      if (chunks_.empty() || chunks_.back().frames > kChunkFrames) {
        chunks_.push_back(ChunkDescription{static_cast<uint32_t>(i), 0, 0});
      }
      ChunkDescription& c = chunks_.back();
      Utterance& u = utterances_[i];
      if (c.frames + u.frames > 0xFFFFFFFFull) {
        SourceLocation where = scp_location(u);
        throw FormatError("HTK chunk would exceed 2^32 frames; the utterance is too long.", where);
      }
      u.chunk = static_cast<uint32_t>(chunks_.size() - 1);
      u.index_in_chunk = c.num_utterances++;
      u.first_frame_in_chunk = static_cast<uint32_t>(c.frames);
      c.frames += u.frames;
    }
    checked_chunks_.assign(chunks_.size(), 0);
    by_id_.reserve(utterances_.size());
    for (uint32_t i = 0; i < utterances_.size(); ++i) by_id_.emplace_back(utterances_[i].id, i);
    std::sort(by_id_.begin(), by_id_.end());
    logger_.log(core::LogLevel::kInfo, "HTKDeserializer: selected '" + std::to_string(utterances_.size()) +
                                           "' utterances grouped into '" + std::to_string(chunks_.size()) +
                                           "' chunks");
  }

  // Kind, dimension and period from the first utterance; the context window (spec §4.6, §6.1).
  void learn_file_format() {
    const Utterance& first = utterances_.front();
    htk::PositionedFile file(paths_[first.path]);
    htk::HtkHeader header = htk::read_header(file);
    kind_ = header.kind;
    file_dim_ = header.dim;
    sample_period_ = header.sample_period;
    logger_.log(core::LogLevel::kInfo, "HTKDeserializer: determined feature kind as '" +
                                           std::to_string(file_dim_) + "'-dimensional '" + kind_ +
                                           "' with frame shift " + std::to_string(sample_period_ / 1e4) +
                                           " ms");
    // CNTK's texts; the location names the file whose dimension the configured dim disagrees with.
    SourceLocation where;
    where.file = paths_[first.path];
    where.stream = options_.name;
    if (options_.left_context == 0 && options_.right_context == 0) {
      if (options_.dim % file_dim_ != 0) {
        throw FormatError("HTKDeserializer: model vector size is not multiple of input features", where);
      }
      const size_t window = options_.dim / file_dim_;
      if (window % 2 == 0) {
        throw FormatError("HTKDeserializer: neighbor expansion of input features to '" +
                              std::to_string(window) + "' is not symmetrical",
                          where);
      }
      left_ = right_ = window / 2;
    } else {
      // CNTK lays the blocks out with the file's dimension and never compares it with `dim` here: a larger
      // dim leaves a zero tail, a smaller one overruns the output buffer. cntkio requires them to agree.
      if (options_.dim != file_dim_) {
        throw FormatError("HTKDeserializer: dim " + std::to_string(options_.dim) + " of stream '" +
                              options_.name + "' differs from the " + std::to_string(file_dim_) +
                              " values per frame of '" + paths_[first.path] +
                              "'; with an explicit contextWindow, dim must be the per-frame dimension.",
                          where);
      }
      left_ = options_.left_context;
      right_ = options_.right_context;
    }
    output_dim_ = file_dim_ * (1 + left_ + right_);
  }

  // The bounds the config route checks when it reads `dim` and `contextWindow` (htk_config.cpp), for options
  // built in code: a sample of more values than that would overflow the sizes computed from it.
  void check_sample_size() const {
    constexpr size_t kMaxValues = 0x7FFFFFFF;
    const size_t left = options_.left_context, right = options_.right_context;
    if (options_.dim > kMaxValues) {
      throw ConfigError("'dim' must be between 1 and " + std::to_string(kMaxValues) + ", found " +
                            std::to_string(options_.dim) + ".",
                        "input." + options_.name + ".dim");
    }
    if (left >= kMaxValues || right >= kMaxValues || left + right >= kMaxValues / options_.dim) {
      throw ConfigError("The context window " + std::to_string(left) + ":" + std::to_string(right) +
                            " with dim " + std::to_string(options_.dim) + " makes samples of more than " +
                            std::to_string(kMaxValues) + " values.",
                        "input." + options_.name + ".contextWindow");
    }
  }

  HtkFeatureOptions options_;
  core::Logger logger_;
  std::vector<StreamInfo> streams_;
  std::vector<std::string> paths_;
  std::vector<Utterance> utterances_;
  std::vector<ChunkDescription> chunks_;
  std::vector<std::pair<uint64_t, uint32_t>> by_id_;  // (key id, utterance) sorted by id
  size_t duplicates_ = 0;
  std::string kind_;
  size_t file_dim_ = 0;
  uint32_t sample_period_ = 0;
  size_t left_ = 0;
  size_t right_ = 0;
  size_t output_dim_ = 0;
  mutable std::mutex checked_mutex_;
  mutable std::vector<uint8_t> checked_chunks_;  // per chunk: its files were checked (frame mode)
  htk::AliveChunks alive_;
};

}  // namespace

std::shared_ptr<Deserializer> make_htk_feature_deserializer(const HtkFeatureOptions& options) {
  return std::make_shared<HtkFeatureDeserializer>(options);
}

HtkFeatureSummary htk_feature_summary(const Deserializer& deserializer) {
  const auto* htk = dynamic_cast<const HtkFeatureDeserializer*>(&deserializer);
  if (htk == nullptr) throw UsageError("htk_feature_summary: not an HTK feature deserializer");
  return htk->summary();
}

}  // namespace cntkio
