#include "formats/htk/htk_file.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "core/output_path.hpp"

namespace cntkio::htk {
namespace {

// HTK parameter kind qualifier bits (octal, as in HTK's documentation).
constexpr uint16_t kQualE = 0100;
constexpr uint16_t kQualN = 0200;
constexpr uint16_t kQualD = 0400;
constexpr uint16_t kQualA = 01000;
constexpr uint16_t kQualC = 02000;
constexpr uint16_t kQualZ = 04000;
constexpr uint16_t kQualK = 010000;
constexpr uint16_t kQual0 = 020000;
constexpr uint16_t kQualV = 040000;
constexpr uint16_t kQualT = 0100000;
constexpr uint16_t kFestream = 12;
constexpr size_t kHeaderBytes = 12;
constexpr size_t kGuidBytes = 16;

uint32_t swap32(uint32_t v) {
  return ((v & 0xFFu) << 24) | ((v & 0xFF00u) << 8) | ((v >> 8) & 0xFF00u) | (v >> 24);
}
uint16_t swap16(uint16_t v) {
  return static_cast<uint16_t>((v << 8) | (v >> 8));
}

uint32_t load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint16_t load16(const unsigned char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

SourceLocation at(const std::string& path, uint64_t offset) {
  SourceLocation where;
  where.file = path;
  where.byte_offset = offset;
  return where;
}

void read_floats(const PositionedFile& file, uint64_t offset, size_t count, bool swap,
                 std::vector<float>& out) {
  std::vector<uint32_t> raw(count);
  if (!file.read_at(offset, raw.data(), count * 4)) {
    throw FormatError("HTK file ends inside its compression vectors.", at(file.path(), offset));
  }
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint32_t bits = swap ? swap32(raw[i]) : raw[i];
    std::memcpy(&out[i], &bits, 4);
  }
}

// The frames [first, first + count) are not all in the file.
FormatError short_file_error(const PositionedFile& file, const HtkHeader& header, uint64_t first,
                             uint64_t count) {
  return FormatError("HTK file '" + file.path() + "' ends before frame " + std::to_string(first + count) +
                         " (its header declares " + std::to_string(header.num_frames) +
                         " frames, the file has " + std::to_string(file.size()) + " bytes).",
                     at(file.path(), header.data_offset + first * header.sample_size));
}

}  // namespace

PositionedFile::PositionedFile(const std::string& path)
    : file_(core::InputFile::open(path, "error opening file")) {}

bool PositionedFile::read_at(uint64_t offset, void* out, size_t bytes) const {
  // Bytes the file held when it was opened and no longer gives: it was cut under the reader (or the read
  // fell short), an IoError naming the range, not a malformed file.
  if (offset + bytes <= file_.size()) {
    file_.read_exact_at(offset, out, bytes);
    return true;
  }
  return file_.read_at(offset, out, bytes) == bytes;
}

HtkHeader read_header(const PositionedFile& file) {
  unsigned char raw[kHeaderBytes];
  if (!file.read_at(0, raw, kHeaderBytes)) {
    throw FormatError("HTK file is shorter than its 12-byte header.", at(file.path(), 0));
  }
  HtkHeader h;
  uint32_t n_samples = load32(raw);
  uint32_t period = load32(raw + 4);
  uint16_t samp_size = load16(raw + 8);
  uint16_t parm_kind = load16(raw + 10);
  // CNTK's heuristic: a sample period whose byte reversal is smaller was written big-endian.
  h.big_endian = swap32(period) < period;
  if (h.big_endian) {
    n_samples = swap32(n_samples);
    period = swap32(period);
    samp_size = swap16(samp_size);
    parm_kind = swap16(parm_kind);
  }
  h.sample_period = period;
  h.sample_size = samp_size;
  h.parm_kind = parm_kind;

  switch (parm_kind & 0x3F) {
    case 11:
      h.kind = "PLP";
      break;
    case 6:
      h.kind = "MFCC";
      break;
    case 7:
      h.kind = "FBANK";
      break;
    case 9:
      h.kind = "USER";
      break;
    case kFestream:
      h.kind = "USER";
      break;  // FESTREAM is reported as USER
    default:
      throw FormatError("htkfeatreader:unsupported feature kind", at(file.path(), 10));
  }
  if (parm_kind & kQualV) throw FormatError("htkfeatreader:we do not support VQ", at(file.path(), 10));
  // Qualifier order of CNTK's kind string.
  if (parm_kind & kQualE) h.kind += "_E";
  if (parm_kind & kQualD) h.kind += "_D";
  if (parm_kind & kQualN) h.kind += "_N";
  if (parm_kind & kQualA) h.kind += "_A";
  if (parm_kind & kQualT) h.kind += "_T";
  if (parm_kind & kQualZ) h.kind += "_Z";
  if (parm_kind & kQual0) h.kind += "_0";
  h.compressed = (parm_kind & kQualC) != 0;
  h.has_crc = (parm_kind & kQualK) != 0;

  uint64_t offset = kHeaderBytes;
  if (parm_kind == kFestream) {  // an equality test, as in CNTK: only a plain FESTREAM carries the GUID
    unsigned char guid[kGuidBytes];
    if (!file.read_at(offset, guid, kGuidBytes)) {
      throw FormatError("HTK FESTREAM file ends inside its 16-byte GUID.", at(file.path(), offset));
    }
    char hex[2 * kGuidBytes + 1];
    for (size_t i = 0; i < kGuidBytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", guid[i]);
    h.kind += ";guid=";
    h.kind.append(hex, 2 * kGuidBytes);
    offset += kGuidBytes;
  }

  const uint32_t value_bytes = h.compressed ? 2 : 4;
  if (samp_size % value_bytes != 0) {
    throw FormatError("htkfeatreader:sample size not multiple of dimension", at(file.path(), 8));
  }
  h.dim = samp_size / value_bytes;
  if (h.dim == 0) throw FormatError("HTK file declares a sample size of 0 bytes.", at(file.path(), 8));
  if (h.compressed) {
    // A and B occupy the room of 4 compressed frames.
    if (n_samples < 4) {
      throw FormatError("Compressed HTK file declares " + std::to_string(n_samples) +
                            " samples, fewer than the 4 its A/B vectors take.",
                        at(file.path(), 0));
    }
    n_samples -= 4;
    read_floats(file, offset, h.dim, h.big_endian, h.a);
    offset += 4ull * h.dim;
    read_floats(file, offset, h.dim, h.big_endian, h.b);
    offset += 4ull * h.dim;
  }
  h.num_frames = n_samples;
  h.data_offset = offset;
  return h;
}

void check_frames_present(const PositionedFile& file, const HtkHeader& header, uint64_t first,
                          uint64_t count) {
  const uint64_t end = header.data_offset + (first + count) * header.sample_size;
  if (end > file.size()) throw short_file_error(file, header, first, count);
}

void read_frames(const PositionedFile& file, const HtkHeader& header, uint64_t first, uint64_t count,
                 float* out) {
  const size_t values = static_cast<size_t>(count) * header.dim;
  const uint64_t offset = header.data_offset + first * header.sample_size;
  const size_t bytes = static_cast<size_t>(count) * header.sample_size;
  auto short_file = [&] { return short_file_error(file, header, first, count); };
  if (header.compressed) {
    std::vector<uint16_t> raw(values);
    if (!file.read_at(offset, raw.data(), bytes)) throw short_file();
    for (size_t i = 0; i < values; ++i) {
      const uint16_t bits = header.big_endian ? swap16(raw[i]) : raw[i];
      const auto v = static_cast<int16_t>(bits);
      const size_t k = i % header.dim;
      out[i] = (static_cast<float>(v) + header.b[k]) / header.a[k];
    }
    return;
  }
  if (!file.read_at(offset, out, bytes)) throw short_file();
  if (header.big_endian) {
    auto* words = reinterpret_cast<uint32_t*>(out);
    for (size_t i = 0; i < values; ++i) words[i] = swap32(words[i]);
  }
}

}  // namespace cntkio::htk

namespace cntkio::htk {

void widen_range(const float* frames, size_t count, size_t dim, std::vector<float>& lo,
                 std::vector<float>& hi) {
  for (size_t i = 0; i < count * dim; ++i) {
    if (std::isnan(frames[i])) {
      throw UsageError("Value " + std::to_string(i % dim) + " of frame " + std::to_string(i / dim) +
                       " is NaN, which HTK's compressed format cannot hold: write the files uncompressed.");
    }
    lo[i % dim] = std::min(lo[i % dim], frames[i]);
    hi[i % dim] = std::max(hi[i % dim], frames[i]);
  }
}

void compression_vectors(const std::vector<float>& lo, const std::vector<float>& hi, std::vector<float>& a,
                         std::vector<float>& b) {
  a.assign(lo.size(), 1.0f);
  b.assign(lo.size(), 0.0f);
  for (size_t k = 0; k < lo.size(); ++k) {
    if (lo[k] > hi[k]) continue;  // no values
    if (!std::isfinite(hi[k] - lo[k])) {
      throw UsageError(
          "Dimension " + std::to_string(k) + " holds values from " + std::to_string(lo[k]) + " to " +
          std::to_string(hi[k]) +
          ", a range HTK's compressed format cannot scale (infinite, or wider than a float): write "
          "the files uncompressed.");
    }
    if (hi[k] > lo[k]) {
      a[k] = 2.0f * 32767.0f / (hi[k] - lo[k]);
      b[k] = (hi[k] + lo[k]) * 32767.0f / (hi[k] - lo[k]);
    } else {
      b[k] = lo[k];  // a constant dimension: every value encodes as 0
    }
  }
}

HtkWriter::HtkWriter(std::string path, size_t dim, const HtkWriteOptions& options, std::vector<float> a,
                     std::vector<float> b, bool durable)
    : path_(std::move(path)), dim_(dim), options_(options), a_(std::move(a)), b_(std::move(b)) {
  core::check_output_name(path_);
  core::check_output_path(path_);
  if (dim_ == 0) throw UsageError("HTK writer: dim must be greater than 0.");
  const size_t value_bytes = options_.compressed ? 2 : 4;
  if (dim_ * value_bytes > 0x7FFF) {
    throw UsageError("HTK writer: " + std::to_string(dim_) +
                     " values per frame do not fit HTK's sample size field.");
  }
  if (options_.compressed && (a_.size() != dim_ || b_.size() != dim_)) {
    throw UsageError("HTK writer: compressed output needs A and B vectors of the frame dimension.");
  }
  swap_ = options_.big_endian != (std::endian::native == std::endian::big);
  WritableFileOptions file_options;
  file_options.durable = durable;
  file_ = std::make_unique<core::OutputFile>(path_, file_options);
  uint16_t kind = static_cast<uint16_t>(static_cast<uint16_t>(options_.kind) | options_.qualifiers);
  if (options_.compressed) kind |= kQualC;
  // The header is written again with the real frame count by finish().
  unsigned char header[kHeaderBytes] = {};
  uint32_t period = swap_ ? swap32(options_.sample_period) : options_.sample_period;
  uint16_t size = static_cast<uint16_t>(dim_ * value_bytes);
  if (swap_) size = swap16(size);
  uint16_t kind_bytes = swap_ ? swap16(kind) : kind;
  std::memcpy(header + 4, &period, 4);
  std::memcpy(header + 8, &size, 2);
  std::memcpy(header + 10, &kind_bytes, 2);
  write(header, kHeaderBytes);
  if (kind == kFestream) {
    const unsigned char guid[kGuidBytes] = {};
    write(guid, kGuidBytes);
  }
  if (options_.compressed) {
    for (const std::vector<float>* v : {&a_, &b_}) {
      for (float f : *v) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if (swap_) bits = swap32(bits);
        write(&bits, 4);
      }
    }
  }
}

HtkWriter::~HtkWriter() = default;  // the OutputFile removes the partial file unless finish() committed it

void HtkWriter::write(const void* data, size_t bytes) {
  file_->write(data, bytes);
}

void HtkWriter::append(const float* frames, size_t count) {
  const uint64_t stored = frames_ + count + (options_.compressed ? 4 : 0);
  if (stored > 0x7FFFFFFFull)
    throw UsageError("HTK writer: too many frames for one HTK file ('" + path_ + "').");
  const size_t values = count * dim_;
  buffer_.resize(values * (options_.compressed ? 2 : 4));
  for (size_t i = 0; i < values; ++i) {
    if (options_.compressed) {
      const size_t k = i % dim_;
      const float scaled = std::nearbyint(frames[i] * a_[k] - b_[k]);
      auto v = static_cast<uint16_t>(static_cast<int16_t>(std::clamp(scaled, -32767.0f, 32767.0f)));
      if (swap_) v = swap16(v);
      std::memcpy(buffer_.data() + 2 * i, &v, 2);
    } else {
      uint32_t bits;
      std::memcpy(&bits, &frames[i], 4);
      if (swap_) bits = swap32(bits);
      std::memcpy(buffer_.data() + 4 * i, &bits, 4);
    }
  }
  write(buffer_.data(), buffer_.size());
  frames_ += count;
}

void HtkWriter::finish() {
  uint32_t stored = static_cast<uint32_t>(frames_ + (options_.compressed ? 4 : 0));
  if (swap_) stored = swap32(stored);
  file_->write_at(0, &stored, 4);
  file_->commit();
}

void write_file(const std::string& path, const float* frames, size_t num_frames, size_t dim,
                const HtkWriteOptions& options, bool durable) {
  std::vector<float> a, b;
  if (options.compressed) {
    std::vector<float> lo(dim, std::numeric_limits<float>::infinity());
    std::vector<float> hi(dim, -std::numeric_limits<float>::infinity());
    widen_range(frames, num_frames, dim, lo, hi);
    compression_vectors(lo, hi, a, b);
  }
  HtkWriter writer(path, dim, options, std::move(a), std::move(b), durable);
  writer.append(frames, num_frames);
  writer.finish();
}

}  // namespace cntkio::htk

namespace cntkio {

void write_htk_file(const std::string& path, const float* frames, size_t num_frames, size_t dim,
                    const HtkWriteOptions& options) {
  htk::write_file(path, frames, num_frames, dim, options, true);
}

}  // namespace cntkio
