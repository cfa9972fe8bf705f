// CNTK's binary index cache (spec ctf.md §5) and the chunk table and stamp cntkio appends to it: reading,
// checking against the data file, and writing it atomically.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "formats/ctf/ctf_index.hpp"

namespace cntkio::ctf {
namespace {

constexpr uint64_t kCacheMagic = 0x636e746b5f696478ull;  // "xdi_ktnc" on disk
constexpr uint64_t kCacheVersion = 1;
constexpr size_t kCacheHeaderBytes = 32;
constexpr size_t kCacheRecordBytes = 32;
// cntkio's chunk table after CNTK's records: one 32-byte entry per chunk, then a 48-byte footer.
constexpr uint64_t kChunkTableMagic = 0x6b6e756863667463ull;  // "ctfchunk" on disk
// Version 2 (80 bytes) adds the data file's stamp and the key order to version 1's 48 bytes; a version 1
// footer is not read (its cache is treated like one CNTK wrote).
constexpr uint64_t kChunkTableVersion = 2;
constexpr size_t kChunkEntryBytes = 32;
constexpr size_t kChunkFooterBytes = 80;

void put_u64(unsigned char* p, uint64_t v) {
  std::memcpy(p, &v, 8);
}
uint64_t get_u64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t get_u32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

uint64_t chunk_records_hash(std::span<const IndexedSequence> sequences) {
  // Each field is folded in with a multiply and a rotate, so a changed, swapped or moved field changes the
  // hash; not cryptographic, it guards against a corrupt or mismatched cache, not an adversary.
  uint64_t h = 0x243F6A8885A308D3ull ^ sequences.size();
  auto fold = [&h](uint64_t v) {
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    h = (h << 31) | (h >> 33);
  };
  for (const IndexedSequence& s : sequences) {
    fold(s.key);
    fold(s.offset);
    fold(static_cast<uint64_t>(s.samples) | static_cast<uint64_t>(s.size) << 32);
  }
  return h ^ (h >> 29);
}

namespace {

// One record of CNTK's layout (spec ctf.md §5); false if it cannot describe a sequence of the data file.
bool decode_record(const unsigned char* r, uint64_t file_size, IndexedSequence& s) {
  s.key = get_u64(r);
  s.samples = get_u32(r + 8);
  s.offset = get_u64(r + 16);
  s.size = get_u32(r + 24);
  // Reject records that point outside the data file instead of reading out of bounds later.
  return s.samples != 0 && s.size != 0 && s.offset <= file_size && s.size <= file_size - s.offset;
}

// The 32-byte prefix: number of records, or false if it is not a cache of CNTK's layout or claims more
// records than the data file has bytes (a record describes at least one byte).
bool read_cache_prefix(std::string_view cache, uint64_t file_size, uint64_t& count, uint64_t& first) {
  if (cache.size() < kCacheHeaderBytes) return false;
  const auto* header = reinterpret_cast<const unsigned char*>(cache.data());
  if (get_u64(header) != kCacheMagic) return false;
  count = get_u64(header + 16);
  first = get_u64(header + 24);
  return count <= file_size && first >= kCacheHeaderBytes && first <= cache.size();
}

// Folds bytes into a 64-bit hash, eight at a time (not cryptographic: it tells versions of a file apart).
uint64_t fold_bytes(uint64_t h, std::string_view bytes) {
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = (h ^ word) * 0x9E3779B97F4A7C15ull;
    h = (h << 27) | (h >> 37);
  }
  for (; i < bytes.size(); ++i) h = (h ^ static_cast<unsigned char>(bytes[i])) * 0x100000001B3ull;
  return h ^ (h >> 31);
}

}  // namespace

DataFileStamp stamp_data_file(std::string_view data, const core::FileIdentity& identity) {
  constexpr size_t kBlock = 64 * 1024;
  DataFileStamp stamp;
  stamp.size = identity.size;
  stamp.mtime_ns = identity.mtime_ns;
  if (!identity.etag.empty()) {
    // A remote file: its ETag names the version (and the cache's file name holds it, docs/remote-data.md);
    // folding its first and last bytes would cost two GETs at every open.
    stamp.fingerprint = fold_bytes(0x13198A2E03707344ull ^ data.size(), identity.etag);
    return stamp;
  }
  const size_t head = std::min(kBlock, data.size());
  const size_t tail = std::min(kBlock, data.size() - head);
  stamp.fingerprint = fold_bytes(fold_bytes(0x243F6A8885A308D3ull ^ data.size(), data.substr(0, head)),
                                 data.substr(data.size() - tail));
  return stamp;
}

std::optional<CacheFooter> read_cache_footer(std::string_view cache) {
  if (cache.size() < kCacheHeaderBytes + kChunkFooterBytes) return std::nullopt;
  const auto* footer =
      reinterpret_cast<const unsigned char*>(cache.data()) + cache.size() - kChunkFooterBytes;
  if (get_u64(footer) != kChunkTableMagic || get_u64(footer + 8) != kChunkTableVersion) return std::nullopt;
  CacheFooter f;
  f.chunk_size_in_bytes = get_u64(footer + 16);
  f.data.size = get_u64(footer + 24);
  f.chunks = get_u64(footer + 32);
  f.records_end = get_u64(footer + 40);
  f.data.mtime_ns = static_cast<int64_t>(get_u64(footer + 48));
  f.data.fingerprint = get_u64(footer + 56);
  const uint64_t key_order = get_u64(footer + 64);
  if (key_order > 1) return std::nullopt;
  f.keys_ascending = key_order == 1;
  f.adjacent_equal_keys = get_u64(footer + 72);
  if (f.records_end < kCacheHeaderBytes || f.records_end > cache.size() - kChunkFooterBytes ||
      f.chunks > (cache.size() - kChunkFooterBytes - f.records_end) / kChunkEntryBytes ||
      cache.size() != f.records_end + f.chunks * kChunkEntryBytes + kChunkFooterBytes) {
    return std::nullopt;
  }
  return f;
}

bool load_index_cache(std::string_view cache, uint64_t file_size, CtfIndex& index) {
  uint64_t count = 0;
  uint64_t first = 0;
  if (!read_cache_prefix(cache, file_size, count, first)) return false;
  if ((cache.size() - first) / kCacheRecordBytes < count) return false;  // short: CNTK re-indexes too
  SequenceList sequences;
  const auto* records = reinterpret_cast<const unsigned char*>(cache.data()) + first;
  for (uint64_t i = 0; i < count; ++i) {
    IndexedSequence s;
    if (!decode_record(records + i * kCacheRecordBytes, file_size, s)) return false;
    sequences.append(s);
  }
  index.sequences = std::move(sequences);
  return true;
}

bool load_cache_chunk_table(std::string_view cache, const CacheFooter& footer, uint64_t file_size,
                            uint64_t chunk_size_in_bytes, CtfIndex& index) {
  uint64_t count = 0;
  uint64_t first = 0;
  if (!read_cache_prefix(cache, file_size, count, first) || first != kCacheHeaderBytes) return false;
  const uint64_t records_end =
      kCacheHeaderBytes + count * kCacheRecordBytes;  // count <= file size: no overflow
  const uint64_t num_chunks = footer.chunks;
  if (footer.chunk_size_in_bytes != chunk_size_in_bytes || footer.data.size != file_size ||
      footer.records_end != records_end || num_chunks > count) {
    return false;
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(cache.data());
  std::vector<IndexedChunk> chunks(num_chunks);
  uint64_t next_sequence = 0;
  uint64_t total_samples = 0;
  for (uint64_t c = 0; c < num_chunks; ++c) {
    const unsigned char* e = bytes + records_end + c * kChunkEntryBytes;
    IndexedChunk& chunk = chunks[c];
    chunk.first_sequence = get_u64(e);
    chunk.num_sequences = get_u64(e + 8);
    chunk.samples = get_u64(e + 16);
    chunk.records_hash = get_u64(e + 24);
    // Chunks cover the records in order, each with at least one sequence of at least one sample (a row of at
    // least one byte).
    if (chunk.first_sequence != next_sequence || chunk.num_sequences == 0 ||
        chunk.num_sequences > count - next_sequence || chunk.samples < chunk.num_sequences ||
        chunk.samples > file_size - total_samples) {
      return false;
    }
    next_sequence += chunk.num_sequences;
    total_samples += chunk.samples;
  }
  if (next_sequence != count) return false;
  index.sequences = SequenceList();
  index.chunks = std::move(chunks);
  return true;
}

std::vector<IndexedSequence> read_cached_chunk(std::string_view cache, uint64_t file_size,
                                               const IndexedChunk& chunk) {
  // load_cache_chunk_table checked that the chunk's records lie inside the cache.
  std::vector<IndexedSequence> sequences(chunk.num_sequences);
  const auto* records = reinterpret_cast<const unsigned char*>(cache.data()) + kCacheHeaderBytes +
                        chunk.first_sequence * kCacheRecordBytes;
  uint64_t samples = 0;
  for (uint64_t i = 0; i < chunk.num_sequences; ++i) {
    if (!decode_record(records + i * kCacheRecordBytes, file_size, sequences[i])) return {};
    samples += sequences[i].samples;
  }
  if (samples != chunk.samples || chunk_records_hash(sequences) != chunk.records_hash) return {};
  return sequences;
}

bool read_cached_record(std::string_view cache, uint64_t file_size, uint64_t index, IndexedSequence& out) {
  const uint64_t at = kCacheHeaderBytes + index * kCacheRecordBytes;
  if (at + kCacheRecordBytes > cache.size()) return false;
  return decode_record(reinterpret_cast<const unsigned char*>(cache.data()) + at, file_size, out);
}

namespace {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host(name);
  for (char& c : host) {
    if (c == '.' || c == '/') c = '_';  // keeps "<cache>.tmp.<host>.<pid>" parseable from the right
  }
  return host;
}

// Temporaries older than this are removed whoever wrote them: no writer takes an hour for a cache.
constexpr int64_t kAbandonedAfterSeconds = 3600;

}  // namespace

size_t remove_stale_cache_temporaries(const std::string& cache_path) {
  Env& env = *Env::current();
  const std::filesystem::path cache(cache_path);
  const std::string dir = cache.has_parent_path() ? cache.parent_path().string() : std::string(".");
  const std::string prefix = cache.filename().string() + ".tmp.";
  const std::string host = this_host();
  timespec now_ts{};
  ::clock_gettime(CLOCK_REALTIME, &now_ts);
  const int64_t now_ns = static_cast<int64_t>(now_ts.tv_sec) * 1000000000 + now_ts.tv_nsec;
  std::vector<std::string> names;
  try {
    names = env.list_dir(dir);
  } catch (const IoError&) {
    return 0;
  }
  size_t removed = 0;
  for (const std::string& name : names) {
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<host>.<pid>" (this version) or "<pid>" (earlier versions, which wrote on this machine)
    const std::string rest = name.substr(prefix.size());
    const size_t dot = rest.rfind('.');
    const std::string writer_host = dot == std::string::npos ? host : rest.substr(0, dot);
    const std::string pid_text = dot == std::string::npos ? rest : rest.substr(dot + 1);
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos ||
        pid_text.size() > 9) {
      continue;
    }
    const auto pid = static_cast<pid_t>(std::stol(pid_text));
    const std::string path = (std::filesystem::path(dir) / name).string();
    bool stale = writer_host == host && pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;
    try {
      if (now_ns - env.file_identity(path).mtime_ns > kAbandonedAfterSeconds * 1000000000) stale = true;
      if (stale) {
        env.remove_file(path);
        ++removed;
      }
    } catch (const IoError&) {
      // gone meanwhile (another reader removed it), or not ours to remove
    }
  }
  return removed;
}

bool write_index_cache(const std::string& cache_path, const CtfIndex& index, uint64_t chunk_size_in_bytes,
                       const DataFileStamp& data, std::string* failure) {
  remove_stale_cache_temporaries(cache_path);
  // A name of its own per process and machine: two writers (jobs on a shared file system) never mix their
  // bytes, and the rename makes the finished cache appear at once. A writer that dies leaves its temporary
  // behind; the next writer removes it (above).
  WritableFileOptions temp;
  temp.temp_path = cache_path + ".tmp." + this_host() + "." + std::to_string(::getpid());
  std::unique_ptr<WritableFile> file;
  try {
    file = Env::current()->new_writable_file(cache_path, temp);
  } catch (const Error& e) {
    if (failure != nullptr) *failure = e.what();
    return false;  // a folder cntkio cannot write to, a cache path that is not a regular file: no cache
  }
  std::vector<unsigned char> buffer;
  buffer.reserve(kCacheRecordBytes * 4096);
  auto flush = [&](bool force) {
    if (force || buffer.size() + kCacheRecordBytes > buffer.capacity()) {
      file->append(buffer.data(), buffer.size());
      buffer.clear();
    }
  };
  auto append = [&](std::initializer_list<uint64_t> words) {
    for (uint64_t w : words) {
      unsigned char b[8];
      put_u64(b, w);
      buffer.insert(buffer.end(), b, b + 8);
    }
    flush(false);
  };
  try {
    append({kCacheMagic, kCacheVersion, index.sequences.size(), kCacheHeaderBytes});
    index.sequences.for_each([&](const IndexedSequence& s) {
      // CNTK's record: key, samples (u32 + 4 padding bytes), offset, size (u32 + 4 padding bytes).
      append({s.key, s.samples, s.offset, s.size});
    });
    // cntkio's chunk table, after the records CNTK reads, so that an open reads a few bytes per chunk and a
    // chunk's records only when it is first used; then the footer that says which data file it describes.
    const uint64_t records_end = kCacheHeaderBytes + index.sequences.size() * kCacheRecordBytes;
    std::vector<IndexedSequence> records;
    for (const IndexedChunk& c : index.chunks) {
      records.clear();
      index.sequences.decode(c.first_sequence, c.num_sequences, records);
      append({c.first_sequence, c.num_sequences, c.samples, chunk_records_hash(records)});
    }
    append({kChunkTableMagic, kChunkTableVersion, chunk_size_in_bytes, data.size, index.chunks.size(),
            records_end, static_cast<uint64_t>(data.mtime_ns), data.fingerprint,
            index.sequences.keys_ascending() ? 1u : 0u, index.sequences.adjacent_equal_keys()});
    flush(true);
    file->commit();  // removes the temporary when it fails
  } catch (const IoError& e) {
    if (failure != nullptr) *failure = e.what();
    return false;
  }
  return true;
}

}  // namespace cntkio::ctf
