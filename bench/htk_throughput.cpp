// HTK throughput: frames per second cntkio delivers from an HTK feature corpus (SCP + archives) joined with
// MLF state labels, in frame mode with block randomization, next to `cat` of the same files.
//
// The program generates (fixed seed) a corpus of 39-dimensional float frames, about 1 GB at --scale 1:
// archives of up to 128 MiB holding utterances of 200-1000 frames, an SCP addressing them by frame range,
// an MLF with state alignments in 100 ns units (runs of 3-12 frames) and a state list. It then times, with
// the files in the page cache:
//   cat        `cat` of every archive, the SCP, the MLF and the state list to /dev/null (what the disk side
//   of
//              any reader must at least do);
//   open       MinibatchSource::from_config: reading the SCP and the first file header, indexing the MLF,
//              joining both by key (one lookup per frame in frame mode);
//   frame      one sweep in frame mode with block randomization (default window: the whole corpus, as
//              CNTK's composite reader), minibatches of --mb frames, every value and label read;
//   sequence   one sweep in sequence mode (whole utterances), randomized, for comparison.
// Each figure is the median of --reps repetitions. Frames/s = corpus frames / seconds. Every sweep checks
// that it delivered each frame once with its label (order-independent sums of the values' bits and of
// the class ids, compared with the generated ones), so nothing can be skipped or optimised away.
//
// Usage: htk_throughput [--scale S] [--dir D] [--keep] [--reps N] [--mb N] [--window SAMPLES] [--json]

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "cntkio/config.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/minibatch_source.hpp"

namespace {

namespace fs = std::filesystem;
using bench::Seconds;
// Process CPU time: the reader's loader threads work too.
struct Stopwatch : bench::Stopwatch {
  Stopwatch() : bench::Stopwatch(CLOCK_PROCESS_CPUTIME_ID) {}
};
using Clock = std::chrono::steady_clock;

constexpr size_t kDim = 39;
constexpr size_t kStates = 2000;
constexpr size_t kArchiveBytes = 128ull << 20;

struct Args {
  double scale = 1.0;
  std::string dir;
  bool keep = false;
  int reps = 3;
  size_t mb = 256;
  size_t window = 0;  // 0: the composite reader's default (whole corpus)
  bool json = false;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: htk_throughput [--scale S] [--dir D] [--keep] [--reps N] [--mb N] [--window SAMPLES] [--json]\n"
      "  --scale S        corpus size factor (default 1: about 1 GB of features, 6.4 million frames)\n"
      "  --dir D          generate the corpus in D (default: a new temporary directory)\n"
      "  --keep           keep the corpus, and reuse one already in --dir\n"
      "  --reps N         timed repetitions per figure; the median is reported (default 3)\n"
      "  --mb N           frames per minibatch in frame mode (default 256)\n"
      "  --window SAMPLES sample-based randomization window (default: the whole corpus)\n"
      "  --json           one JSON line instead of the table\n");
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--scale") {
      args.scale = std::stod(value());
      if (!(args.scale > 0)) throw std::invalid_argument("--scale must be > 0");
    } else if (a == "--dir") {
      args.dir = value();
    } else if (a == "--keep") {
      args.keep = true;
    } else if (a == "--reps") {
      args.reps = std::stoi(value());
      if (args.reps < 1) throw std::invalid_argument("--reps must be >= 1");
    } else if (a == "--mb") {
      args.mb = std::stoul(value());
      if (args.mb == 0) throw std::invalid_argument("--mb must be > 0");
    } else if (a == "--window") {
      args.window = std::stoul(value());
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown option " + a);
    }
  }
  return args;
}

// xorshift64*: fast and fixed.
struct Rng {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 2685821657736338717ull;
  }
};

uint64_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

struct Corpus {
  fs::path dir;
  std::vector<std::string> files;  // everything a reader must read
  uint64_t frames = 0;
  uint64_t bytes = 0;
  uint64_t value_bits_sum = 0;  // sum over all frames and dims of the float bit patterns
  uint64_t class_sum = 0;       // sum over all frames of the class id
  std::string scp, mlf, states;
};

// Writes the corpus, or (with --keep and an existing manifest) reuses it.
Corpus make_corpus(const fs::path& dir, double scale, bool reuse) {
  Corpus c;
  c.dir = dir;
  c.scp = (dir / "feats.scp").string();
  c.mlf = (dir / "labels.mlf").string();
  c.states = (dir / "states.list").string();
  const fs::path manifest = dir / "manifest.txt";
  if (reuse && fs::exists(manifest)) {
    std::ifstream in(manifest);
    double stored_scale = 0;
    in >> stored_scale >> c.frames >> c.value_bits_sum >> c.class_sum;
    std::string f;
    while (in >> f) c.files.push_back(f);
    if (stored_scale == scale) {
      for (const std::string& file : c.files) c.bytes += fs::file_size(file);
      return c;
    }
    c = Corpus{dir, {}, 0, 0, 0, 0, c.scp, c.mlf, c.states};
  }
  fs::create_directories(dir);
  Rng rng;
  const uint64_t target_frames = static_cast<uint64_t>(scale * 1e9 / (kDim * 4));
  std::string states;
  for (size_t s = 0; s < kStates; ++s) states += "s" + std::to_string(s) + "\n";
  std::ofstream(c.states) << states;

  std::string scp, mlf = "#!MLF!#\n";
  std::vector<float> archive;
  size_t archive_index = 0;
  auto flush_archive = [&]() {
    if (archive.empty()) return;
    const std::string path = (dir / ("part" + std::to_string(archive_index++) + ".ark")).string();
    cntkio::HtkWriteOptions w;
    w.kind = cntkio::HtkBaseKind::kMfcc;
    w.qualifiers = 0100 | 0400 | 01000;  // MFCC_E_D_A
    cntkio::write_htk_file(path, archive.data(), archive.size() / kDim, kDim, w);
    c.files.push_back(path);
    archive.clear();
  };
  char line[96];
  size_t utterance = 0;
  while (c.frames < target_frames) {
    const uint64_t frames =
        std::min<uint64_t>(200 + rng.next() % 801, std::max<uint64_t>(target_frames - c.frames, 1));
    if ((archive.size() + frames * kDim) * 4 > kArchiveBytes) flush_archive();
    const size_t first = archive.size() / kDim;
    for (uint64_t i = 0; i < frames * kDim; ++i) {
      const float v = static_cast<float>(static_cast<int64_t>(rng.next() % 8000) - 4000) / 1000.0f;
      archive.push_back(v);
      c.value_bits_sum += float_bits(v);
    }
    const std::string key = "spk" + std::to_string(utterance / 50) + "/utt" + std::to_string(utterance);
    scp += key + ".mfc=" + (dir / ("part" + std::to_string(archive_index) + ".ark")).string() + "[" +
           std::to_string(first) + "," + std::to_string(first + frames - 1) + "]\n";
    mlf += "\"" + key + ".lab\"\n";
    for (uint64_t t = 0; t < frames;) {
      const uint64_t n = std::min<uint64_t>(3 + rng.next() % 10, frames - t);
      const uint64_t state = rng.next() % kStates;
      const int len = std::snprintf(
          line, sizeof line, "%llu %llu s%llu\n", static_cast<unsigned long long>(t * 100000),
          static_cast<unsigned long long>((t + n) * 100000), static_cast<unsigned long long>(state));
      mlf.append(line, static_cast<size_t>(len));
      c.class_sum += state * n;  // the state list is s0, s1, ... in order
      t += n;
    }
    mlf += ".\n";
    c.frames += frames;
    ++utterance;
  }
  flush_archive();
  std::ofstream(c.scp) << scp;
  std::ofstream(c.mlf) << mlf;
  c.files.push_back(c.scp);
  c.files.push_back(c.mlf);
  c.files.push_back(c.states);
  for (const std::string& file : c.files) c.bytes += fs::file_size(file);
  std::ofstream out(manifest);
  out << scale << ' ' << c.frames << ' ' << c.value_bits_sum << ' ' << c.class_sum << '\n';
  for (const std::string& f : c.files) out << f << '\n';
  return c;
}

Seconds time_cat(const Corpus& c) {
  std::string command = "cat";
  for (const std::string& f : c.files) command += " '" + f + "'";
  command += " > /dev/null";
  // Children's CPU time is not in this process's clock: measure wall time, and the children's CPU with
  // getrusage.
  rusage before{}, after{};
  ::getrusage(RUSAGE_CHILDREN, &before);
  const auto start = Clock::now();
  if (std::system(command.c_str()) != 0) throw std::runtime_error("cat failed");
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  ::getrusage(RUSAGE_CHILDREN, &after);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
  };
  const double cpu =
      secs(after.ru_utime) - secs(before.ru_utime) + secs(after.ru_stime) - secs(before.ru_stime);
  return Seconds{wall, cpu};
}

std::string reader_text(const Corpus& c, bool frame_mode, const Args& args) {
  std::string window = args.window ? "randomizationWindow = " + std::to_string(args.window) + "\n" : "";
  return "reader = [\nrandomize = true\n" + window + "frameMode = " + (frame_mode ? "true" : "false") +
         "\ntraceLevel = 0\ndeserializers = (\n[ type = \"HTKFeatureDeserializer\"\n input = [ features = [ "
         "dim = " +
         std::to_string(kDim) + "\n scpFile = \"" + c.scp +
         "\" ] ] ]:\n[ type = \"HTKMLFDeserializer\"\n input = [ "
         "labels = [ mlfFile = \"" +
         c.mlf + "\"\n labelMappingFile = \"" + c.states + "\"\n labelDim = " + std::to_string(kStates) +
         " ] ] ]\n)\n]\n";
}

struct SweepResult {
  Seconds open;
  Seconds sweep;
};

// Opens a reader and reads one sweep, checking that every frame and label arrived once.
SweepResult read_sweep(const Corpus& c, bool frame_mode, const Args& args) {
  SweepResult r;
  Stopwatch open;
  auto source = cntkio::MinibatchSource::from_config(
      cntkio::Config::from_text(reader_text(c, frame_mode, args)).get_block("reader"));
  r.open = open.elapsed();
  Stopwatch sweep;
  source->start_epoch(frame_mode ? args.mb : 16 * args.mb, 0, cntkio::kFullSweep);
  cntkio::Minibatch mb;
  uint64_t frames = 0, bits = 0, classes = 0;
  while (source->next_minibatch(mb)) {
    const cntkio::StreamBatch& f = mb.streams[0];
    const cntkio::StreamBatch& l = mb.streams[1];
    const float* values = f.data<float>();
    for (size_t col = 0; col < f.layout.num_columns(); ++col) {
      if (!frame_mode && f.layout.is_gap(col % f.layout.num_parallel, col / f.layout.num_parallel)) continue;
      for (size_t k = 0; k < kDim; ++k) bits += float_bits(values[col * kDim + k]);
      ++frames;
    }
    for (size_t i = 0; i < l.row_indices.size(); ++i) classes += static_cast<uint64_t>(l.row_indices[i]);
  }
  r.sweep = sweep.elapsed();
  if (frames != c.frames || bits != c.value_bits_sum || classes != c.class_sum) {
    throw std::runtime_error("check failed: read " + std::to_string(frames) + " of " +
                             std::to_string(c.frames) +
                             " frames, or values/labels differ from the generated ones");
  }
  return r;
}

using bench::median;  // bench_util.hpp: the mean of the two middle values for an even count

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    const bool temporary = args.dir.empty();
    const fs::path dir = temporary
                             ? fs::temp_directory_path() / ("cntkio_htk_bench_" + std::to_string(::getpid()))
                             : fs::path(args.dir);
    std::fprintf(stderr, "generating the corpus in %s ...\n", dir.c_str());
    Stopwatch generation;
    const Corpus corpus = make_corpus(dir, args.scale, args.keep);
    std::fprintf(stderr, "  %llu frames, %.1f MB in %zu files (%.1f s)\n",
                 static_cast<unsigned long long>(corpus.frames), static_cast<double>(corpus.bytes) / 1e6,
                 corpus.files.size(), generation.elapsed().wall);
    time_cat(corpus);  // warm the page cache

    std::vector<double> cat_wall, open_wall, frame_wall, frame_cpu, seq_wall, seq_cpu;
    for (int rep = 0; rep < args.reps; ++rep) {
      const Seconds cat = time_cat(corpus);
      cat_wall.push_back(cat.wall);
      const SweepResult frame = read_sweep(corpus, true, args);
      open_wall.push_back(frame.open.wall);
      frame_wall.push_back(frame.sweep.wall);
      frame_cpu.push_back(frame.sweep.cpu);
      const SweepResult seq = read_sweep(corpus, false, args);
      seq_wall.push_back(seq.sweep.wall);
      seq_cpu.push_back(seq.sweep.cpu);
      std::fprintf(
          stderr, "  rep %d: cat %.2f s, open %.2f s, frame sweep %.2f s (cpu %.2f), sequence sweep %.2f s\n",
          rep + 1, cat.wall, frame.open.wall, frame.sweep.wall, frame.sweep.cpu, seq.sweep.wall);
    }
    const double frames = static_cast<double>(corpus.frames);
    const double mb = static_cast<double>(corpus.bytes) / 1e6;
    const double cat_s = median(cat_wall), open_s = median(open_wall), frame_s = median(frame_wall),
                 seq_s = median(seq_wall);
    if (args.json) {
      std::printf(
          "{\"frames\":%.0f,\"mb\":%.1f,\"cat_s\":%.3f,\"open_s\":%.3f,\"frame_sweep_s\":%.3f,"
          "\"frame_sweep_cpu_s\":%.3f,\"sequence_sweep_s\":%.3f,\"cat_frames_per_s\":%.0f,"
          "\"frame_frames_per_s\":%.0f,\"frame_with_open_frames_per_s\":%.0f,\"sequence_frames_per_s\":%.0f}"
          "\n",
          frames, mb, cat_s, open_s, frame_s, median(frame_cpu), seq_s, frames / cat_s, frames / frame_s,
          frames / (open_s + frame_s), frames / seq_s);
    } else {
      std::printf("corpus: %.0f frames x %zu values, %.1f MB (features, SCP, MLF, state list)\n", frames,
                  kDim, mb);
      std::printf("%-32s %10s %14s %10s\n", "", "seconds", "frames/s", "MB/s");
      std::printf("%-32s %10.2f %14.0f %10.0f\n", "cat", cat_s, frames / cat_s, mb / cat_s);
      std::printf("%-32s %10.2f %14s %10s\n", "open (SCP, MLF index, join)", open_s, "", "");
      std::printf("%-32s %10.2f %14.0f %10.0f\n", "frame mode, block randomized", frame_s, frames / frame_s,
                  mb / frame_s);
      std::printf("%-32s %10.2f %14.0f %10.0f\n", "  incl. open", open_s + frame_s,
                  frames / (open_s + frame_s), mb / (open_s + frame_s));
      std::printf("%-32s %10.2f %14.0f %10.0f\n", "sequence mode, randomized", seq_s, frames / seq_s,
                  mb / seq_s);
      std::printf("frame mode / cat: %.2fx (cpu: frame sweep %.2f s for %.2f s wall)\n", cat_s / frame_s,
                  median(frame_cpu), frame_s);
      std::printf("check ok: every frame and label delivered once per sweep\n");
    }
    if (!args.keep) {  // only what this program wrote
      for (const std::string& f : corpus.files) fs::remove(f);
      fs::remove(dir / "manifest.txt");
      if (fs::is_empty(dir)) fs::remove(dir);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "htk_throughput: %s\n", e.what());
    return 1;
  }
}
