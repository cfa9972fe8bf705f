// ImageDeserializer (map files, zip archives) and Base64ImageDeserializer (spec image.md §3, §4, §6, §7).
#include <algorithm>
#include <cerrno>
#include <climits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "cntkio/errors.hpp"
#include "cntkio/image.hpp"
#include "cntkio/transform.hpp"
#include "core/logger.hpp"
#include "core/mapped_file.hpp"
#include "formats/image/image_source.hpp"

namespace cntkio {
namespace {

using image::ImageSource;
using image::ImageSourceSet;
using image::NativeImage;

constexpr float kOneFloat = 1.0f;
constexpr double kOneDouble = 1.0;
constexpr uint32_t kOneEntry = 1;

std::shared_ptr<core::Logger> make_logger(const ImageOptions& options) {
  core::Logger::Sink sink;
  if (options.log_sink) {
    sink = [user = options.log_sink](core::LogLevel level, std::string_view line) {
      user(static_cast<int>(level), line);
    };
  }
  return std::make_shared<core::Logger>(options.trace_level, std::move(sink));
}

SourceLocation at_file(const std::string& file) {
  SourceLocation where;
  where.file = file;
  return where;
}

SourceLocation at_line(const std::string& file, uint64_t zero_based_line) {
  SourceLocation where;
  where.file = file;
  where.line = zero_based_line + 1;
  return where;
}

// strtoull(text, base 10) on [begin, end): leading whitespace and a sign accepted, trailing text ignored.
// False if no digit was read or the value overflows.
bool parse_label(const char* begin, const char* end, uint64_t& value, const char** stop = nullptr) {
  const char* p = begin;
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\v' || *p == '\f' || *p == '\r')) ++p;
  bool negative = false;
  if (p < end && (*p == '+' || *p == '-')) {
    negative = *p == '-';
    ++p;
  }
  const char* digits = p;
  uint64_t v = 0;
  bool overflow = false;
  while (p < end && *p >= '0' && *p <= '9') {
    const auto d = static_cast<uint64_t>(*p - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    v = v * 10 + d;
    ++p;
  }
  if (stop != nullptr) *stop = p;
  if (p == digits || overflow) return false;
  value = negative ? (~v + 1) : v;
  return true;
}

// Fields shared by both deserializers and their chunks.
struct Common {
  ImageOptions options;
  KeyTablePtr keys;
  std::shared_ptr<core::Logger> logger;
  std::shared_ptr<ImageSourceSet> sources;
  std::vector<StreamInfo> streams;
};

void init_common(Common& c, const ImageOptions& options) {
  c.options = options;
  c.keys = options.keys ? options.keys : std::make_shared<KeyTable>(KeyMode::kNumeric);
  c.logger = make_logger(options);
  if (options.max_image_pixels == 0 || options.max_image_bytes == 0) {
    throw ConfigError("maxImagePixels and maxImageBytes must be greater than 0.");
  }
  image::ImageLimits limits;
  limits.max_pixels = options.max_image_pixels;
  limits.max_bytes = options.max_image_bytes;
  c.sources = std::make_shared<ImageSourceSet>(options.file, options.grayscale, limits);
  if (options.label_dim > static_cast<size_t>(INT32_MAX)) {
    throw ConfigError("labelDim " + std::to_string(options.label_dim) +
                      " does not fit the sparse index type (at most 2147483647).");
  }
  StreamInfo feature;
  feature.id = 0;
  feature.name = options.feature_stream;
  feature.alias = options.feature_stream;
  feature.storage = StorageFormat::kDense;
  feature.element_type = options.element_type;
  StreamInfo label;
  label.id = 1;
  label.name = options.label_stream;
  label.alias = options.label_stream;
  label.storage = StorageFormat::kSparseCsc;
  label.element_type = options.element_type;
  label.sample_shape = {options.label_dim};
  c.streams = {feature, label};
}

// The label item: a one-hot sparse sample.
SequenceData label_item(const int32_t* index, ElementType type) {
  SequenceData d;
  d.number_of_samples = 1;
  d.values = type == ElementType::kFloat ? static_cast<const void*>(&kOneFloat) : &kOneDouble;
  d.indices = index;
  d.nnz_counts = &kOneEntry;
  d.total_nnz = 1;
  return d;
}

// One image sequence per chunk (CNTK: each map line copy is its own chunk).
class SingleImageChunk final : public Chunk {
 public:
  SingleImageChunk(std::shared_ptr<const Common> common, NativeImage image, int32_t label)
      : common_(std::move(common)), image_(std::move(image)), label_(label) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    if (index_in_chunk != 0) throw UsageError("An image chunk holds a single sequence.");
    SequenceData d;
    d.number_of_samples = 1;
    d.native = &image_;
    out.push_back(d);
    out.push_back(label_item(&label_, common_->options.element_type));
  }

 private:
  std::shared_ptr<const Common> common_;
  NativeImage image_;
  int32_t label_;
};

// ------------------------------------------------------------------------------------ ImageDeserializer

class ImageMapDeserializer final : public Deserializer {
 public:
  explicit ImageMapDeserializer(const ImageOptions& options) : common_(std::make_shared<Common>()) {
    init_common(*common_, options);
    read_map();
    if (sequences_.empty()) {
      throw FormatError("The input has no data: the map file lists no image.", at_file(options.file));
    }
    resolve_archives();
  }

  const std::vector<StreamInfo>& streams() const override { return common_->streams; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out(sequences_.size());
    for (size_t i = 0; i < sequences_.size(); ++i) out[i] = ChunkInfo{static_cast<uint32_t>(i), 1, 1};
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    checked(chunk_id);
    out.push_back(SequenceInfo{0, 1, chunk_id, SequenceKey{sequences_[chunk_id].key, 0}});
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    auto it = by_key_.find(key.sequence);
    if (it == by_key_.end()) return std::nullopt;
    return SequenceInfo{0, 1, it->second, SequenceKey{key.sequence, 0}};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    const Sequence& s = checked(chunk_id);
    NativeImage image;
    image.sources = common_->sources.get();
    image.index = s.source;
    image.copy_id = s.copy;
    image.line = common_->sources->sources()[s.source].line;
    return std::make_shared<SingleImageChunk>(common_, std::move(image), s.label);
  }

  std::string key_to_string(const SequenceKey& key) const override {
    return common_->keys->key_of(key.sequence);
  }

  std::vector<std::string> describe() const override {
    return {"image map " + common_->options.file + ": " + std::to_string(sequences_.size()) +
            " images, labelDim " + std::to_string(common_->options.label_dim)};
  }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    auto it = by_key_.find(key.sequence);
    if (it == by_key_.end()) return {};
    SourceLocation where =
        at_line(common_->options.file, common_->sources->sources()[sequences_[it->second].source].line);
    where.sequence_key = key_to_string(key);
    return where;
  }

 private:
  struct Sequence {
    uint64_t key;
    uint32_t source;  // index into the source set
    uint32_t copy;
    int32_t label;
  };

  const Sequence& checked(uint32_t chunk_id) const {
    if (chunk_id >= sequences_.size()) {
      throw UsageError("Image chunk " + std::to_string(chunk_id) + " does not exist.");
    }
    return sequences_[chunk_id];
  }

  // CNTK's map-file rules (§3.1, §3.2).
  void read_map() {
    const std::string& map = common_->options.file;
    const core::MappedFile file(map, "Could not open " + map + " for reading.");
    const std::string_view text = file.view();
    const size_t separator = map.find_last_of("/\\");
    const std::string map_dir = separator == std::string::npos ? map : map.substr(0, separator);
    const uint32_t copies = common_->options.multi_view ? 10 : 1;
    auto& sources = common_->sources->sources();
    // std::getline's lines: split at LF, no empty line after a final LF.
    size_t line_start = 0;
    for (uint64_t index = 0; line_start < text.size(); ++index) {
      const size_t line_end = std::min(text.find('\n', line_start), text.size());
      const std::string line(text.substr(line_start, line_end - line_start));
      line_start = line_end + 1;
      std::string fields[3];
      int read = 0;
      size_t pos = 0;
      for (; read < 3; ++read) {
        if (pos >= line.size()) break;  // getline extracts nothing at the end: failure
        const size_t tab = line.find('\t', pos);
        if (tab == std::string::npos) {
          fields[read] = line.substr(pos);
          pos = line.size();
        } else {
          fields[read] = line.substr(pos, tab - pos);
          pos = tab + 1;
        }
      }
      std::string key_text, path, label_text;
      if (read == 3) {
        key_text = fields[0];
        path = fields[1];
        label_text = fields[2];
      } else {
        path = fields[0];
        label_text = read >= 2 ? fields[1] : std::string();
        key_text = std::to_string(index);
        if (path.empty() || label_text.empty()) {
          throw FormatError("Invalid map file format, must contain 2 or 3 tab-delimited columns, line " +
                                std::to_string(index) + " in file " + map + ".",
                            at_line(map, index));
        }
      }
      uint64_t label = 0;
      if (!parse_label(label_text.data(), label_text.data() + label_text.size(), label)) {
        throw FormatError("Cannot parse label value on line " + std::to_string(index) +
                              ", second column, in file " + map + ".",
                          at_line(map, index));
      }
      if (label >= common_->options.label_dim) {
        throw FormatError("Image '" + path + "' has invalid class id '" + std::to_string(label) +
                              "'. It is exceeding the label dimension of '" +
                              std::to_string(common_->options.label_dim) + "'. Line " +
                              std::to_string(index) + " in file " + map + ".",
                          at_line(map, index));
      }
      uint64_t key = 0;
      try {
        key = common_->keys->id_of(key_text);
      } catch (const Error& e) {
        throw FormatError(e.cntk_text(), at_line(map, index));
      }
      ImageSource source;
      source.path_as_written = path;
      source.path = path.compare(0, 3, "...") == 0 ? map_dir + path.substr(3) : path;
      source.line = index;
      const size_t at = source.path.find('@');
      if (at != std::string::npos) {
        std::string entry = at + 1 < source.path.size() ? source.path.substr(at + 2) : std::string();
        for (char& ch : entry) {
          if (ch == '\\') ch = '/';
        }
        zip_requests_.push_back(ZipRequest{source.path.substr(0, at), std::move(entry), sources.size()});
      }
      if (sources.size() >= UINT32_MAX || sequences_.size() + copies > UINT32_MAX) {
        throw FormatError("Too many images in the map file.", at_line(map, index));
      }
      const auto source_index = static_cast<uint32_t>(sources.size());
      sources.push_back(std::move(source));
      by_key_[key] = static_cast<uint32_t>(sequences_.size());
      for (uint32_t copy = 0; copy < copies; ++copy) {
        sequences_.push_back(Sequence{key, source_index, copy, static_cast<int32_t>(label)});
      }
    }
    file.check_intact();
  }

  // Zip entries are resolved once, when the reader is built (§3.3).
  void resolve_archives() {
    if (zip_requests_.empty()) return;
    auto& archives = common_->sources->archives();
    auto& sources = common_->sources->sources();
    std::map<std::string, size_t> archive_of;
    std::map<std::pair<size_t, std::string>, uint64_t> missing;   // (archive, entry) -> first map line
    std::map<std::pair<size_t, std::string>, uint64_t> repeated;  // entries the archive holds twice
    for (const ZipRequest& request : zip_requests_) {
      auto it = archive_of.find(request.container);
      if (it == archive_of.end()) {
        try {
          archives.push_back(std::make_unique<image::ZipArchive>(request.container));
        } catch (const IoError& e) {
          // which map line names the archive
          throw IoError(e, at_line(common_->options.file, sources[request.source].line));
        }
        it = archive_of.emplace(request.container, archives.size() - 1).first;
      }
      ImageSource& source = sources[request.source];
      source.archive = static_cast<int>(it->second);
      const auto& entries = archives[it->second]->entries();
      auto entry = entries.find(request.entry);
      if (entry == entries.end()) {
        missing.emplace(std::make_pair(it->second, request.entry), source.line);
      } else {
        source.entry = entry->second;
      }
      // CNTK counts the archive's entries matching a requested name against the names requested: an entry
      // name that the archive holds twice fails that count (which of the two is meant is unknown).
      if (archives[it->second]->duplicates().count(request.entry)) {
        repeated.emplace(std::make_pair(it->second, request.entry), source.line);
      }
    }
    if (missing.empty() && repeated.empty()) return;
    uint64_t first_line = UINT64_MAX;
    std::string names;
    for (const auto& [where, line] : missing) {
      common_->logger->always(
          core::LogLevel::kError,
          "Sequence " + where.second + " is not found in container " + archives[where.first]->path() + ".");
      first_line = std::min(first_line, line);
      names += (names.empty() ? "" : ", ") + where.second;
    }
    std::string twice;
    for (const auto& [where, line] : repeated) {
      common_->logger->always(core::LogLevel::kError,
                              "Sequence " + where.second + " is found " +
                                  std::to_string(archives[where.first]->duplicates().at(where.second) + 1) +
                                  " times in container " + archives[where.first]->path() + ".");
      first_line = std::min(first_line, line);
      twice += (twice.empty() ? "" : ", ") + where.second;
    }
    SourceLocation location = at_line(common_->options.file, first_line);
    location.sequence_key = (names.empty() ? "" : "missing entries: " + names) +
                            (names.empty() || twice.empty() ? "" : "; ") +
                            (twice.empty() ? "" : "entries named more than once: " + twice);
    throw FormatError(
        "Cannot retrieve image data for some sequences. For more detail, please see the log file.", location);
  }

  struct ZipRequest {
    std::string container;
    std::string entry;
    size_t source;
  };

  std::shared_ptr<Common> common_;
  std::vector<Sequence> sequences_;                // by chunk id
  std::unordered_map<uint64_t, uint32_t> by_key_;  // key -> chunk of its copy 0 (the last line wins)
  std::vector<ZipRequest> zip_requests_;
};

// ------------------------------------------------------------------------------- Base64ImageDeserializer

class Base64Chunk final : public Chunk {
 public:
  struct Item {
    NativeImage image;
    int32_t label = 0;
    bool valid = true;
  };

  Base64Chunk(std::shared_ptr<const Common> common, std::vector<Item> items)
      : common_(std::move(common)), items_(std::move(items)) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    if (index_in_chunk >= items_.size()) throw UsageError("Sequence index out of range in a base64 chunk.");
    const Item& item = items_[index_in_chunk];
    SequenceData d;
    d.number_of_samples = 1;
    d.native = &item.image;
    d.valid = item.valid;
    out.push_back(d);
    out.push_back(label_item(&item.label, common_->options.element_type));
  }

 private:
  std::shared_ptr<const Common> common_;
  std::vector<Item> items_;
};

class Base64ImageDeserializer final : public Deserializer {
 public:
  explicit Base64ImageDeserializer(const ImageOptions& options) : common_(std::make_shared<Common>()) {
    init_common(*common_, options);
    const std::string& path = options.file;
    file_ = std::make_unique<core::MappedFile>(path, "Could not open '" + path + "' for reading.");
    if (file_->size() == 0) {
      throw FormatError("Could not read the file '" + path + "'.", at_file(path));
    }
    build_index();
  }

  const std::vector<StreamInfo>& streams() const override { return common_->streams; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    const size_t copies = copies_per_line();
    for (size_t i = 0; i < chunks_.size(); ++i) {
      size_t samples = 0;
      for (size_t s = chunks_[i].first; s < chunks_[i].last; ++s) samples += sequences_[s].lines * copies;
      out.push_back(
          ChunkInfo{static_cast<uint32_t>(i), samples, (chunks_[i].last - chunks_[i].first) * copies});
    }
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    const ChunkRange& chunk = checked(chunk_id);
    const size_t copies = copies_per_line();
    for (size_t s = chunk.first; s < chunk.last; ++s) {
      for (size_t copy = 0; copy < copies; ++copy) {
        out.push_back(SequenceInfo{static_cast<uint32_t>((s - chunk.first) * copies + copy),
                                   sequences_[s].lines, chunk_id, SequenceKey{sequences_[s].key, 0}});
      }
    }
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    auto it = by_key_.find(key.sequence);
    if (it == by_key_.end()) return std::nullopt;
    const size_t s = it->second;
    const uint32_t chunk = sequences_[s].chunk;
    return SequenceInfo{static_cast<uint32_t>((s - chunks_[chunk].first) * copies_per_line()),
                        sequences_[s].lines, chunk, SequenceKey{key.sequence, 0}};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    const ChunkRange& chunk = checked(chunk_id);
    const size_t copies = copies_per_line();
    std::vector<Base64Chunk::Item> items;
    items.reserve((chunk.last - chunk.first) * copies);
    std::vector<unsigned char> bytes;
    for (size_t s = chunk.first; s < chunk.last; ++s) {
      Base64Chunk::Item item = parse(sequences_[s], bytes);
      for (size_t copy = 0; copy < copies; ++copy) {
        items.push_back(item);
        items.back().image.copy_id = static_cast<uint32_t>(copy);
      }
    }
    file_->check_intact();
    return std::make_shared<Base64Chunk>(common_, std::move(items));
  }

  std::string key_to_string(const SequenceKey& key) const override {
    return common_->keys->key_of(key.sequence);
  }

  std::vector<std::string> describe() const override {
    return {"base64 image map " + common_->options.file + ": " + std::to_string(chunks_.size()) +
            " chunk(s), labelDim " + std::to_string(common_->options.label_dim)};
  }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    auto it = by_key_.find(key.sequence);
    if (it == by_key_.end()) return {};
    SourceLocation where = at_line(common_->options.file, sequences_[it->second].line);
    where.byte_offset = sequences_[it->second].offset;
    where.sequence_key = key_to_string(key);
    return where;
  }

 private:
  struct Sequence {
    size_t offset;   // first byte of its first line
    uint32_t lines;  // scheduling length
    uint64_t key;
    uint64_t line;  // 0-based line number of its first line
    uint32_t chunk;
  };
  struct ChunkRange {
    size_t first, last;  // sequences [first, last)
  };

  size_t copies_per_line() const { return common_->options.multi_view ? 10 : 1; }

  const ChunkRange& checked(uint32_t chunk_id) const {
    if (chunk_id >= chunks_.size()) {
      throw UsageError("Base64 chunk " + std::to_string(chunk_id) + " does not exist.");
    }
    return chunks_[chunk_id];
  }

  // CNTK's TextInputIndexBuilder without a main stream (§4.2).
  void build_index() {
    const std::string& path = common_->options.file;
    const char* data = file_->data();
    const size_t size = file_->size();
    size_t start = 0;
    if (size >= 3 && static_cast<unsigned char>(data[0]) == 0xEF &&
        static_cast<unsigned char>(data[1]) == 0xBB && static_cast<unsigned char>(data[2]) == 0xBF) {
      start = 3;
    }
    uint64_t line_number = 0;
    while (start < size && (data[start] == ' ' || data[start] == '\t' || data[start] == '\n' ||
                            data[start] == '\r' || data[start] == '\v' || data[start] == '\f')) {
      if (data[start] == '\n') ++line_number;
      ++start;
    }
    if (start >= size) throw FormatError("Input file is empty", at_file(path));

    const size_t first_end = std::find(data + start, data + size, '\n') - data;
    const bool has_keys = std::count(data + start, data + first_end, '\t') >= 2;
    has_keys_ = has_keys;
    KeyTable& keys = *common_->keys;
    if (!has_keys && !keys.is_numeric()) {
      throw FormatError(
          "Corpus expects non-numeric sequence keys present but the input file does not have them.Please use "
          "the "
          "configuration to enable numeric keys instead.",
          at_file(path));
    }

    size_t chunk_bytes = 0;
    std::string previous_key;
    for (size_t pos = start; pos < size; ++line_number) {
      const char* end_of_line = std::find(data + pos, data + size, '\n');
      const size_t next = std::min(size, static_cast<size_t>(end_of_line - data) + 1);
      std::string key_text;
      if (has_keys) {
        size_t k = pos;
        if (keys.is_numeric()) {
          while (k < next && data[k] >= '0' && data[k] <= '9') ++k;
        } else {
          while (k < next && data[k] != '\t' && data[k] != ' ' && data[k] != '\n' && data[k] != '\r') ++k;
        }
        key_text.assign(data + pos, k - pos);
        if (key_text.empty() && sequences_.empty()) {
          SourceLocation where = at_line(path, line_number);
          where.byte_offset = pos;
          throw FormatError(
              "Expected a sequence id at the offset " + std::to_string(pos - start) + ", none was found.",
              where);
        }
      } else {
        key_text = std::to_string(line_number);
      }
      const bool continues =
          has_keys && !sequences_.empty() && (key_text.empty() || key_text == previous_key);
      if (continues) {
        ++sequences_.back().lines;
      } else {
        uint64_t id = 0;
        try {
          id = keys.id_of(key_text);
        } catch (const Error& e) {
          throw FormatError(e.cntk_text(), at_line(path, line_number));
        }
        const size_t bytes = next - pos;
        if (chunks_.empty() ||
            (chunk_bytes > 0 && chunk_bytes + bytes > common_->options.chunk_size_in_bytes)) {
          chunks_.push_back(ChunkRange{sequences_.size(), sequences_.size()});
          chunk_bytes = 0;
        }
        chunk_bytes += bytes;
        by_key_[id] = sequences_.size();
        sequences_.push_back(Sequence{pos, 1, id, line_number, static_cast<uint32_t>(chunks_.size() - 1)});
        chunks_.back().last = sequences_.size();
        previous_key = key_text;
      }
      pos = next;
    }
    file_->check_intact();
  }

  // Parses one sequence when its chunk is loaded (§4.3). Searches run on through the following lines, as in
  // CNTK (a blank line thus repeats the next line's image).
  Base64Chunk::Item parse(const Sequence& s, std::vector<unsigned char>& bytes) const {
    const std::string& path = common_->options.file;
    const char* data = file_->data();
    const char* end = data + file_->size();
    const std::string key = common_->keys->key_of(s.key);
    SourceLocation where = at_line(path, s.line);
    where.sequence_key = key;
    where.stream = common_->options.feature_stream;
    const char* p = data + s.offset;
    if (has_keys_) {
      const char* tab = std::find(p, end, '\t');
      if (tab == end) {
        throw FormatError("Empty label value for sequence '" + key + "' in the input file '" + path + "'",
                          where);
      }
      p = tab + 1;
    }
    uint64_t label = 0;
    const char* after_label = p;
    if (!parse_label(p, end, label, &after_label)) {
      throw FormatError(
          "Cannot parse label value for sequence '" + key + "' in the input file '" + path + "'", where);
    }
    if (label >= common_->options.label_dim) {
      throw FormatError("Image with id '" + key + "' has invalid class id '" + std::to_string(label) +
                            "'. It is exceeding the label dimension of '" +
                            std::to_string(common_->options.label_dim) + "'",
                        where);
    }
    const char* tab = std::find(after_label, end, '\t');
    if (tab == end) {
      throw FormatError("No data found for sequence '" + key + "' in the input file '" + path + "'", where);
    }
    const char* text = tab + 1;
    const char* newline = std::find(text, end, '\n');
    if (newline == end) throw FormatError("Empty image for sequence '" + key + "'", where);
    const char* text_end = newline;
    auto is_base64 = [](char c) {
      return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
             c == '/' || c == '=';
    };
    while (text_end > text && !is_base64(text_end[-1])) --text_end;

    Base64Chunk::Item item;
    item.label = static_cast<int32_t>(label);
    item.image.sources = common_->sources.get();
    item.image.line = s.line;
    if (!image::decode_base64(std::string_view(text, static_cast<size_t>(text_end - text)), bytes)) {
      common_->logger->log(core::LogLevel::kWarning, "WARNING: Cannot decode sequence with id " +
                                                         std::to_string(s.key) + " in the input file '" +
                                                         path + "'");
      item.valid = false;
      return item;
    }
    item.image.decoded =
        image::decode_image(bytes.data(), bytes.size(), common_->options.grayscale, false,
                            common_->sources->limits(), "The image of sequence '" + key + "'", where);
    if (item.image.decoded.empty()) {
      common_->logger->log(core::LogLevel::kWarning,
                           "WARNING: Could not decompress sequence with id '" + key + "'");
      item.valid = false;
    }
    return item;
  }

  std::shared_ptr<Common> common_;
  std::unique_ptr<core::MappedFile> file_;
  bool has_keys_ = false;
  std::vector<Sequence> sequences_;
  std::vector<ChunkRange> chunks_;
  std::unordered_map<uint64_t, size_t> by_key_;  // key -> sequence (the last one wins)
};

}  // namespace

std::shared_ptr<Deserializer> make_image_deserializer(const ImageOptions& options) {
  if (options.base64) return std::make_shared<Base64ImageDeserializer>(options);
  return std::make_shared<ImageMapDeserializer>(options);
}

}  // namespace cntkio
