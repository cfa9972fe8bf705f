// The CBF deserializer (spec cbf.md §1.2–§1.5, legacy §3.2) and its config (§1.3).
#include <algorithm>
#include <map>
#include <mutex>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"
#include "config/data_files.hpp"
#include "core/logger.hpp"
#include "core/mapped_file.hpp"
#include "formats/cbf/cbf_chunk.hpp"
#include "formats/cbf/cbf_format.hpp"

namespace cntkio {
namespace {

class CbfDeserializer final : public Deserializer {
 public:
  explicit CbfDeserializer(const CbfOptions& options)
      : options_(options), logger_(options.trace_level, core::sink_from_options(options.log_sink)) {
    if (options_.file.empty()) throw ConfigError("The CBF deserializer needs a 'file'.", "file");
    mapping_ = std::make_shared<core::MappedFile>(options_.file);
    try {
      header_ = cbf::parse_header(options_.file, mapping_->view());
    } catch (const Error&) {
      mapping_->check_intact();  // zeros of a cut file or of a block a remote fetch lost: not the format
      throw;
    }
    mapping_->check_intact();
    context_.file = &options_.file;
    context_.mapping = mapping_;
    context_.header = &header_;
    build_streams();
    uint64_t first = 0;
    for (uint32_t i = 0; i < header_.chunks.size(); ++i) {
      // A chunk without sequences would break the randomizers (CNTK indexes past the end); it holds no data
      // (the header check saw to that for the current layout; a legacy one is parsed to be sure), so it is
      // simply not exposed.
      if (header_.chunks[i].sequences > 0) {
        chunks_.push_back(i);
        first_sequence_.push_back(first);
      } else if (header_.layout == CbfLayout::kLegacyV1) {
        std::vector<uint32_t> none;
        cbf::parse_legacy_chunk(context_, i, first, none);
      }
      first += header_.chunks[i].sequences;
    }
    if (chunks_.empty()) {
      SourceLocation where;
      where.file = options_.file;
      throw FormatError("The input file holds no sequence.", where);
    }
    if (options_.keep_data_in_memory) kept_.resize(chunks_.size());
    if (header_.layout == CbfLayout::kLegacyV1) legacy_lengths_.resize(chunks_.size());
    if (options_.trace_level > 2) {
      logger_.always(core::LogLevel::kInfo, "CNTKBinaryReader: file '" + options_.file + "' (" +
                                                to_string(header_.layout) + "), " +
                                                std::to_string(header_.streams.size()) + " input(s), " +
                                                std::to_string(chunks_.size()) + " chunk(s), " +
                                                std::to_string(header_.total_sequences()) + " sequences, " +
                                                std::to_string(header_.total_samples()) + " samples.");
    }
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    out.reserve(chunks_.size());
    for (uint32_t k = 0; k < chunks_.size(); ++k) {
      const CbfChunkHeader& c = header_.chunks[chunks_[k]];
      out.push_back(ChunkInfo{k, c.samples, c.sequences});
    }
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    check_chunk(chunk_id);
    std::vector<uint32_t> lengths;
    lengths_of(chunk_id, lengths);
    for (uint32_t j = 0; j < lengths.size(); ++j) {
      out.push_back(SequenceInfo{j, lengths[j], chunk_id, SequenceKey{first_sequence_[chunk_id] + j, 0}});
    }
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    auto it = std::upper_bound(first_sequence_.begin(), first_sequence_.end(), key.sequence);
    if (it == first_sequence_.begin()) return std::nullopt;
    const auto chunk_id = static_cast<uint32_t>(it - first_sequence_.begin() - 1);
    const uint64_t index = key.sequence - first_sequence_[chunk_id];
    if (index >= header_.chunks[chunks_[chunk_id]].sequences) return std::nullopt;
    std::vector<uint32_t> lengths;
    lengths_of(chunk_id, lengths);
    return SequenceInfo{static_cast<uint32_t>(index), lengths[index], chunk_id, SequenceKey{key.sequence, 0}};
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    check_chunk(chunk_id);
    if (options_.keep_data_in_memory) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (kept_[chunk_id]) return kept_[chunk_id];
    }
    ChunkPtr loaded;
    // A file cut since it was opened fails here, before the mapping is read past its new end; one cut while
    // the chunk is parsed or its values copied reads zeros there, which the checks after refuse.
    const CbfChunkHeader& chunk = header_.chunks[chunks_[chunk_id]];
    mapping_->check_covers(chunk.offset + chunk.size);
    mapping_->will_need(chunk.offset, chunk.size);
    try {
      if (header_.layout == CbfLayout::kCurrent) {
        loaded = cbf::parse_current_chunk(context_, chunks_[chunk_id], first_sequence_[chunk_id]);
      } else {
        auto lengths = std::make_shared<std::vector<uint32_t>>();
        loaded = cbf::parse_legacy_chunk(context_, chunks_[chunk_id], first_sequence_[chunk_id], *lengths);
        std::lock_guard<std::mutex> lock(mutex_);
        if (!legacy_lengths_[chunk_id]) legacy_lengths_[chunk_id] = std::move(lengths);
      }
    } catch (const Error&) {
      mapping_->check_intact();  // zeros read past a new end are no format error: say the file was cut
      throw;
    }
    mapping_->check_intact();
    if (options_.keep_data_in_memory) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!kept_[chunk_id]) kept_[chunk_id] = loaded;
      return kept_[chunk_id];
    }
    return loaded;
  }

  // The sequence's entry in its chunk's length prefix (current layout) or its chunk's first byte (legacy).
  SourceLocation sequence_location(const SequenceKey& key) const override {
    auto it = std::upper_bound(first_sequence_.begin(), first_sequence_.end(), key.sequence);
    if (it == first_sequence_.begin()) return {};
    const auto chunk_id = static_cast<size_t>(it - first_sequence_.begin() - 1);
    const CbfChunkHeader& chunk = header_.chunks[chunks_[chunk_id]];
    const uint64_t index = key.sequence - first_sequence_[chunk_id];
    if (index >= chunk.sequences) return {};
    SourceLocation where;
    where.file = options_.file;
    where.byte_offset = chunk.offset + (header_.layout == CbfLayout::kCurrent ? 4 * index : 0);
    where.sequence_key = key_to_string(key);
    return where;
  }

  std::vector<std::string> describe() const override {
    uint64_t sequences = 0;
    uint64_t samples = 0;
    for (const CbfChunkHeader& c : header_.chunks) {
      sequences += c.sequences;
      samples += c.samples;
    }
    std::string streams;
    for (const CbfStreamHeader& s : header_.streams) streams += (streams.empty() ? "" : ", ") + s.name;
    return {"CBF file " + options_.file + ": " + std::to_string(header_.file_size) + " bytes, " +
            to_string(header_.layout) + " layout, " + std::to_string(sequences) + " sequences, " +
            std::to_string(samples) + " samples, " + std::to_string(header_.chunks.size()) +
            " chunk(s), streams " + streams};
  }

  // Chunks hand out views into the mapping, which the packer copies later.
  void check_inputs_intact() const override { mapping_->check_intact(); }
  std::vector<InputFileVersion> input_files() const override {
    return {{mapping_->path(), mapping_->identity()}};
  }

  const CbfHeader& header() const { return header_; }

 private:
  void check_chunk(uint32_t chunk_id) const {
    if (chunk_id >= chunks_.size()) {
      throw UsageError("CBF file '" + options_.file + "' has " + std::to_string(chunks_.size()) +
                       " chunks; chunk " + std::to_string(chunk_id) + " does not exist.");
    }
  }

  // Scheduling lengths of the sequences of exposed chunk `chunk_id`.
  void lengths_of(uint32_t chunk_id, std::vector<uint32_t>& lengths) const {
    const uint32_t index = chunks_[chunk_id];
    if (header_.layout == CbfLayout::kCurrent) {
      try {
        cbf::read_current_lengths(context_, index, first_sequence_[chunk_id], lengths);
      } catch (const Error&) {
        mapping_->check_intact();
        throw;
      }
      mapping_->check_intact();
      return;
    }
    // Legacy files store no lengths: the sparse row indices decide them, so the chunk is parsed once.
    std::shared_ptr<const std::vector<uint32_t>> known;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      known = legacy_lengths_[chunk_id];
    }
    if (!known) {
      auto computed = std::make_shared<std::vector<uint32_t>>();
      cbf::parse_legacy_chunk(context_, index, first_sequence_[chunk_id], *computed);
      std::lock_guard<std::mutex> lock(mutex_);
      if (!legacy_lengths_[chunk_id]) legacy_lengths_[chunk_id] = std::move(computed);
      known = legacy_lengths_[chunk_id];
    }
    lengths = *known;
  }

  void build_streams() {
    std::map<std::string, std::string> exposed;  // name in the file -> exposed name; later entries win
    for (const auto& [in_file, name] : options_.renames) exposed[in_file] = name;
    for (size_t i = 0; i < header_.streams.size(); ++i) {
      const CbfStreamHeader& h = header_.streams[i];
      if (options_.element_type && *options_.element_type != h.element_type) {
        // CNTK's text numbers the stored type 0 = float, 1 = double and the precision as its DataType
        // (1 = Float, 2 = Double).
        auto number = [](ElementType type, int float_number) {
          return std::to_string(type == ElementType::kFloat ? float_number : float_number + 1);
        };
        SourceLocation where;
        where.file = options_.file;
        where.byte_offset = h.type_offset;
        where.stream = h.name;
        throw FormatError("Unsupported combination of the input data type " + number(h.element_type, 0) +
                              " and precision " + number(*options_.element_type, 1) +
                              ". At the moment, both have to match.",
                          std::move(where),
                          std::string("(the input stores ") + to_string(h.element_type) +
                              " values and precision is " + to_string(*options_.element_type) +
                              ": set precision = \"" + to_string(h.element_type) +
                              "\", or convert the file with cntkio convert --precision " +
                              to_string(*options_.element_type) + ")");
      }
      StreamInfo s;
      s.id = static_cast<uint32_t>(i);
      auto it = exposed.find(h.name);
      s.name = it == exposed.end() ? h.name : it->second;
      s.alias = h.name;
      s.storage = h.storage;
      s.element_type = h.element_type;
      s.sample_shape = {static_cast<size_t>(h.dim)};
      streams_.push_back(std::move(s));
    }
  }

  CbfOptions options_;
  core::Logger logger_;
  std::shared_ptr<core::MappedFile> mapping_;
  CbfHeader header_;
  cbf::ChunkContext context_;
  std::vector<StreamInfo> streams_;
  std::vector<uint32_t> chunks_;          // exposed chunk id -> index into header_.chunks
  std::vector<uint64_t> first_sequence_;  // exposed chunk id -> global index of its first sequence
  mutable std::mutex mutex_;
  std::vector<ChunkPtr> kept_;
  mutable std::vector<std::shared_ptr<const std::vector<uint32_t>>> legacy_lengths_;
};

}  // namespace

CbfOptions cbf_options_from_config(const Config& section) {
  CbfOptions options;
  config_detail::data_files_from_config(section, options.file, options.more_files, options.file_list);
  if (section.exists_current("input")) {
    Config input = section.get_block("input");
    for (const std::string& name : input.keys()) {  // CNTK iterates in case-insensitive name order
      Config stream = input.get_block(name);
      options.renames.emplace_back(stream.exists_current("alias") ? stream.get_string("alias") : name, name);
    }
  }
  const std::string precision = section.get_string("precision", "float");
  if (precision == "float") {
    options.element_type = ElementType::kFloat;
  } else if (precision == "double") {
    options.element_type = ElementType::kDouble;
  } else {
    throw section.error("precision", "precision is '" + precision + "'; expected 'float' or 'double'.");
  }
  options.keep_data_in_memory = section.get_bool("keepDataInMemory", false);
  options.trace_level = static_cast<int>(section.get_uint("traceLevel", 1));
  return options;
}

std::shared_ptr<Deserializer> make_cbf_deserializer(const CbfOptions& options) {
  // One file: a corpus (more_files, file_list) is joined by a reader built from a spec
  // (MinibatchSource::create).
  if (!options.more_files.empty() || !options.file_list.empty()) {
    throw UsageError(
        "make_cbf_deserializer reads one file; more_files and file_list make a corpus, which a reader "
        "built from a ReaderSpec (MinibatchSource::create) reads.");
  }
  return std::make_shared<CbfDeserializer>(options);
}

const CbfHeader& cbf_header(const Deserializer& deserializer) {
  const auto* cbf = dynamic_cast<const CbfDeserializer*>(&deserializer);
  if (cbf == nullptr) throw UsageError("cbf_header: not a CBF deserializer");
  return cbf->header();
}

}  // namespace cntkio
