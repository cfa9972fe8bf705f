// CTF index memory (issue #21): how many bytes of anonymous memory a reader's index holds per sequence, and
// the peak anonymous memory of opening a large file and reading one sweep with a small randomization window.
// Memory must be bounded by the window, not by the corpus: the index is the one part that grows with it.
//
// It writes (once; reused on later runs) a CTF file of about --gb gigabytes of one-row sequences of about 210
// bytes with increasing numeric ids, then, in a forked child per measurement:
//   open    builds a randomized reader (window of --window chunks of 32 MB) and reports the anonymous memory
//           it holds afterwards (RssAnon) and at most while opening (sampled every millisecond);
//   sweep   the same, then reads one sweep in minibatches of 1024 samples (peak while reading);
//   lookup  the same file as the secondary of a composite reader (index plus key lookups).
// "bytes/seq" is (RssAnon after open − RssAnon before) / sequences. Page-cache pages of the data file are
// file-backed and not counted.
//
//   build/bench/ctf_index_memory [--gb 3] [--dir /tmp/cntkio_index_memory] [--window 2] [--no-sweep]
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "cntkio/config.hpp"
#include "cntkio/minibatch_source.hpp"

namespace fs = std::filesystem;

namespace {

uint64_t rss_anon_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssAnon:", 0) == 0) return std::strtoull(line.c_str() + 8, nullptr, 10) * 1024;
  }
  return 0;
}

// Samples RssAnon every millisecond on a thread of its own and keeps the maximum.
class PeakSampler {
 public:
  PeakSampler()
      : thread_([this] {
          while (!stop_.load()) {
            const uint64_t now = rss_anon_bytes();
            if (now > peak_.load()) peak_.store(now);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          }
        }) {}
  ~PeakSampler() { stop(); }
  uint64_t stop() {
    if (thread_.joinable()) {
      stop_.store(true);
      thread_.join();
    }
    const uint64_t now = rss_anon_bytes();
    return now > peak_.load() ? now : peak_.load();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> peak_{0};
  std::thread thread_;
};

// One-row sequences "<id> |x v1 ... v24 |y 1:1\n" of about 210 bytes, ids 0, 1, 2, ...
uint64_t write_corpus(const fs::path& path, double gb) {
  const uint64_t target = static_cast<uint64_t>(gb * 1e9);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) {
    std::perror("cannot write the corpus");
    std::exit(1);
  }
  std::string buffer;
  uint64_t written = 0;
  uint64_t id = 0;
  char row[512];
  while (written < target) {
    int n = std::snprintf(row, sizeof row, "%llu |x", static_cast<unsigned long long>(id));
    for (int k = 0; k < 24; ++k) {
      n += std::snprintf(
          row + n, sizeof row - static_cast<size_t>(n), " %.4f",
          static_cast<double>((id * 7919 + static_cast<uint64_t>(k) * 104729) % 10000) / 10000.0);
    }
    n += std::snprintf(row + n, sizeof row - static_cast<size_t>(n), " |y %llu:1\n",
                       static_cast<unsigned long long>(id % 10));
    buffer.append(row, static_cast<size_t>(n));
    written += static_cast<uint64_t>(n);
    ++id;
    if (buffer.size() > (8u << 20)) {
      std::fwrite(buffer.data(), 1, buffer.size(), f);
      buffer.clear();
    }
  }
  std::fwrite(buffer.data(), 1, buffer.size(), f);
  std::fclose(f);
  return id;
}

std::string reader_config(const fs::path& file, size_t window, bool composite) {
  const std::string streams =
      "input = [ x = [ dim = 24 ; format = dense ] ; y = [ dim = 10 ; format = sparse ] ]";
  if (!composite) {
    return "r = [ readerType = CNTKTextFormatReader ; file = \"" + file.string() +
           "\" ; randomize = true ; randomizationWindow = " + std::to_string(window) +
           " ; sampleBasedRandomizationWindow = false ; " + streams + " ]\n";
  }
  // The same file twice: as primary and as the secondary whose index answers a lookup per sequence.
  return "r = [ randomize = true ; randomizationWindow = " + std::to_string(window) +
         " ; sampleBasedRandomizationWindow = false ; deserializers = (\n"
         "  [ type = CNTKTextFormatDeserializer ; file = \"" +
         file.string() + "\" ; input = [ x = [ dim = 24 ; format = dense ] ] ]:\n" +
         "  [ type = CNTKTextFormatDeserializer ; file = \"" + file.string() +
         "\" ; input = [ y = [ dim = 10 ; format = sparse ] ] ] ) ]\n";
}

struct Measured {
  double before = 0, after_open = 0, peak_open = 0, peak_sweep = 0, open_seconds = 0, sweep_seconds = 0;
  uint64_t samples = 0;
  bool ok = false;
};

Measured measure_in_child(const fs::path& file, size_t window, bool composite, bool sweep) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Measured m;
    try {
      const cntkio::Config config = cntkio::Config::from_text(reader_config(file, window, composite));
      m.before = static_cast<double>(rss_anon_bytes());
      auto start = std::chrono::steady_clock::now();
      std::unique_ptr<cntkio::MinibatchSource> source;
      {
        PeakSampler sampler;
        source = cntkio::MinibatchSource::from_config(config.get_block("r"));
        m.peak_open = static_cast<double>(sampler.stop());
      }
      m.open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      m.after_open = static_cast<double>(rss_anon_bytes());
      if (sweep) {
        start = std::chrono::steady_clock::now();
        PeakSampler sampler;
        source->start_epoch(1024, 0, cntkio::kFullSweep);
        cntkio::Minibatch mb;
        while (source->next_minibatch(mb)) m.samples += mb.streams[0].layout.num_samples();
        m.peak_sweep = static_cast<double>(sampler.stop());
        m.sweep_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
      m.ok = true;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    const ssize_t written = ::write(fds[1], &m, sizeof m);
    ::_exit(written == static_cast<ssize_t>(sizeof m) ? 0 : 1);
  }
  ::close(fds[1]);
  Measured m;
  if (::read(fds[0], &m, sizeof m) != static_cast<ssize_t>(sizeof m)) m.ok = false;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return m;
}

double mib(double bytes) {
  return bytes / (1024.0 * 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  double gb = 3;
  fs::path dir = "/tmp/cntkio_index_memory";
  size_t window = 2;
  bool sweep = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gb" && i + 1 < argc) {
      gb = std::atof(argv[++i]);
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--window" && i + 1 < argc) {
      window = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (a == "--no-sweep") {
      sweep = false;
    } else {
      std::fprintf(stderr, "usage: %s [--gb 3] [--dir DIR] [--window 2] [--no-sweep]\n", argv[0]);
      return 2;
    }
  }
  fs::create_directories(dir);
  char name[64];
  std::snprintf(name, sizeof name, "rows210_%.1fgb.ctf", gb);
  const fs::path file = dir / name;
  const fs::path count_file = dir / (std::string(name) + ".sequences");
  uint64_t sequences = 0;
  if (fs::exists(file) && fs::exists(count_file)) {
    std::ifstream(count_file) >> sequences;
  } else {
    std::printf("writing %s ...\n", file.c_str());
    std::fflush(stdout);
    sequences = write_corpus(file, gb);
    std::ofstream(count_file) << sequences;
  }
  std::printf("file %s: %.2f GB, %llu sequences; window %zu chunks; load %s", file.c_str(),
              static_cast<double>(fs::file_size(file)) / 1e9, static_cast<unsigned long long>(sequences),
              window, "");
  std::fflush(stdout);
  std::system("cat /proc/loadavg");
  std::printf("%-10s %12s %14s %14s %14s %9s %9s\n", "reader", "bytes/seq", "anon open MiB", "peak open MiB",
              "peak sweep MiB", "open s", "sweep s");
  for (bool composite : {false, true}) {
    const Measured m = measure_in_child(file, window, composite, sweep);
    if (!m.ok) {
      std::printf("%-10s failed\n", composite ? "composite" : "ctf");
      continue;
    }
    if (sweep && m.samples != sequences) {
      std::printf("%-10s read %llu samples of %llu\n", composite ? "composite" : "ctf",
                  static_cast<unsigned long long>(m.samples), static_cast<unsigned long long>(sequences));
    }
    std::printf("%-10s %12.1f %14.1f %14.1f %14.1f %9.2f %9.2f\n", composite ? "composite" : "ctf",
                (m.after_open - m.before) / static_cast<double>(sequences), mib(m.after_open),
                mib(m.peak_open), mib(m.peak_sweep), m.open_seconds, m.sweep_seconds);
  }
  return 0;
}
