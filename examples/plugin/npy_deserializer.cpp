#include "npy_deserializer.hpp"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

#include "npy_file.hpp"

namespace cntkio_npy {
namespace {

// The values of the sequences of one chunk, as the reader's element type T.
template <class T>
class NpyChunk final : public cntkio::Chunk {
 public:
  void add(std::vector<T> values, uint32_t samples) {
    values_.push_back(std::move(values));
    samples_.push_back(samples);
  }
  void get_sequence(uint32_t index_in_chunk, std::vector<cntkio::SequenceData>& out) const override {
    cntkio::SequenceData data;
    data.number_of_samples = samples_.at(index_in_chunk);
    data.values = values_.at(index_in_chunk).data();
    out.push_back(data);
  }

 private:
  std::vector<std::vector<T>> values_;
  std::vector<uint32_t> samples_;
};

// The files of the folder that end in ".npy", sorted by name.
std::vector<std::string> npy_files_of(const std::string& folder) {
  std::error_code error;
  std::filesystem::directory_iterator it(folder, error);
  if (error) throw cntkio::IoError("cannot list the .npy folder", folder, error.value());
  std::vector<std::string> files;
  for (const std::filesystem::directory_entry& entry : it) {
    if (entry.path().extension() == ".npy" && entry.is_regular_file(error))
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class NpyDeserializer final : public cntkio::Deserializer {
 public:
  NpyDeserializer(const NpyOptions& options, const cntkio::DeserializerContext& context)
      : keys_(context.keys), files_per_chunk_(options.files_per_chunk) {
    if (options.dim == 0)
      throw cntkio::ConfigError("The dim of an NpySequenceDeserializer's stream must be at least 1.", "dim");
    if (files_per_chunk_ == 0)
      throw cntkio::ConfigError("filesPerChunk must be at least 1.", "filesPerChunk");
    if (!keys_) keys_ = std::make_shared<cntkio::KeyTable>(cntkio::KeyMode::kString);
    cntkio::StreamInfo stream;
    stream.name = options.stream;
    stream.element_type = context.element_type;
    stream.sample_shape = {options.dim};
    stream.defines_mb_size = true;
    streams_.push_back(stream);

    const std::vector<std::string> paths =
        options.files.empty() ? npy_files_of(options.folder) : options.files;
    if (paths.empty()) {
      throw cntkio::ConfigError("An NpySequenceDeserializer needs at least one .npy file; the folder '" +
                                    options.folder + "' holds none.",
                                "folder");
    }
    for (const std::string& path : paths) {
      File file{path, 0, read_npy_header(path)};
      if (file.header.columns != options.dim) {
        cntkio::SourceLocation where;
        where.file = path;
        throw cntkio::FormatError("The .npy file holds samples of " + std::to_string(file.header.columns) +
                                      " values; the stream '" + options.stream + "' has dim " +
                                      std::to_string(options.dim) + ".",
                                  where);
      }
      try {
        file.key = keys_->id_of(std::filesystem::path(path).stem().string());
      } catch (const cntkio::FormatError& e) {  // numeric keys: the name is no number
        cntkio::SourceLocation where;
        where.file = path;
        throw cntkio::FormatError(e.cntk_text(), where);
      }
      const auto [at, added] = by_key_.emplace(file.key, static_cast<uint32_t>(files_.size()));
      if (!added) {
        cntkio::SourceLocation where;
        where.file = path;
        throw cntkio::FormatError("Two .npy files have the key '" + keys_->key_of(file.key) +
                                      "' (the other is '" + files_[at->second].path + "').",
                                  where);
      }
      files_.push_back(std::move(file));
    }
  }

  const std::vector<cntkio::StreamInfo>& streams() const override { return streams_; }

  std::vector<cntkio::ChunkInfo> chunk_infos() const override {
    std::vector<cntkio::ChunkInfo> chunks;
    for (size_t first = 0; first < files_.size(); first += files_per_chunk_) {
      cntkio::ChunkInfo chunk;
      chunk.id = static_cast<uint32_t>(chunks.size());
      for (size_t i = first; i < std::min(files_.size(), first + files_per_chunk_); ++i) {
        chunk.number_of_samples += files_[i].header.rows;
        ++chunk.number_of_sequences;
      }
      chunks.push_back(chunk);
    }
    return chunks;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<cntkio::SequenceInfo>& out) const override {
    const size_t first = static_cast<size_t>(chunk_id) * files_per_chunk_;
    for (size_t i = first; i < std::min(files_.size(), first + files_per_chunk_); ++i)
      out.push_back(info_of(i));
  }

  std::optional<cntkio::SequenceInfo> sequence_info_by_key(const cntkio::SequenceKey& key) const override {
    const auto it = by_key_.find(key.sequence);
    if (it == by_key_.end()) return std::nullopt;
    return info_of(it->second);
  }

  cntkio::ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (streams_[0].element_type == cntkio::ElementType::kDouble) return load<double>(chunk_id);
    return load<float>(chunk_id);
  }

  std::string key_to_string(const cntkio::SequenceKey& key) const override {
    return keys_->key_of(key.sequence);
  }

  cntkio::SourceLocation sequence_location(const cntkio::SequenceKey& key) const override {
    cntkio::SourceLocation where;
    const auto it = by_key_.find(key.sequence);
    if (it != by_key_.end()) where.file = files_[it->second].path;
    return where;
  }

 private:
  struct File {
    std::string path;
    uint64_t key = 0;
    NpyHeader header;
  };

  cntkio::SequenceInfo info_of(size_t index) const {
    cntkio::SequenceInfo info;
    info.chunk_id = static_cast<uint32_t>(index / files_per_chunk_);
    info.index_in_chunk = static_cast<uint32_t>(index % files_per_chunk_);
    info.number_of_samples = static_cast<uint32_t>(files_[index].header.rows);
    info.key.sequence = files_[index].key;
    return info;
  }

  template <class T>
  cntkio::ChunkPtr load(uint32_t chunk_id) const {
    auto chunk = std::make_shared<NpyChunk<T>>();
    const size_t first = static_cast<size_t>(chunk_id) * files_per_chunk_;
    for (size_t i = first; i < std::min(files_.size(), first + files_per_chunk_); ++i) {
      chunk->add(read_npy_values<T>(files_[i].path, files_[i].header),
                 static_cast<uint32_t>(files_[i].header.rows));
    }
    return chunk;
  }

  cntkio::KeyTablePtr keys_;
  size_t files_per_chunk_;
  std::vector<cntkio::StreamInfo> streams_;
  std::vector<File> files_;
  std::unordered_map<uint64_t, uint32_t> by_key_;
};

}  // namespace

std::shared_ptr<cntkio::Deserializer> make_npy_deserializer(const NpyOptions& options,
                                                            const cntkio::DeserializerContext& context) {
  return std::make_shared<NpyDeserializer>(options, context);
}

}  // namespace cntkio_npy
