// libFuzzer target: the CBF reader, both layouts (the first input byte picks the precision option, the rest
// is the file). Every chunk is loaded and every value, index and count it hands out is read back and
// checked, so an unchecked size or offset in the file shows up as a sanitizer report or an abort.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/errors.hpp"

namespace {

using namespace cntkio;

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

// The scratch files live in memory (/dev/shm) where there is one: a disk file per execution halves the rate.
std::string scratch_dir() {
  struct stat info {};
  return ::stat("/dev/shm", &info) == 0 && S_ISDIR(info.st_mode) ? "/dev/shm" : "/tmp";
}

const std::string& scratch_file() {
  static const std::string path = scratch_dir() + "/cntkio_fuzz_cbf_" + std::to_string(::getpid()) + ".cbf";
  return path;
}

template <typename T>
double touch(const SequenceData& d, const StreamInfo& s) {
  double sum = 0;
  const T* values = static_cast<const T*>(d.values);
  if (s.storage == StorageFormat::kDense) {
    for (size_t i = 0; i < d.number_of_samples * s.sample_dim(); ++i) sum += static_cast<double>(values[i]);
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
  if (size < 1) return 0;
  std::FILE* f = std::fopen(scratch_file().c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);
  CbfOptions options;
  options.file = scratch_file();
  options.trace_level = 0;
  options.log_sink = [](int, std::string_view) {};
  options.keep_data_in_memory = data[0] & 4;
  switch (data[0] & 3) {
    case 0:
      options.element_type = ElementType::kFloat;
      break;
    case 1:
      options.element_type = ElementType::kDouble;
      break;
    default:
      options.element_type = std::nullopt;
      break;
  }
  try {
    auto d = make_cbf_deserializer(options);
    const std::vector<StreamInfo>& streams = d->streams();
    for (const ChunkInfo& c : d->chunk_infos()) {
      std::vector<SequenceInfo> infos;
      d->sequence_infos_for_chunk(c.id, infos);
      if (infos.size() != c.number_of_sequences) broken("chunk sequence count differs from its sequences");
      ChunkPtr chunk = d->load_chunk(c.id);
      for (const SequenceInfo& info : infos) {
        std::vector<SequenceData> out;
        chunk->get_sequence(info.index_in_chunk, out);
        if (out.size() != streams.size()) broken("one SequenceData per stream");
        for (size_t s = 0; s < out.size(); ++s) {
          if (streams[s].element_type == ElementType::kFloat) {
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
