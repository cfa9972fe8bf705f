// CTF index cache: how much faster a reader opens a large file whose index cache is valid than one that
// indexes it cold (issue #9: "open with a valid index cache >= 20x faster than a cold index on a 1 GB file").
//
// For each dataset of bench/ctf_datasets.hpp, scaled to about --gb gigabytes, it times
// make_ctf_deserializer() with cacheIndex off (cold: map the file, scan it, form chunks) and with a valid
// cache (map the cache, check its chunk table), each in a fresh child process (fork) so neither side
// inherits the other's warm heap; the file and its cache are in the page cache. Median of --reps. The last
// columns are what each reader spends afterwards listing the sequences of every chunk, as one sweep's
// randomizer makes it do: the cached reader reads and checks each chunk's records then. Not in the ratio.
//
// The "1st mb" columns (issue #25 item 5) time a randomized reader with cntk.io's defaults (its window: the
// whole file) from its creation to its first minibatch of 256 samples, cacheIndex off and with the valid
// cache, each in a fresh child process.
//
//   build/bench/ctf_index_cache [--gb 1 | --scale S] [--reps 5] [--dataset dense|sparse|sequences] [--dir
//   DIR]
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "cntkio/config.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/minibatch_source.hpp"
#include "ctf_datasets.hpp"

namespace fs = std::filesystem;

namespace {

struct Open {
  double seconds = 0;
  double records_seconds = 0;  // then listing the sequences of every chunk (what a sweep's randomizer asks)
  uint64_t sequences = 0;
  bool from_cache = false;
  bool lazy = false;
};

// Opens the file in a forked child and returns what it measured (seconds < 0: the child failed).
Open open_in_child(const cntkio::CtfOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, 0, 0, false, false};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    Open o;
    try {
      const auto start = std::chrono::steady_clock::now();
      auto d = cntkio::make_ctf_deserializer(options);
      const auto opened = std::chrono::steady_clock::now();
      o.seconds = std::chrono::duration<double>(opened - start).count();
      std::vector<cntkio::SequenceInfo> infos;
      uint64_t listed = 0;
      for (const cntkio::ChunkInfo& c : d->chunk_infos()) {
        infos.clear();
        d->sequence_infos_for_chunk(c.id, infos);
        listed += infos.size();
      }
      o.records_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
      const cntkio::CtfIndexSummary s = cntkio::ctf_index_summary(*d);
      o.sequences = listed == s.sequences ? s.sequences : 0;
      o.from_cache = s.loaded_from_cache;
      o.lazy = s.lazy_sequence_records;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      o.seconds = -1;
    }
    const ssize_t written = ::write(fds[1], &o, sizeof o);
    ::_exit(written == static_cast<ssize_t>(sizeof o) ? 0 : 1);
  }
  ::close(fds[1]);
  Open o{-1, 0, 0, false, false};
  if (::read(fds[0], &o, sizeof o) != static_cast<ssize_t>(sizeof o)) o.seconds = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return o;
}

// Seconds from building a randomized reader of `options`' file (cntk.io's defaults: the default window, the
// whole file under 4 GiB) to its first minibatch of 256 samples, in a forked child; < 0: the child failed.
double first_minibatch_in_child(const cntkio::CtfOptions& options) {
  std::string config =
      "r = [ readerType = CNTKTextFormatReader ; file = \"" + options.file +
      "\" ; randomize = true ; traceLevel = 0 ; cacheIndex = " + (options.cache_index ? "true" : "false") +
      " ; input = [";
  for (const cntkio::CtfStreamOptions& s : options.streams) {
    config += " " + s.name + " = [ alias = " + (s.alias.empty() ? s.name : s.alias) +
              " ; dim = " + std::to_string(s.dim) +
              " ; format = " + (s.storage == cntkio::StorageFormat::kDense ? "dense" : "sparse") + " ]";
  }
  config += " ] ]\n";
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    double seconds = -1;
    try {
      const auto start = std::chrono::steady_clock::now();
      auto source = cntkio::MinibatchSource::from_config(cntkio::Config::from_text(config).get_block("r"));
      source->start_epoch(256, 0, cntkio::kFullSweep);
      cntkio::Minibatch mb;
      if (source->next_minibatch(mb) && !mb.keys.empty()) {
        seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
    }
    const ssize_t written = ::write(fds[1], &seconds, sizeof seconds);
    ::_exit(written == static_cast<ssize_t>(sizeof seconds) ? 0 : 1);
  }
  ::close(fds[1]);
  double seconds = -1;
  if (::read(fds[0], &seconds, sizeof seconds) != static_cast<ssize_t>(sizeof seconds)) seconds = -1;
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return seconds;
}

using bench::median;  // bench_util.hpp: the mean of the two middle values for an even count

}  // namespace

int main(int argc, char** argv) {
  double gigabytes = 1.0;
  double fixed_scale = 0;  // --scale: the generator's scale instead of the one that gives --gb
  int reps = 5;
  std::vector<std::string> datasets = {"dense", "sparse", "sequences"};
  std::string dir = (fs::temp_directory_path() / "cntkio_bench").string();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--gb" && has_value) {
      gigabytes = std::atof(argv[++i]);
    } else if (arg == "--reps" && has_value) {
      reps = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--scale" && has_value) {
      fixed_scale = std::atof(argv[++i]);
    } else if (arg == "--dataset" && has_value) {
      datasets = {argv[++i]};
    } else if (arg == "--dir" && has_value) {
      dir = argv[++i];
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--gb 1 | --scale S] [--reps 5] [--dataset dense|sparse|sequences] [--dir DIR]\n",
          argv[0]);
      return 2;
    }
  }
  fs::create_directories(dir);
  std::printf("%-10s %9s %10s %9s %13s %14s %8s %14s %14s %12s %12s %7s\n", "dataset", "file MB", "sequences",
              "cache MB", "cold index s", "cached open s", "ratio", "list cold s", "list cached s",
              "1st mb cold", "1st mb cache", "ratio");
  for (const std::string& name : datasets) {
    // The scale that gives about `gigabytes`, from the size of a small sample of the same generator.
    const bench::CtfDatasetSpec probe = bench::ctf_dataset_spec(name, 0.01);
    const std::string probe_path = dir + "/" + probe.file_name();
    if (!fs::exists(probe_path)) probe.generate(probe_path, probe.count);
    const double scale = fixed_scale > 0
                             ? fixed_scale
                             : gigabytes * 1e9 / (static_cast<double>(fs::file_size(probe_path)) / 0.01);
    const bench::CtfDatasetSpec spec = bench::ctf_dataset_spec(name, scale);
    const std::string path = dir + "/" + spec.file_name();
    if (!fs::exists(path)) {
      std::fprintf(stderr, "generating %s ...\n", path.c_str());
      spec.generate(path, spec.count);
    }
    cntkio::CtfOptions options;
    options.file = path;
    options.streams = spec.streams;
    options.trace_level = 0;
    options.cache_index = true;
    fs::remove(cntkio::ctf_cache_file_name(options));
    if (open_in_child(options).seconds < 0) return 1;  // writes the cache
    const std::string cache = cntkio::ctf_cache_file_name(options);
    std::vector<double> cold, cached, records, cold_listing, first_cold, first_cached;
    uint64_t sequences = 0;
    for (int r = 0; r < reps; ++r) {
      options.cache_index = false;
      const Open c = open_in_child(options);
      options.cache_index = true;
      const Open w = open_in_child(options);
      if (c.seconds < 0 || w.seconds < 0 || c.from_cache || !w.from_cache || !w.lazy || c.sequences == 0 ||
          c.sequences != w.sequences) {
        std::fprintf(stderr, "%s: the cached open did not use the cache or disagrees with the cold index\n",
                     name.c_str());
        return 1;
      }
      options.cache_index = false;
      first_cold.push_back(first_minibatch_in_child(options));
      options.cache_index = true;
      first_cached.push_back(first_minibatch_in_child(options));
      if (first_cold.back() < 0 || first_cached.back() < 0) return 1;
      cold.push_back(c.seconds);
      cached.push_back(w.seconds);
      records.push_back(w.records_seconds);
      cold_listing.push_back(c.records_seconds);
      sequences = c.sequences;
    }
    const double cold_s = median(cold), cached_s = median(cached);
    const double first_cold_s = median(first_cold), first_cached_s = median(first_cached);
    std::printf("%-10s %9.0f %10llu %9.1f %13.4f %14.4f %7.1fx %14.4f %14.4f %12.4f %12.4f %6.1fx\n",
                name.c_str(), static_cast<double>(fs::file_size(path)) / 1e6,
                static_cast<unsigned long long>(sequences), static_cast<double>(fs::file_size(cache)) / 1e6,
                cold_s, cached_s, cold_s / cached_s, median(cold_listing), median(records), first_cold_s,
                first_cached_s, first_cold_s / first_cached_s);
  }
  return 0;
}
