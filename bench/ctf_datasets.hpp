// The generated CTF datasets of the benchmarks (ctf_throughput, cbf_throughput): the same files, byte for
// byte, for the same name and scale (fixed seeds, std::mt19937_64). See bench/README.md for their content.
#pragma once

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/ctf.hpp"

namespace bench {

// Buffered file writer with the few formatting primitives the generators need.
class TextWriter {
 public:
  explicit TextWriter(const std::string& path)
      : path_(path), file_(std::fopen(path.c_str(), "wb")), buffer_(kSize) {
    if (file_ == nullptr) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  }
  ~TextWriter() {
    if (file_ != nullptr) std::fclose(file_);
  }
  TextWriter(const TextWriter&) = delete;
  TextWriter& operator=(const TextWriter&) = delete;

  void put(char c) {
    reserve(1);
    buffer_[used_++] = c;
  }
  void put(std::string_view s) {
    reserve(s.size());
    std::memcpy(buffer_.data() + used_, s.data(), s.size());
    used_ += s.size();
  }
  void put_uint(uint64_t v) {
    reserve(20);
    char* p = buffer_.data() + used_;
    used_ += static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - p);
  }
  // `micros` in [0, 1e6) written as 0.dddddd (6 decimals, like "%.6f" of micros / 1e6).
  void put_fraction6(uint32_t micros) {
    reserve(8);
    char* p = buffer_.data() + used_;
    p[0] = '0';
    p[1] = '.';
    for (int i = 7; i >= 2; --i) {
      p[i] = static_cast<char>('0' + micros % 10);
      micros /= 10;
    }
    used_ += 8;
  }
  void close() {
    flush();
    if (std::fclose(file_) != 0) {
      file_ = nullptr;
      throw std::runtime_error("cannot write " + path_);
    }
    file_ = nullptr;
  }

 private:
  static constexpr size_t kSize = 4 << 20;
  void reserve(size_t n) {
    if (used_ + n > buffer_.size()) flush();
  }
  void flush() {
    if (used_ > 0 && std::fwrite(buffer_.data(), 1, used_, file_) != used_) {
      throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
    }
    used_ = 0;
  }

  std::string path_;
  std::FILE* file_;
  std::vector<char> buffer_;
  size_t used_ = 0;
};

// (a) N lines `|features v1 ... v784 |labels <one-hot of 10>`, values 0.dddddd.
inline void generate_dense(const std::string& path, uint64_t lines) {
  std::mt19937_64 rng(20240601);
  TextWriter w(path);
  for (uint64_t i = 0; i < lines; ++i) {
    w.put("|features");
    for (int k = 0; k < 784; ++k) {
      w.put(' ');
      w.put_fraction6(static_cast<uint32_t>(rng() % 1000000));
    }
    w.put(" |labels");
    const uint64_t hot = rng() % 10;
    for (uint64_t k = 0; k < 10; ++k) w.put(k == hot ? " 1" : " 0");
    w.put('\n');
  }
  w.close();
}

// (b) N lines `|x i:v ...` (50 sorted distinct indices below 1,000,000) `|y k:1` (k below 1000).
inline void generate_sparse(const std::string& path, uint64_t lines) {
  std::mt19937_64 rng(20240602);
  TextWriter w(path);
  std::array<uint32_t, 50> indices{};
  for (uint64_t i = 0; i < lines; ++i) {
    bool distinct = false;
    while (!distinct) {
      for (auto& index : indices) index = static_cast<uint32_t>(rng() % 1000000);
      std::sort(indices.begin(), indices.end());
      distinct = std::adjacent_find(indices.begin(), indices.end()) == indices.end();
    }
    w.put("|x");
    for (uint32_t index : indices) {
      w.put(' ');
      w.put_uint(index);
      w.put(':');
      w.put_fraction6(static_cast<uint32_t>(rng() % 1000000));
    }
    w.put(" |y ");
    w.put_uint(rng() % 1000);
    w.put(":1\n");
  }
  w.close();
}

// (c) N sequences with ids, 5-50 lines each: `id |a i:1 |b j:1` (i below 50,000, j below 1000).
inline void generate_sequences(const std::string& path, uint64_t sequences) {
  std::mt19937_64 rng(20240603);
  TextWriter w(path);
  for (uint64_t id = 0; id < sequences; ++id) {
    const uint64_t length = 5 + rng() % 46;
    for (uint64_t l = 0; l < length; ++l) {
      w.put_uint(id);
      w.put(" |a ");
      w.put_uint(rng() % 50000);
      w.put(":1 |b ");
      w.put_uint(rng() % 1000);
      w.put(":1\n");
    }
  }
  w.close();
}

inline cntkio::CtfStreamOptions stream(const std::string& name, size_t dim, cntkio::StorageFormat storage) {
  cntkio::CtfStreamOptions s;
  s.name = name;
  s.dim = dim;
  s.storage = storage;
  return s;
}

inline uint64_t scaled(double base, double scale) {
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(base * scale)));
}

// One of the datasets "dense", "sparse", "sequences" at a scale: how many lines or sequences, the streams,
// the generator and the file name (`<name>_<count>.ctf`).
struct CtfDatasetSpec {
  std::string name;
  uint64_t count = 0;  // lines (dense, sparse) or sequences; equals the number of sequences in each case
  std::vector<cntkio::CtfStreamOptions> streams;
  void (*generate)(const std::string&, uint64_t) = nullptr;
  std::string file_name() const { return name + "_" + std::to_string(count) + ".ctf"; }
};

inline CtfDatasetSpec ctf_dataset_spec(const std::string& name, double scale) {
  using cntkio::StorageFormat;
  CtfDatasetSpec d;
  d.name = name;
  if (name == "dense") {
    d.count = scaled(20000, scale);
    d.streams = {stream("features", 784, StorageFormat::kDense), stream("labels", 10, StorageFormat::kDense)};
    d.generate = generate_dense;
  } else if (name == "sparse") {
    d.count = scaled(200000, scale);
    d.streams = {stream("x", 1000000, StorageFormat::kSparseCsc),
                 stream("y", 1000, StorageFormat::kSparseCsc)};
    d.generate = generate_sparse;
  } else if (name == "sequences") {
    d.count = scaled(100000, scale);
    d.streams = {stream("a", 50000, StorageFormat::kSparseCsc), stream("b", 1000, StorageFormat::kSparseCsc)};
    d.generate = generate_sequences;
  } else {
    throw std::invalid_argument("unknown dataset " + name);
  }
  return d;
}

}  // namespace bench
