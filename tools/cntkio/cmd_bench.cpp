// `cntkio bench`: read whole sweeps of a reader section as fast as possible and report the throughput.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "commands.hpp"
#include "config/data_files.hpp"
#include "core/data_files.hpp"

namespace cntkio::cli {
namespace {

struct BenchArgs {
  std::string config_file;
  std::string section;
  std::string ctf_file;
  std::vector<std::string> streams;  // name:field:dim[:sparse]
  bool file_order = false;
  std::string reader_section = "reader";
  std::vector<std::string> overrides;
  size_t sweeps = 1;
  size_t mb_size = 256;
  int threads = -1;
  std::string chunk_cache;  // chunkCacheBytes: a byte count or a size such as 4GiB
  bool json = false;
};

double peak_rss_mb() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Bytes of the input files a reader section names (`file` and `fileList` keys of the reader and its
// deserializers: one file, an array, glob patterns, a list file).
uint64_t input_bytes(const Config& reader) {
  std::set<std::string> files;
  auto add = [&files](const Config& section) {
    if (!section.exists_current("file") && !section.exists_current("fileList")) return;
    try {
      std::string file, list;
      std::vector<std::string> more;
      config_detail::data_files_from_config(section, file, more, list);
      for (std::string& f : core::expand_data_files(file, more, list, section.path()))
        files.insert(std::move(f));
    } catch (const Error&) {
      // files the reader cannot name or open either: the run reports them
    }
  };
  add(reader);
  if (reader.exists_current("deserializers")) {
    for (const Config& d : reader.get_block_array("deserializers")) add(d);
  }
  uint64_t bytes = 0;
  for (const std::string& f : files) {
    try {
      bytes += Env::current()->file_identity(f).size;
    } catch (const Error&) {
      // a file the reader cannot open either: the run reports it
    }
  }
  return bytes;
}

// The reader section `MinibatchSource(CTFDeserializer(file, streams))` of cntk.io reads (its defaults: a
// randomization window of 128 chunks, CTF's 32 MiB chunks), for --ctf and --stream name:field:dim[:sparse].
std::string ctf_reader_text(const BenchArgs& a) {
  if (a.ctf_file.find_first_of("\"\n\r$") != std::string::npos ||
      a.ctf_file.find(" #") != std::string::npos || a.ctf_file.find("\t#") != std::string::npos) {
    throw UsageError("--ctf: the file name " + a.ctf_file +
                     " holds what a reader config cannot quote (\", $, a line break, or a blank before #, "
                     "which starts a comment); rename the file or link to it");
  }
  std::string inputs;
  for (const std::string& spec : a.streams) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t colon; (colon = spec.find(':', start)) != std::string::npos; start = colon + 1) {
      parts.push_back(spec.substr(start, colon - start));
    }
    parts.push_back(spec.substr(start));
    const bool sparse = parts.size() == 4 && parts[3] == "sparse";
    const bool dense = parts.size() == 4 && parts[3] == "dense";
    const auto valid_name = [](const std::string& n) {
      return !n.empty() &&
             std::all_of(n.begin(), n.end(), [](unsigned char c) { return std::isalnum(c) || c == '_'; });
    };
    if ((parts.size() != 3 && !sparse && !dense) || !valid_name(parts[0]) || !valid_name(parts[1]) ||
        parts[2].empty() || !std::all_of(parts[2].begin(), parts[2].end(), ::isdigit) || parts[2] == "0" ||
        parts[2].size() > 9) {
      throw UsageError(
          "--stream " + spec +
          ": expected name:field:dim[:sparse] (name and field of letters, digits or _, dim a positive "
          "count), e.g. labels:y:10:sparse");
    }
    inputs += "      " + parts[0] + " = [ alias = " + parts[1] + " ; dim = " + parts[2] +
              " ; format = " + (sparse ? "sparse" : "dense") + " ]\n";
  }
  return "reader = [\n  randomize = " + std::string(a.file_order ? "false" : "true") +
         "\n  randomizationWindow = 128\n  sampleBasedRandomizationWindow = false\n"
         "  deserializers = ( [\n    type = CNTKTextFormatDeserializer\n    file = \"" +
         a.ctf_file + "\"\n    input = [\n" + inputs + "    ]\n  ] )\n]\n";
}

Config bench_reader(const BenchArgs& a) {
  std::vector<std::string> overrides = a.overrides;
  if (!a.ctf_file.empty()) {
    if (a.streams.empty()) throw UsageError("--ctf needs at least one --stream name:field:dim[:sparse]");
    return Config::from_text(ctf_reader_text(a), "--ctf", overrides).get_block("reader");
  }
  if (a.config_file.empty() || a.section.empty()) {
    throw UsageError("bench needs --config and --section, or --ctf with --stream");
  }
  if (!a.streams.empty() || a.file_order) {  // the config's reader section says both
    throw UsageError(std::string(a.streams.empty() ? "--file-order" : "--stream") +
                     " goes with --ctf; with --config the reader section names the streams and the order");
  }
  Config root = Config::from_files({a.config_file}, overrides);
  return root.get_block(a.section).get_block(a.reader_section);
}

// The JSON fields of where the time went (after the throughput's): sweep times, stage times, the loader
// threads' busy time and utilisation, and the chunk cache's figures.
std::string stats_json(const SourceStats& s, const std::vector<double>& sweep_seconds, double seconds) {
  std::string out = "\"sweep_seconds\": [";
  char buffer[256];
  for (size_t i = 0; i < sweep_seconds.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, "%s%.6f", i == 0 ? "" : ", ", sweep_seconds[i]);
    out += buffer;
  }
  std::snprintf(
      buffer, sizeof buffer,
      "], \"stages\": {\"index_s\": %.6f, \"load_s\": %.6f, \"randomize_s\": %.6f, \"pack_s\": %.6f, "
      "\"chunk_wait_s\": %.6f, \"minibatch_wait_s\": %.6f}, \"loader_threads\": [",
      s.index_s, s.load_s, s.randomize_s, s.pack_s, s.chunk_wait_s, s.minibatch_wait_s);
  out += buffer;
  for (size_t i = 0; i < s.loader_busy_s.size(); ++i) {
    std::snprintf(buffer, sizeof buffer, "%s{\"busy_s\": %.6f, \"utilisation\": %.4f}", i == 0 ? "" : ", ",
                  s.loader_busy_s[i], seconds > 0 ? s.loader_busy_s[i] / seconds : 0.0);
    out += buffer;
  }
  const SourceStats::ChunkCache& c = s.chunk_cache;
  std::snprintf(
      buffer, sizeof buffer,
      "], \"chunk_cache\": {\"budget_bytes\": %llu, \"bytes\": %llu, \"chunks\": %llu, \"hits\": %llu, "
      "\"misses\": %llu, \"invalidations\": %llu}",
      static_cast<unsigned long long>(c.budget_bytes), static_cast<unsigned long long>(c.bytes),
      static_cast<unsigned long long>(c.chunks), static_cast<unsigned long long>(c.hits),
      static_cast<unsigned long long>(c.misses), static_cast<unsigned long long>(c.invalidations));
  return out + buffer;
}

void print_stats(const SourceStats& s, const std::vector<double>& sweep_seconds, double seconds) {
  if (sweep_seconds.size() > 1) {
    std::printf("sweeps:");
    for (double t : sweep_seconds) std::printf(" %.3f s", t);
    std::printf(" (the first %.1fx the last)\n",
                sweep_seconds.back() > 0 ? sweep_seconds.front() / sweep_seconds.back() : 0.0);
  }
  std::printf("stages: index %.3f s, load/parse %.3f s (all threads), randomize %.3f s, pack %.3f s\n",
              s.index_s, s.load_s, s.randomize_s, s.pack_s);
  std::printf("waiting: for chunks %.3f s, for minibatches %.3f s\n", s.chunk_wait_s, s.minibatch_wait_s);
  if (!s.loader_busy_s.empty()) {
    std::printf("loader threads busy:");
    for (double busy : s.loader_busy_s) std::printf(" %.0f%%", seconds > 0 ? 100.0 * busy / seconds : 0.0);
    std::printf(" of %.3f s\n", seconds);
  }
  const SourceStats::ChunkCache& c = s.chunk_cache;
  if (c.budget_bytes > 0) {
    std::printf(
        "chunk cache: %llu chunk(s), %.1f of %.1f MB, %llu hit(s), %llu miss(es), %llu invalidation(s)\n",
        static_cast<unsigned long long>(c.chunks), static_cast<double>(c.bytes) / 1e6,
        static_cast<double>(c.budget_bytes) / 1e6, static_cast<unsigned long long>(c.hits),
        static_cast<unsigned long long>(c.misses), static_cast<unsigned long long>(c.invalidations));
  }
}

int run_bench(const BenchArgs& a) {
  Config reader = bench_reader(a);
  if (a.threads >= 0) reader.set("loaderThreads", std::to_string(a.threads));
  if (!a.chunk_cache.empty()) reader.set("chunkCacheBytes", a.chunk_cache);
  const size_t threads = reader.get_uint("loaderThreads", std::max(1u, std::thread::hardware_concurrency()));
  const uint64_t bytes_per_sweep = input_bytes(reader);
  const bool progress = !a.json && ::isatty(STDERR_FILENO);

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::unique_ptr<MinibatchSource> source =
      a.ctf_file.empty() ? MinibatchSource::from_config(reader)
                         : from_options("the reader of --ctf and --stream",
                                        [&] { return MinibatchSource::from_config(reader); });
  source->set_v2_limits(kInfinitelyRepeat, a.sweeps);
  Minibatch mb;
  double first_minibatch_s = 0;
  uint64_t samples = 0, sequences = 0, minibatches = 0, sweeps_done = 0;
  std::vector<double> sweep_seconds;  // each sweep's time (the first from the start, creation included)
  auto sweep_start = start;
  while (source->next_minibatch_v2(a.mb_size, 1, 0, mb)) {
    if (minibatches++ == 0) first_minibatch_s = std::chrono::duration<double>(Clock::now() - start).count();
    sequences += mb.keys.size();
    size_t longest = 0;
    for (const StreamBatch& s : mb.streams) longest = std::max(longest, s.layout.num_samples());
    samples += longest;
    if (mb.end_of_sweep) {
      ++sweeps_done;
      const auto now = Clock::now();
      sweep_seconds.push_back(std::chrono::duration<double>(now - sweep_start).count());
      sweep_start = now;
    }
    if (progress && minibatches % 64 == 0) {
      std::fprintf(stderr, "\rbench: sweep %zu/%zu, %llu minibatches, %llu samples",
                   static_cast<size_t>(sweeps_done + 1), a.sweeps,
                   static_cast<unsigned long long>(minibatches), static_cast<unsigned long long>(samples));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (progress) std::fprintf(stderr, "\r%*s\r", 70, "");
  // What maxErrors let through is never silent (as dump, inspect and convert do).
  const SkipReport skipped = source->skip_report();
  if (!skipped.empty()) std::fprintf(stderr, "warning: %s\n", skipped.to_string().c_str());
  const double mb_per_s =
      static_cast<double>(bytes_per_sweep) * static_cast<double>(a.sweeps) / 1e6 / seconds;
  const SourceStats stats = source->stats();
  if (a.json) {
    std::printf(
        "{\"mb_per_s\": %.3f, \"samples_per_s\": %.1f, \"sequences_per_s\": %.1f, \"seconds\": %.6f, "
        "\"first_minibatch_s\": %.6f, \"peak_rss_mb\": %.1f, \"threads\": %zu, \"sweeps\": %zu, \"samples\": "
        "%llu, "
        "\"sequences\": %llu, \"minibatches\": %llu, \"input_bytes_per_sweep\": %llu, %s}\n",
        mb_per_s, static_cast<double>(samples) / seconds, static_cast<double>(sequences) / seconds, seconds,
        first_minibatch_s, peak_rss_mb(), threads, a.sweeps, static_cast<unsigned long long>(samples),
        static_cast<unsigned long long>(sequences), static_cast<unsigned long long>(minibatches),
        static_cast<unsigned long long>(bytes_per_sweep), stats_json(stats, sweep_seconds, seconds).c_str());
  } else {
    std::printf("read %zu sweep(s): %llu samples, %llu sequences in %llu minibatches of %zu samples\n",
                a.sweeps, static_cast<unsigned long long>(samples),
                static_cast<unsigned long long>(sequences), static_cast<unsigned long long>(minibatches),
                a.mb_size);
    std::printf("time %.3f s (first minibatch after %.3f s), %zu loader thread(s)\n", seconds,
                first_minibatch_s, threads);
    std::printf("%.1f MB/s of input, %.0f samples/s, %.0f sequences/s, peak RSS %.1f MB\n", mb_per_s,
                static_cast<double>(samples) / seconds, static_cast<double>(sequences) / seconds,
                peak_rss_mb());
    print_stats(stats, sweep_seconds, seconds);
  }
  return 0;
}

}  // namespace

Command add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Read whole sweeps of a reader section and report the throughput");
  cmd->footer(
      "Reads with cntk.io's v2 semantics (minibatches cross sweep boundaries). Without a config file: --ctf "
      "FILE "
      "--stream features:x:3 --stream labels:y:10:sparse reads FILE randomized with cntk.io's defaults "
      "(a window of 128 chunks, seed 0). MB/s counts the bytes of the "
      "files named by `file` keys once per sweep. --json prints one line with mb_per_s, samples_per_s, "
      "sequences_per_s, seconds, first_minibatch_s, peak_rss_mb and threads, then where the time went: "
      "sweep_seconds, stages (index_s, load_s, randomize_s, pack_s, chunk_wait_s, minibatch_wait_s), "
      "loader_threads (busy_s, utilisation) and chunk_cache (budget_bytes, bytes, chunks, hits, misses, "
      "invalidations).");
  CLI::Option* config = cmd->add_option("--config", args->config_file, "CNTK config file");
  cmd->add_option("--section", args->section, "Top-level block that holds the reader (with --config)");
  CLI::Option* ctf =
      cmd->add_option("--ctf", args->ctf_file,
                      "A CTF file to read as cntk.io's MinibatchSource(CTFDeserializer(...)) does, "
                      "instead of --config");
  ctf->excludes(config);
  cmd->add_option("--stream", args->streams,
                  "With --ctf: a stream as name:field:dim or name:field:dim:sparse (repeatable)");
  cmd->add_flag("--file-order", args->file_order, "With --ctf: read in file order (randomize = false)");
  cmd->add_option("--reader-section", args->reader_section, "Reader block inside the section")
      ->default_val("reader");
  cmd->add_option("--set", args->overrides, "Config override key=value (repeatable, applied in order)");
  cmd->add_option("--sweeps", args->sweeps, "Sweeps to read")
      ->default_val(1)
      ->check(positive_count_validator());
  cmd->add_option("--mb-size", args->mb_size, "Samples per minibatch")
      ->default_val(256)
      ->check(positive_count_validator());
  cmd->add_option("--threads", args->threads,
                  "Chunk-loading threads (default: the reader's loaderThreads, or nproc)")
      ->check(count_validator());
  cmd->add_option("--chunk-cache", args->chunk_cache,
                  "Keep decoded chunks in memory for later sweeps, up to SIZE bytes of data (e.g. 4GiB; the "
                  "reader's chunkCacheBytes)")
      ->type_name("SIZE")
      ->check(byte_size_validator());
  cmd->add_flag("--json", args->json, "Print one JSON line");
  return Command{cmd, [args]() { return run_bench(*args); }};
}

}  // namespace cntkio::cli
