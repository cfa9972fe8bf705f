// libFuzzer target: the converters' round trip. A fuzzed CTF file (options from the first byte) is parsed;
// if it parses, it is converted to CBF (current or legacy layout) and to CTF text, each output is parsed
// again, and the sequences (sample counts, values bit for bit with NaN = NaN, sparse indices) must agree.
// A conversion may refuse data its output cannot hold (UsageError); anything else that differs aborts.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"

namespace {

using namespace cntkio;

// The scratch files live in memory (/dev/shm) where there is one: a disk file per execution halves the rate.
std::string scratch_dir() {
  struct stat info {};
  return ::stat("/dev/shm", &info) == 0 && S_ISDIR(info.st_mode) ? "/dev/shm" : "/tmp";
}

std::string scratch(const char* suffix) {
  return scratch_dir() + "/cntkio_fuzz_rt_" + std::to_string(::getpid()) + suffix;
}

template <typename T>
void render_values(std::string& out, const void* values, size_t n) {
  const T* v = static_cast<const T*>(values);
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(v[i])) {
      out += " nan";
      continue;
    }
    char text[40];
    std::snprintf(text, sizeof text, " %a", static_cast<double>(v[i]));
    out += text;
  }
}

// Every sequence's data in file order, without keys (CBF keys are indices, CTF keys are ids).
std::string render(Deserializer& d) {
  std::string out;
  const std::vector<StreamInfo>& streams = d.streams();
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = d.load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(info.index_in_chunk, data);
      out += "seq";
      for (size_t s = 0; s < streams.size(); ++s) {
        const SequenceData& x = data[s];
        out += " |" + streams[s].name + " n=" + std::to_string(x.number_of_samples);
        size_t values = x.number_of_samples * streams[s].sample_dim();
        if (streams[s].storage != StorageFormat::kDense) {
          values = x.total_nnz;
          for (uint32_t k = 0; k < x.number_of_samples; ++k) out += " c" + std::to_string(x.nnz_counts[k]);
          for (size_t i = 0; i < x.total_nnz; ++i) out += " i" + std::to_string(x.indices[i]);
        }
        if (streams[s].element_type == ElementType::kFloat) {
          render_values<float>(out, x.values, values);
        } else {
          render_values<double>(out, x.values, values);
        }
      }
      out += '\n';
    }
  }
  return out;
}

[[noreturn]] void differs(const char* what, const std::string& a, const std::string& b) {
  std::fprintf(stderr, "round trip through %s changed the data:\n--- parsed\n%s--- read back\n%s", what,
               a.c_str(), b.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t flags = data[0];
  const std::string input = scratch(".ctf");
  std::FILE* f = std::fopen(input.c_str(), "wb");
  if (f == nullptr) return 0;
  std::fwrite(data + 1, 1, size - 1, f);
  std::fclose(f);

  CtfOptions ctf;
  ctf.file = input;
  ctf.trace_level = 0;
  ctf.log_sink = [](int, std::string_view) {};
  ctf.skip_sequence_ids = flags & 1;
  ctf.element_type = (flags & 2) ? ElementType::kDouble : ElementType::kFloat;
  CtfStreamOptions a;
  a.name = "a";
  a.dim = 1 + ((flags >> 2) & 3);
  CtfStreamOptions b;
  b.name = "b";
  b.dim = 7;
  b.storage = StorageFormat::kSparseCsc;
  ctf.streams = {a, b};
  std::string parsed;
  std::shared_ptr<Deserializer> source;
  try {
    source = make_ctf_deserializer(ctf);
    parsed = render(*source);
  } catch (const cntkio::Error&) {
    return 0;  // not valid CTF: nothing to round-trip
  }

  const bool legacy = flags & 16;
  const std::string cbf = scratch(legacy ? ".v1.cbf" : ".cbf");
  ConvertOptions to_cbf;
  to_cbf.to = legacy ? DataFormat::kCbfLegacy : DataFormat::kCbf;
  to_cbf.chunk_size_in_bytes = (flags & 32) ? 64 : 4096;  // small buffers: a fast harness
  to_cbf.log = [](std::string_view) {};
  bool converted = true;
  try {
    convert_deserializer(*source, cbf, to_cbf);
  } catch (const UsageError&) {
    converted = false;  // e.g. the legacy layout holds one dense sample per sequence only
  }
  if (converted) {
    CbfOptions read;
    read.file = cbf;
    read.element_type = std::nullopt;
    read.trace_level = 0;
    read.log_sink = [](int, std::string_view) {};
    auto back = make_cbf_deserializer(read);
    const std::string again = render(*back);
    if (again != parsed) differs(legacy ? "legacy CBF" : "CBF", parsed, again);
    std::remove(cbf.c_str());
  }

  const std::string text = scratch(".out.ctf");
  ConvertOptions to_ctf;
  to_ctf.to = DataFormat::kCtf;
  to_ctf.log = [](std::string_view) {};
  ConvertSummary written;
  try {
    written = convert_deserializer(*source, text, to_ctf);
  } catch (const UsageError&) {
    return 0;
  }
  CtfOptions reread = ctf;
  reread.file = text;
  reread.skip_sequence_ids = false;
  auto back = make_ctf_deserializer(reread);
  const std::string again = render(*back);
  // Some extreme doubles (subnormals such as 42e-317) have no spelling that CNTK's number formula reads back
  // exactly; the converter counts and reports them (inexact_values), so only then may the values differ.
  if (again != parsed && written.inexact_values == 0) differs("CTF text", parsed, again);
  std::remove(text.c_str());
  return 0;
}
