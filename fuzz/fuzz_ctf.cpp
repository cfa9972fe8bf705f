// libFuzzer target: the CTF indexer and parser on an in-memory file, with the options taken from the
// first two input bytes. Everything the deserializer delivers is read back and checked (dense sizes, sparse
// indices below dim, nnz sums), so an out-of-bounds view or a corrupt buffer is a finding, not only a crash.
// Only cntkio::Error may escape the reader. Each input is read twice, with the row fast path and with the
// general parser alone, and the two must deliver and log exactly the same.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cntkio/errors.hpp"
#include "core/logger.hpp"
#include "formats/ctf/ctf_index.hpp"
#include "formats/ctf/ctf_parser.hpp"

namespace {

using namespace cntkio;

[[noreturn]] void broken(const char* what) {
  __builtin_printf("invariant violated: %s\n", what);
  std::abort();
}

StreamInfo make_stream(uint32_t id, const char* name, StorageFormat storage, size_t dim, ElementType type,
                       bool defines) {
  StreamInfo s;
  s.id = id;
  s.name = name;
  s.alias = name;
  s.storage = storage;
  s.element_type = type;
  s.sample_shape = {dim};
  s.defines_mb_size = defines;
  return s;
}

// Appends what a sequence of a stream holds to `digest`, after checking its invariants.
template <typename T>
void touch(const SequenceData& d, const StreamInfo& s, std::string& digest) {
  const T* values = static_cast<const T*>(d.values);
  digest += " [" + std::to_string(d.number_of_samples) + ":";
  if (s.storage == StorageFormat::kDense) {
    const size_t n = d.number_of_samples * s.sample_dim();
    for (size_t i = 0; i < n; ++i) digest += " " + std::to_string(static_cast<double>(values[i]));
    digest += "]";
    return;
  }
  size_t nnz = 0;
  for (uint32_t k = 0; k < d.number_of_samples; ++k) {
    nnz += d.nnz_counts[k];
    digest += " " + std::to_string(d.nnz_counts[k]);
  }
  if (nnz != d.total_nnz) broken("sparse nnz counts do not add up to total_nnz");
  for (size_t i = 0; i < nnz; ++i) {
    if (d.indices[i] < 0 || static_cast<size_t>(d.indices[i]) >= s.sample_dim())
      broken("sparse index >= dim");
    digest += " " + std::to_string(d.indices[i]) + "=" + std::to_string(static_cast<double>(values[i]));
  }
  digest += "]";
}

// Reads the whole file with the row fast path on or off; returns everything delivered and logged, and the
// error that ended the read, as text.
std::string read_everything(const uint8_t* data, size_t size, bool row_fast_path) {
  const uint8_t flags = data[0];
  const uint64_t max_errors = data[1] % 8;
  const std::string_view file(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::string name = "fuzz.ctf";
  const bool skip_ids = flags & 1;
  const ElementType type = (flags & 2) ? ElementType::kDouble : ElementType::kFloat;
  const bool defines = flags & 4;
  const StorageFormat b_storage = (flags & 8) ? StorageFormat::kDense : StorageFormat::kSparseCsc;
  const size_t a_dim = 1 + ((flags >> 4) & 3);
  const uint64_t chunk_bytes = (flags & 64) ? 16 : (32ull << 20);
  const int trace_level = (flags & 128) ? 2 : 1;

  std::vector<StreamInfo> streams = {make_stream(0, "a", StorageFormat::kDense, a_dim, type, defines),
                                     make_stream(1, "b", b_storage, 7, type, false),
                                     make_stream(2, "lab", StorageFormat::kSparseCsc, 300, type, false)};
  std::string digest;
  core::Logger logger(trace_level, [&digest](core::LogLevel, std::string_view line) {
    digest += "log ";
    digest += line;
    digest += "\n";
  });
  ctf::ErrorBudget budget(max_errors);
  std::atomic<bool> had_warnings{false};
  try {
    ctf::CtfIndex index = ctf::build_index(file, name, skip_ids, defines ? "a" : "");
    ctf::form_chunks(index, chunk_bytes, file.size());
    ctf::ParseContext context;
    context.data = file;
    context.file = &name;
    context.streams = &streams;
    context.element_type = type;
    context.logger = &logger;
    context.budget = &budget;
    context.had_warnings = &had_warnings;
    context.row_fast_path = row_fast_path;
    for (const ctf::IndexedChunk& c : index.chunks) {
      std::vector<ctf::IndexedSequence> records;
      index.sequences.decode(c.first_sequence, c.num_sequences, records);
      ChunkPtr chunk = ctf::parse_chunk(context, records);
      for (uint64_t i = 0; i < c.num_sequences; ++i) {
        std::vector<SequenceData> out;
        chunk->get_sequence(static_cast<uint32_t>(i), out);
        if (out.size() != streams.size()) broken("one SequenceData per stream");
        digest += "seq " + std::to_string(records[i].key);
        for (size_t s = 0; s < out.size(); ++s) {
          if (type == ElementType::kFloat) {
            touch<float>(out[s], streams[s], digest);
          } else {
            touch<double>(out[s], streams[s], digest);
          }
        }
        digest += "\n";
      }
    }
  } catch (const cntkio::Error& e) {
    digest += std::string("error ") + e.what();
  }
  digest += " errors " + std::to_string(budget.counted());
  return digest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // The row fast path must be invisible: the same data, messages and errors as the general parser alone.
  if (read_everything(data, size, true) != read_everything(data, size, false)) {
    broken("the row fast path and the general parser disagree");
  }
  return 0;
}
