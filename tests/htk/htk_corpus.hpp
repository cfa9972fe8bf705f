// A small generated HTK corpus for the HTK tests: SCP + feature files (one little-endian archive with filler
// frames between utterances, a big-endian file, compressed files in both byte orders, a file whose range
// starts after a few frames), an MLF with times in 100 ns units and a shuffled state list. Everything comes
// from a fixed seed, so every test sees the same bytes.
//
// Value 0 of every frame is the utterance number (1-based) and value 1 the frame index, so each output
// sample says which frame it is; the other values are random with three decimals.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/minibatch_source.hpp"

namespace htk_test {

namespace fs = std::filesystem;

class TempDir {
 public:
  explicit TempDir(const std::string& tag = "htk") {
    path_ = fs::temp_directory_path() /
            ("cntkio_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string write(const std::string& name, const std::string& content) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

/// One generated utterance and what a reader must deliver for it.
struct Utterance {
  std::string key;  ///< sequence key (logical name without extension)
  uint32_t frames = 0;
  std::vector<float> values;      ///< frames x dim, as decoded from the file (compressed: decoded values)
  std::vector<uint32_t> classes;  ///< class id per frame
  std::vector<bool> phone_start;  ///< first frame of a label line
};

struct CorpusSpec {
  size_t utterances = 24;
  size_t dim = 13;
  uint32_t seed = 13;
  uint32_t min_frames = 5;
  uint32_t max_frames = 60;
  size_t states = 12;
};

struct Corpus {
  std::string scp;
  std::string mlf;
  std::string states;
  size_t dim = 0;
  size_t num_states = 0;
  std::vector<Utterance> utterances;
  std::map<std::string, size_t> by_key;
  size_t total_frames() const {
    size_t n = 0;
    for (const Utterance& u : utterances) n += u.frames;
    return n;
  }
};

/// Reads back the frames of a compressed HTK file the way HTK defines the decoding (independently of
/// cntkio's reader): x = (v + B) / A per dimension, in float arithmetic.
inline std::vector<float> decode_compressed(const std::string& path, bool big_endian) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const auto b = static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]));
      v |= big_endian ? b << (8 * (3 - i)) : b << (8 * i);
    }
    return v;
  };
  auto u16 = [&](size_t at) {
    const auto b0 = static_cast<unsigned char>(bytes[at]);
    const auto b1 = static_cast<unsigned char>(bytes[at + 1]);
    return static_cast<uint16_t>(big_endian ? (b0 << 8) | b1 : (b1 << 8) | b0);
  };
  auto f32 = [&](size_t at) {
    const uint32_t bits = u32(at);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  };
  const uint32_t stored = u32(0);
  const size_t dim = u16(8) / 2;
  const size_t frames = stored - 4;
  std::vector<float> out(frames * dim);
  const size_t a = 12, b = 12 + 4 * dim, data = 12 + 8 * dim;
  for (size_t i = 0; i < frames * dim; ++i) {
    const auto v = static_cast<int16_t>(u16(data + 2 * i));
    out[i] = (static_cast<float>(v) + f32(b + 4 * (i % dim))) / f32(a + 4 * (i % dim));
  }
  return out;
}

inline std::string two_digits(size_t n) {
  return (n < 10 ? "0" : "") + std::to_string(n);
}

/// Generates the corpus into `dir`.
inline Corpus make_corpus(const TempDir& dir, const CorpusSpec& spec = {}) {
  std::mt19937 rng(spec.seed);
  Corpus c;
  c.dim = spec.dim;
  c.num_states = spec.states;
  std::vector<std::string> state_names;
  for (size_t s = 0; s < spec.states; ++s)
    state_names.push_back("st" + std::to_string(s) + "_s" + std::to_string(2 + s % 3));
  std::vector<std::string> shuffled = state_names;
  std::shuffle(shuffled.begin(), shuffled.end(), rng);
  std::map<std::string, uint32_t> class_of;
  std::string states_text;
  for (size_t i = 0; i < shuffled.size(); ++i) {
    class_of[shuffled[i]] = static_cast<uint32_t>(i);
    states_text += shuffled[i] + "\n";
  }
  c.states = dir.write("states.list", states_text);

  std::uniform_int_distribution<uint32_t> length(spec.min_frames, spec.max_frames);
  std::uniform_int_distribution<int> milli(-5000, 5000);
  std::vector<float> archive;  // little-endian archive, frames x dim
  std::ostringstream scp, mlf;
  mlf << "#!MLF!#\n";
  fs::create_directories(dir.path() / "feat");
  for (size_t u = 0; u < spec.utterances; ++u) {
    Utterance utt;
    utt.frames = length(rng);
    const std::string number = two_digits(u + 1);
    const std::string dir_part = u % 3 == 1 ? "spk2/" : u % 3 == 2 ? "spk3/sess.1/" : "";
    utt.key = dir_part + "u" + number;
    std::vector<float> values(static_cast<size_t>(utt.frames) * spec.dim);
    for (uint32_t t = 0; t < utt.frames; ++t) {
      for (size_t k = 0; k < spec.dim; ++k) {
        float v = static_cast<float>(milli(rng)) / 1000.0f;
        if (k == 0) v = static_cast<float>(u + 1);
        if (k == 1) v = static_cast<float>(t);
        values[t * spec.dim + k] = v;
      }
    }
    const std::string logical = utt.key + (u % 2 == 0 ? ".mfc" : ".fea");
    // File layout: utterance 2 big-endian, 5 compressed, 8 compressed big-endian, 11 after 3 foreign frames,
    // the rest back to back in the archive with 0-2 filler frames before each.
    if (u == 2 || u == 5 || u == 8) {
      cntkio::HtkWriteOptions w;
      w.kind = cntkio::HtkBaseKind::kMfcc;
      w.qualifiers = 0100 | 0400;  // _E_D
      w.big_endian = u != 5;
      w.compressed = u != 2;
      const std::string name =
          "feat/u" + number + (w.compressed ? "_c" : "") + (w.big_endian ? "_be" : "") + ".htk";
      cntkio::write_htk_file(dir.file(name), values.data(), utt.frames, spec.dim, w);
      if (w.compressed) values = decode_compressed(dir.file(name), w.big_endian);
      scp << logical << "=" << dir.file(name) << "[0," << utt.frames - 1 << "]\n";
    } else if (u == 11) {
      std::vector<float> padded(3 * spec.dim, 7.0f);
      padded.insert(padded.end(), values.begin(), values.end());
      cntkio::HtkWriteOptions w;
      w.kind = cntkio::HtkBaseKind::kMfcc;
      w.qualifiers = 0100 | 0400;
      cntkio::write_htk_file(dir.file("feat/u" + number + ".htk"), padded.data(), utt.frames + 3, spec.dim,
                             w);
      scp << logical << "=" << dir.file("feat/u" + number + ".htk") << "[3," << utt.frames + 2 << "]\n";
    } else {
      const size_t filler = rng() % 3;
      archive.insert(archive.end(), filler * spec.dim, -999.0f);
      const size_t first = archive.size() / spec.dim;
      archive.insert(archive.end(), values.begin(), values.end());
      scp << logical << "=" << dir.file("feat/archive.ark") << "[" << first << "," << first + utt.frames - 1
          << "]\n";
    }
    utt.values = std::move(values);

    // Labels: runs of 1-6 frames, times in 100 ns; the first line of every third run has HTK's extra columns.
    utt.classes.resize(utt.frames);
    utt.phone_start.assign(utt.frames, false);
    const std::string mlf_key = dir_part.empty() && u % 2 == 0 ? "*/u" + number + ".lab" : utt.key + ".rec";
    mlf << "\"" << mlf_key << "\"\n";
    uint32_t t = 0;
    size_t run = 0;
    while (t < utt.frames) {
      const uint32_t n = std::min<uint32_t>(1 + rng() % 6, utt.frames - t);
      const std::string& state = state_names[rng() % state_names.size()];
      for (uint32_t i = 0; i < n; ++i) utt.classes[t + i] = class_of[state];
      utt.phone_start[t] = true;
      mlf << static_cast<uint64_t>(t) * 100000 << " " << static_cast<uint64_t>(t + n) * 100000 << " "
          << state;
      if (run++ % 3 == 0) mlf << " -" << (rng() % 9000) / 100.0 << " ph" << (run % 5);
      mlf << "\n";
      t += n;
    }
    mlf << ".\n";
    c.by_key[utt.key] = c.utterances.size();
    c.utterances.push_back(std::move(utt));
  }
  // A label entry without features, and an SCP entry without labels (both must be ignored).
  mlf << "\"*/ghost.lab\"\n0 300000 " << state_names[0] << "\n.\n";
  {
    const size_t first = archive.size() / spec.dim;
    archive.insert(archive.end(), 4 * spec.dim, 0.5f);
    scp << "orphan.mfc=" << dir.file("feat/archive.ark") << "[" << first << "," << first + 3 << "]\n";
  }
  cntkio::HtkWriteOptions w;
  w.kind = cntkio::HtkBaseKind::kMfcc;
  w.qualifiers = 0100 | 0400;
  cntkio::write_htk_file(dir.file("feat/archive.ark"), archive.data(), archive.size() / spec.dim, spec.dim,
                         w);
  c.scp = dir.write("feats.scp", scp.str());
  c.mlf = dir.write("labels.mlf", mlf.str());
  return c;
}

/// A composite reader section over `corpus` (features + labels).
inline std::string composite_reader(const Corpus& c, const std::string& reader_settings,
                                    const std::string& feature_settings = "",
                                    const std::string& label_settings = "") {
  return "reader = [\n" + reader_settings +
         "\ndeserializers = (\n[ type = \"HTKFeatureDeserializer\"\n input = [ features = [ dim = " +
         std::to_string(c.dim) + "\n scpFile = \"" + c.scp + "\"\n" + feature_settings +
         " ] ] ]:\n[ type = \"HTKMLFDeserializer\"\n input = [ labels = [ mlfFile = \"" + c.mlf +
         "\"\n labelMappingFile = \"" + c.states + "\"\n labelDim = " + std::to_string(c.num_states) + "\n" +
         label_settings + " ] ] ]\n)\n]\n";
}

inline std::unique_ptr<cntkio::MinibatchSource> open_reader(const std::string& text) {
  return cntkio::MinibatchSource::from_config(cntkio::Config::from_text(text).get_block("reader"));
}

/// One delivered sequence: its key, feature samples and label classes (value per label column).
struct Delivered {
  std::string key;
  std::vector<std::vector<double>> features;  // per sample
  std::vector<int> classes;                   // per label sample
  std::vector<double> label_values;           // the non-zero value per label sample
};

/// Turns one minibatch into its sequences (by layout entries of stream 0; labels from stream 1 if any).
inline std::vector<Delivered> sequences_of(const cntkio::Minibatch& mb) {
  std::vector<Delivered> out;
  const cntkio::StreamBatch& f = mb.streams[0];
  const size_t dim = f.info.sample_dim();
  for (const cntkio::Layout::Entry& e : f.layout.entries) {
    if (e.is_gap) continue;
    Delivered d;
    d.key = mb.keys[e.sequence_index];
    const auto begin = std::max<ptrdiff_t>(e.t_begin, 0);
    const auto end = std::min<ptrdiff_t>(e.t_end, static_cast<ptrdiff_t>(f.layout.num_time_steps));
    for (ptrdiff_t t = begin; t < end; ++t) {
      const size_t col = static_cast<size_t>(t) * f.layout.num_parallel + e.row;
      std::vector<double> sample(dim);
      for (size_t k = 0; k < dim; ++k) sample[k] = f.value_at(k, col);
      d.features.push_back(std::move(sample));
    }
    if (mb.streams.size() > 1) {
      const cntkio::StreamBatch& l = mb.streams[1];
      for (const cntkio::Layout::Entry& le : l.layout.entries) {
        if (le.is_gap || le.sequence_index != e.sequence_index) continue;
        const auto lb = std::max<ptrdiff_t>(le.t_begin, 0);
        const auto lend = std::min<ptrdiff_t>(le.t_end, static_cast<ptrdiff_t>(l.layout.num_time_steps));
        for (ptrdiff_t t = lb; t < lend; ++t) {
          const size_t col = static_cast<size_t>(t) * l.layout.num_parallel + le.row;
          int cls = -1;
          double value = 0;
          if (l.info.storage == cntkio::StorageFormat::kSparseCsc) {
            for (int32_t k = l.col_starts[col]; k < l.col_starts[col + 1]; ++k) {
              cls = l.row_indices[static_cast<size_t>(k)];
              value = l.value_at(static_cast<size_t>(cls), col);
            }
          } else {
            for (size_t r = 0; r < l.info.sample_dim(); ++r) {
              if (l.value_at(r, col) != 0) {
                cls = static_cast<int>(r);
                value = l.value_at(r, col);
              }
            }
          }
          d.classes.push_back(cls);
          d.label_values.push_back(value);
        }
      }
    }
    out.push_back(std::move(d));
  }
  return out;
}

/// Every sequence of epoch `epoch` (size in samples, or kFullSweep) for worker `rank` of `workers`.
inline std::vector<Delivered> read_epoch(cntkio::MinibatchSource& source, size_t mb_size, size_t epoch,
                                         size_t epoch_size, size_t rank = 0, size_t workers = 1) {
  source.start_epoch(mb_size, epoch, epoch_size, rank, workers);
  std::vector<Delivered> out;
  cntkio::Minibatch mb;
  while (source.next_minibatch(mb)) {
    for (Delivered& d : sequences_of(mb)) out.push_back(std::move(d));
  }
  return out;
}

}  // namespace htk_test
