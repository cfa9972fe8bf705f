// libFuzzer target: the CTF indexer and parser on an in-memory file, with the options taken from the
// first two input bytes. Everything the deserializer delivers is read back and checked (dense sizes, sparse
// indices below dim, nnz sums), so an out-of-bounds view or a corrupt buffer is a finding, not only a crash.
// Only cntkio::Error may escape the reader.
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

template <typename T>
double touch(const SequenceData& d, const StreamInfo& s) {
  double sum = 0;
  const T* values = static_cast<const T*>(d.values);
  if (s.storage == StorageFormat::kDense) {
    const size_t n = d.number_of_samples * s.sample_dim();
    for (size_t i = 0; i < n; ++i) sum += static_cast<double>(values[i]);
    return sum;
  }
  size_t nnz = 0;
  for (uint32_t k = 0; k < d.number_of_samples; ++k) nnz += d.nnz_counts[k];
  if (nnz != d.total_nnz) broken("sparse nnz counts do not add up to total_nnz");
  for (size_t i = 0; i < nnz; ++i) {
    if (d.indices[i] < 0 || static_cast<size_t>(d.indices[i]) >= s.sample_dim())
      broken("sparse index >= dim");
    sum += static_cast<double>(values[i]);
  }
  return sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
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

  std::vector<StreamInfo> streams = {make_stream(0, "a", StorageFormat::kDense, a_dim, type, defines),
                                     make_stream(1, "b", b_storage, 7, type, false),
                                     make_stream(2, "lab", StorageFormat::kSparseCsc, 300, type, false)};
  core::Logger logger(2, [](core::LogLevel, std::string_view) {});
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
    for (const ctf::IndexedChunk& c : index.chunks) {
      ChunkPtr chunk =
          ctf::parse_chunk(context, {index.sequences.data() + c.first_sequence, c.num_sequences});
      for (uint64_t i = 0; i < c.num_sequences; ++i) {
        std::vector<SequenceData> out;
        chunk->get_sequence(static_cast<uint32_t>(i), out);
        if (out.size() != streams.size()) broken("one SequenceData per stream");
        for (size_t s = 0; s < out.size(); ++s) {
          if (type == ElementType::kFloat) {
            (void)touch<float>(out[s], streams[s]);
          } else {
            (void)touch<double>(out[s], streams[s]);
          }
        }
      }
    }
  } catch (const cntkio::Error&) {
  }
  return 0;
}
