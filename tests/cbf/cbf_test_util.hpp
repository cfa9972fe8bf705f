// Helpers of the CBF tests: temporary folders, byte buffers, and a value-exact snapshot of everything a
// deserializer delivers.
#pragma once

#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"

namespace cbf_test {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("cntkio_cbf_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Files are replaced by unlinking first: truncating a non-empty file makes ext4 flush it (auto_da_alloc),
  // which costs milliseconds per file.
  std::string write(const std::string& name, const std::string& content) const {
    const std::string p = file(name);
    fs::remove(p);
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
  std::string write(const std::string& name, const std::vector<unsigned char>& bytes) const {
    const std::string p = file(name);
    fs::remove(p);
    std::ofstream(p, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return p;
  }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

inline std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Little-endian byte builder for expected layouts.
struct Bytes {
  std::vector<unsigned char> data;
  template <typename T>
  Bytes& le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) {
      data.push_back(static_cast<unsigned char>(
          static_cast<uint64_t>(static_cast<std::make_unsigned_t<T>>(v)) >> (8 * i)));
    }
    return *this;
  }
  Bytes& u8(uint8_t v) {
    data.push_back(v);
    return *this;
  }
  Bytes& f32(float v) { return le(std::bit_cast<uint32_t>(v)); }
  Bytes& f64(double v) { return le(std::bit_cast<uint64_t>(v)); }
  Bytes& text(const std::string& s) {
    data.insert(data.end(), s.begin(), s.end());
    return *this;
  }
  size_t size() const { return data.size(); }
};

// SequenceData of a dense or a sparse stream (designated fields: the struct grows over time).
inline cntkio::SequenceData dense_data(uint32_t samples, const void* values) {
  cntkio::SequenceData d;
  d.number_of_samples = samples;
  d.values = values;
  return d;
}
inline cntkio::SequenceData sparse_data(uint32_t samples, const void* values, const int32_t* indices,
                                        const uint32_t* counts, size_t total_nnz) {
  cntkio::SequenceData d;
  d.number_of_samples = samples;
  d.values = values;
  d.indices = indices;
  d.nnz_counts = counts;
  d.total_nnz = total_nnz;
  return d;
}

// One stream of one sequence, with values as bit patterns (float widened to its 32 bits).
struct StreamSnapshot {
  uint32_t samples = 0;
  std::vector<uint64_t> bits;
  std::vector<int32_t> indices;
  std::vector<uint32_t> counts;
  bool operator==(const StreamSnapshot&) const = default;
};

struct SequenceSnapshot {
  uint64_t key = 0;
  uint32_t length = 0;  // scheduling length
  std::vector<StreamSnapshot> streams;
};

// Every sequence `d` delivers, in chunk and sequence order.
inline std::vector<SequenceSnapshot> snapshot(cntkio::Deserializer& d) {
  using namespace cntkio;
  std::vector<SequenceSnapshot> out;
  const std::vector<StreamInfo>& streams = d.streams();
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = d.load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(info.index_in_chunk, data);
      SequenceSnapshot seq;
      seq.key = info.key.sequence;
      seq.length = info.number_of_samples;
      for (size_t s = 0; s < streams.size(); ++s) {
        StreamSnapshot ss;
        const SequenceData& sd = data[s];
        ss.samples = sd.number_of_samples;
        const bool dense = streams[s].storage == StorageFormat::kDense;
        size_t n = sd.number_of_samples * streams[s].sample_dim();
        if (!dense) {
          n = 0;
          for (uint32_t k = 0; k < sd.number_of_samples; ++k) {
            ss.counts.push_back(sd.nnz_counts[k]);
            n += sd.nnz_counts[k];
          }
          ss.indices.assign(sd.indices, sd.indices + n);
        }
        for (size_t k = 0; k < n; ++k) {
          if (streams[s].element_type == ElementType::kFloat) {
            ss.bits.push_back(std::bit_cast<uint32_t>(static_cast<const float*>(sd.values)[k]));
          } else {
            ss.bits.push_back(std::bit_cast<uint64_t>(static_cast<const double*>(sd.values)[k]));
          }
        }
        seq.streams.push_back(std::move(ss));
      }
      out.push_back(std::move(seq));
    }
  }
  return out;
}

}  // namespace cbf_test
