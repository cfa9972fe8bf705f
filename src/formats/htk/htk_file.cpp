#include "formats/htk/htk_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"

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

}  // namespace

PositionedFile::PositionedFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw IoError("error opening file", path, errno);
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || S_ISDIR(st.st_mode)) {
    const int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
    ::close(fd_);
    fd_ = -1;
    throw IoError("error opening file", path, e);
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

PositionedFile::~PositionedFile() {
  if (fd_ >= 0) ::close(fd_);
}

PositionedFile::PositionedFile(PositionedFile&& other) noexcept
    : fd_(other.fd_), size_(other.size_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

PositionedFile& PositionedFile::operator=(PositionedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

bool PositionedFile::read_at(uint64_t offset, void* out, size_t bytes) const {
  auto* p = static_cast<unsigned char*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw IoError("error reading file", path_, errno);
    }
    if (n == 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
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

void read_frames(const PositionedFile& file, const HtkHeader& header, uint64_t first, uint64_t count,
                 float* out) {
  const size_t values = static_cast<size_t>(count) * header.dim;
  const uint64_t offset = header.data_offset + first * header.sample_size;
  const size_t bytes = static_cast<size_t>(count) * header.sample_size;
  auto short_file = [&] {
    return FormatError("HTK file '" + file.path() + "' ends before frame " + std::to_string(first + count) +
                           " (its header declares " + std::to_string(header.num_frames) +
                           " frames, the file has " + std::to_string(file.size()) + " bytes).",
                       at(file.path(), offset));
  };
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

namespace cntkio {

void write_htk_file(const std::string& path, const float* frames, size_t num_frames, size_t dim,
                    const HtkWriteOptions& options) {
  if (dim == 0) throw UsageError("write_htk_file: dim must be greater than 0.");
  const size_t value_bytes = options.compressed ? 2 : 4;
  if (dim * value_bytes > 0xFFFF) {
    throw UsageError("write_htk_file: " + std::to_string(dim) +
                     " values per frame do not fit HTK's 16-bit sample size.");
  }
  const uint64_t stored = num_frames + (options.compressed ? 4 : 0);
  if (stored > 0x7FFFFFFFull) throw UsageError("write_htk_file: too many frames for one HTK file.");
  const bool swap = options.big_endian != (std::endian::native == std::endian::big);
  auto put32 = [&](std::string& out, uint32_t v) {
    if (swap) v = htk::swap32(v);
    out.append(reinterpret_cast<const char*>(&v), 4);
  };
  auto put16 = [&](std::string& out, uint16_t v) {
    if (swap) v = htk::swap16(v);
    out.append(reinterpret_cast<const char*>(&v), 2);
  };
  auto put_float = [&](std::string& out, float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    put32(out, bits);
  };

  uint16_t kind = static_cast<uint16_t>(static_cast<uint16_t>(options.kind) | options.qualifiers);
  if (options.compressed) kind |= htk::kQualC;
  std::string bytes;
  bytes.reserve(12 + stored * dim * value_bytes);
  put32(bytes, static_cast<uint32_t>(stored));
  put32(bytes, options.sample_period);
  put16(bytes, static_cast<uint16_t>(dim * value_bytes));
  put16(bytes, kind);
  if (kind == htk::kFestream) bytes.append(htk::kGuidBytes, '\0');
  if (options.compressed) {
    // HTK's compression: per dimension, x = (v + B) / A with v in [-32767, 32767] spanning [min, max].
    std::vector<float> a(dim, 1.0f), b(dim, 0.0f);
    for (size_t k = 0; k < dim; ++k) {
      float lo = num_frames ? frames[k] : 0.0f, hi = lo;
      for (size_t t = 0; t < num_frames; ++t) {
        lo = std::min(lo, frames[t * dim + k]);
        hi = std::max(hi, frames[t * dim + k]);
      }
      if (hi > lo) {
        a[k] = 2.0f * 32767.0f / (hi - lo);
        b[k] = (hi + lo) * 32767.0f / (hi - lo);
      } else {
        a[k] = 1.0f;
        b[k] = lo;  // every value encodes as 0
      }
    }
    for (float v : a) put_float(bytes, v);
    for (float v : b) put_float(bytes, v);
    for (size_t i = 0; i < num_frames * dim; ++i) {
      const size_t k = i % dim;
      const float scaled = std::nearbyint(frames[i] * a[k] - b[k]);
      const auto v = static_cast<int16_t>(std::clamp(scaled, -32767.0f, 32767.0f));
      put16(bytes, static_cast<uint16_t>(v));
    }
  } else {
    for (size_t i = 0; i < num_frames * dim; ++i) put_float(bytes, frames[i]);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw IoError("cannot create HTK file", path, errno);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw IoError("cannot write HTK file", path, errno);
}

}  // namespace cntkio
