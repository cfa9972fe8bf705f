// One timed read of a CTF corpus named by a list file (local paths or URLs), for bench/remote_throughput.py:
//   remote_read sweep LIST   a full sweep (index pass, every chunk, every value touched); prints
//                            "sweep <seconds> <samples> <bytes of values>"
//   remote_read first LIST   the reader built and its first minibatch read, with the index caches on;
//                            prints "first <seconds> <samples> <checksum> <seconds to build the reader>"
// The corpus has one dense stream `f` of --dim values per line (bench/remote_throughput.py writes it).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch.hpp"
#include "cntkio/minibatch_source.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: remote_read sweep|first LIST [DIM]\n");
    return 2;
  }
  const std::string mode = argv[1];
  const std::string list = argv[2];
  const int dim = argc > 3 ? std::atoi(argv[3]) : 16;
  const bool first = mode == "first";
  const std::string text =
      std::string("reader = [\n  readerType = \"CNTKTextFormatReader\"\n  fileList = \"") + list +
      "\"\n  randomize = false\n  cacheIndex = " + (first ? "true" : "false") +
      "\n  input = [ features = [ alias = \"f\" ; dim = " + std::to_string(dim) +
      " ; format = \"dense\" ] ]\n]\n";
  try {
    const auto start = std::chrono::steady_clock::now();
    cntkio::Config config = cntkio::Config::from_text(text, "remote_read");
    auto source = cntkio::MinibatchSource::from_config(config.get_block("reader"));
    const double built = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    source->start_epoch(first ? 256 : 4096, 0, cntkio::kFullSweep);
    cntkio::Minibatch mb;
    size_t samples = 0;
    double checksum = 0;
    while (source->next_minibatch(mb)) {
      const auto& values = mb.streams[0].values;
      samples += mb.streams[0].layout.num_samples();
      if (!values.empty()) checksum += values.front() + values.back();  // the values were copied out
      if (first) break;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s %.6f %zu %g %.6f\n", mode.c_str(), seconds, samples, checksum, built);
  } catch (const cntkio::Error& e) {
    std::fprintf(stderr, "remote_read: %s\n", e.what());
    return 1;
  }
  return 0;
}
