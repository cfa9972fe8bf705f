// CBF throughput: cntkio's CBF reader against a `cat`-style sequential read of the same file.
//
// The three datasets of ctf_throughput (same generator, bench/ctf_datasets.hpp) are converted to CBF
// (float, 32 MiB chunks, cntkio's converter) and then, single-threaded with the file in the page cache:
//   cbf   make_cbf_deserializer() + load_chunk() of every chunk + reading every value (and every sparse index
//         and nnz count) through Chunk::get_sequence, summed so nothing can be optimised away;
//   cat   open() + read() of the whole file in 128 KiB blocks into one buffer, as cat(1) does, nothing else.
//   gather  the least a randomized reader must do: with every chunk loaded (untimed), visit the sequences in
//         a random order (one permutation of all of them, as the default window of the block randomizer
//         allows), prefetch 16 sequences ahead (Chunk::prefetch_sequence) and copy each one's values,
//         indices and counts (get_sequence's views) into a 64 KiB buffer, as a packer copies them into a
//         minibatch. Sequential cat reads pages in order; a randomized reader cannot, so gather/cat is the
//         ceiling of `cntkio bench` / cat on this machine.
// Each figure is the median of --reps repetitions; MB = 10^6 bytes of the CBF file. The ratio cbf/cat is
// printed with its target (>= 0.5). The values read from the CBF file are checked against one (untimed)
// pass of the CTF reader over the source text: same count, same index sum, same value sum.
//
// Usage: cbf_throughput [--scale S] [--dir D] [--keep] [--reps N] [--datasets LIST] [--json]

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "cntkio/cbf.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "ctf_datasets.hpp"

namespace {

namespace fs = std::filesystem;
using bench::make_temp_dir;
using bench::median;
using bench::Seconds;
using bench::Stopwatch;
using bench::sum_floats;

struct Args {
  double scale = 1.0;
  std::string dir;
  bool keep = false;
  bool json = false;
  int reps = 3;
  std::vector<std::string> datasets = {"dense", "sparse", "sequences"};
};

void print_usage(std::FILE* to) {
  std::fprintf(to,
               "usage: cbf_throughput [--scale S] [--dir D] [--keep] [--reps N] [--datasets LIST] [--json]\n"
               "  --scale S      size factor of the generated data (default 1, as ctf_throughput)\n"
               "  --dir D        generate the files in D (default: a new temporary directory)\n"
               "  --keep         keep the generated files, and reuse files already in --dir\n"
               "  --reps N       timed repetitions per figure; the median is reported (default 3)\n"
               "  --datasets L   comma-separated subset of dense,sparse,sequences\n"
               "  --json         print one JSON line per dataset instead of the table\n");
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
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--reps") {
      args.reps = std::stoi(value());
      if (args.reps < 1) throw std::invalid_argument("--reps must be >= 1");
    } else if (a == "--datasets") {
      args.datasets.clear();
      const std::string list = value();
      size_t begin = 0;
      while (begin <= list.size()) {
        size_t end = list.find(',', begin);
        if (end == std::string::npos) end = list.size();
        if (end > begin) args.datasets.push_back(list.substr(begin, end - begin));
        begin = end + 1;
      }
      for (const auto& d : args.datasets) bench::ctf_dataset_spec(d, 1.0);  // validates the name
    } else if (a == "--help" || a == "-h") {
      print_usage(stdout);
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown argument " + a);
    }
  }
  return args;
}

// What a pass read.
struct Checks {
  uint64_t values = 0;
  uint64_t index_sum = 0;
  uint64_t count_sum = 0;  // sum of the sparse per-sample nnz counts (= number of sparse values)
  double value_sum = 0;
};

uint64_t sum_u32(const uint32_t* v, size_t n) {
  uint64_t acc[4] = {};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) acc[k] += v[i + k];
  }
  for (; i < n; ++i) acc[0] += v[i];
  return acc[0] + acc[1] + acc[2] + acc[3];
}

// Loads every chunk of `d` and reads every value, index and count it hands out.
Checks read_everything(cntkio::Deserializer& d) {
  Checks checks;
  const std::vector<cntkio::StreamInfo>& streams = d.streams();
  std::vector<cntkio::SequenceData> data;
  for (const cntkio::ChunkInfo& info : d.chunk_infos()) {
    cntkio::ChunkPtr chunk = d.load_chunk(info.id);
    for (size_t i = 0; i < info.number_of_sequences; ++i) {
      data.clear();
      chunk->get_sequence(static_cast<uint32_t>(i), data);
      for (size_t s = 0; s < streams.size(); ++s) {
        const cntkio::SequenceData& sd = data[s];
        size_t n;
        if (streams[s].storage == cntkio::StorageFormat::kSparseCsc) {
          n = sd.total_nnz;
          checks.index_sum += sum_u32(reinterpret_cast<const uint32_t*>(sd.indices), n);
          checks.count_sum += sum_u32(sd.nnz_counts, sd.number_of_samples);
        } else {
          n = static_cast<size_t>(sd.number_of_samples) * streams[s].sample_dim();
        }
        checks.value_sum += sum_floats(static_cast<const float*>(sd.values), n);
        checks.values += n;
      }
    }
  }
  return checks;
}

struct CbfPass {
  Seconds seconds;
  Checks checks;
  uint64_t chunks = 0;
  uint64_t sequences = 0;
};

CbfPass run_cbf(const std::string& path) {
  cntkio::CbfOptions options;
  options.file = path;
  options.trace_level = 0;
  CbfPass pass;
  const Stopwatch watch;
  {
    std::shared_ptr<cntkio::Deserializer> d = cntkio::make_cbf_deserializer(options);
    pass.checks = read_everything(*d);
    const cntkio::CbfHeader& h = cntkio::cbf_header(*d);
    pass.chunks = h.chunks.size();
    pass.sequences = h.total_sequences();
  }  // unmapping is part of the cost
  pass.seconds = watch.elapsed();
  return pass;
}

// cat(1): read() in 128 KiB blocks until EOF. Returns the bytes read.
uint64_t cat_file(const std::string& path, std::vector<char>& buffer) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0) {
      ::close(fd);
      throw std::runtime_error("cannot read " + path);
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return total;
}

// See the file comment: returns the seconds of the randomized gather and the bytes it copied.
std::pair<Seconds, uint64_t> run_gather(const std::string& path) {
  cntkio::CbfOptions options;
  options.file = path;
  options.trace_level = 0;
  std::shared_ptr<cntkio::Deserializer> d = cntkio::make_cbf_deserializer(options);
  const std::vector<cntkio::StreamInfo>& streams = d->streams();
  std::vector<cntkio::ChunkPtr> chunks;
  std::vector<std::pair<uint32_t, uint32_t>> order;  // (chunk, sequence in chunk)
  for (const cntkio::ChunkInfo& info : d->chunk_infos()) {
    chunks.push_back(d->load_chunk(info.id));
    for (uint32_t i = 0; i < info.number_of_sequences; ++i)
      order.emplace_back(static_cast<uint32_t>(chunks.size() - 1), i);
  }
  std::mt19937_64 engine(1);
  std::shuffle(order.begin(), order.end(), engine);
  std::vector<unsigned char> out(64 << 10);
  std::vector<cntkio::SequenceData> data;
  constexpr size_t kAhead = 16;
  uint64_t copied = 0;
  size_t at = 0;
  auto copy = [&](const void* from, size_t bytes) {
    if (bytes > out.size()) out.resize(bytes);
    if (at + bytes > out.size()) at = 0;  // the next minibatch's buffer
    std::memcpy(out.data() + at, from, bytes);
    at += bytes;
    copied += bytes;
  };
  const Stopwatch watch;
  for (size_t k = 0; k < order.size(); ++k) {
    if (k + kAhead < order.size())
      chunks[order[k + kAhead].first]->prefetch_sequence(order[k + kAhead].second);
    data.clear();
    chunks[order[k].first]->get_sequence(order[k].second, data);
    for (size_t s = 0; s < streams.size(); ++s) {
      const cntkio::SequenceData& sd = data[s];
      const size_t element = cntkio::element_size(streams[s].element_type);
      if (streams[s].storage == cntkio::StorageFormat::kSparseCsc) {
        copy(sd.values, sd.total_nnz * element);
        copy(sd.indices, sd.total_nnz * sizeof(int32_t));
        copy(sd.nnz_counts, sd.number_of_samples * sizeof(uint32_t));
      } else {
        copy(sd.values, static_cast<size_t>(sd.number_of_samples) * streams[s].sample_dim() * element);
      }
    }
  }
  const Seconds seconds = watch.elapsed();
  if (copied == 0 || out[0] == 0xFF) std::fprintf(stderr, "gather copied %llu bytes\n", 0ULL);  // keep `out`
  return {seconds, copied};
}

struct Result {
  std::string name;
  uint64_t ctf_bytes = 0;
  uint64_t cbf_bytes = 0;
  uint64_t chunks = 0;
  uint64_t sequences = 0;
  uint64_t values = 0;
  double convert_s = 0;
  double cbf_mbs = 0;
  double cat_mbs = 0;
  double gather_mbs = 0;  // MB of the CBF file per second of the randomized gather
  double ratio = 0;
  double cbf_cpu_mbs = 0;
  double cat_cpu_mbs = 0;
  double cpu_ratio = 0;
  bool checks_ok = false;
  std::string check_note;
};

constexpr double kTarget = 0.5;

Result measure(const std::string& name, const fs::path& dir, double scale, bool reuse, int reps, bool keep) {
  const bench::CtfDatasetSpec spec = bench::ctf_dataset_spec(name, scale);
  Result r;
  r.name = name;
  const std::string ctf = (dir / spec.file_name()).string();
  const std::string cbf = ctf.substr(0, ctf.size() - 4) + ".cbf";
  bool generated_ctf = false;
  if (!(reuse && fs::exists(ctf))) {
    std::fprintf(stderr, "generating %s ...\n", ctf.c_str());
    spec.generate(ctf, spec.count);
    generated_ctf = true;
  }
  r.ctf_bytes = fs::file_size(ctf);

  // The reference: what the CTF reader reads from the source text (untimed).
  cntkio::CtfOptions ctf_options;
  ctf_options.file = ctf;
  ctf_options.streams = spec.streams;
  ctf_options.trace_level = 0;
  Checks reference;
  {
    auto d = cntkio::make_ctf_deserializer(ctf_options);
    reference = read_everything(*d);
  }

  bool generated_cbf = false;
  if (!(reuse && fs::exists(cbf))) {
    std::fprintf(stderr, "converting to %s ...\n", cbf.c_str());
    cntkio::ConvertOptions options;
    options.to = cntkio::DataFormat::kCbf;
    options.element_type = cntkio::ElementType::kFloat;
    for (const auto& s : spec.streams)
      options.streams.push_back(cntkio::ConvertStream{s.name, s.name, s.dim, s.storage});
    const Stopwatch watch;
    cntkio::convert_file(ctf, cntkio::DataFormat::kCtf, cbf, options);
    r.convert_s = watch.elapsed().wall;
    generated_cbf = true;
  }
  r.cbf_bytes = fs::file_size(cbf);

  std::vector<char> buffer(128 << 10);
  cat_file(cbf, buffer);  // into the page cache
  std::vector<double> cbf_s, cat_s, cbf_cpu_s, cat_cpu_s, gather_s;
  CbfPass last;
  for (int rep = 0; rep < reps; ++rep) {
    last = run_cbf(cbf);
    const Stopwatch watch;
    const uint64_t bytes = cat_file(cbf, buffer);
    const Seconds cat = watch.elapsed();
    if (bytes != r.cbf_bytes) throw std::runtime_error("cat read " + std::to_string(bytes) + " bytes");
    gather_s.push_back(run_gather(cbf).first.wall);
    cbf_s.push_back(last.seconds.wall);
    cbf_cpu_s.push_back(last.seconds.cpu);
    cat_s.push_back(cat.wall);
    cat_cpu_s.push_back(cat.cpu);
    std::fprintf(stderr, "  %s rep %d: cbf %.4f s (cpu %.4f s), cat %.4f s (cpu %.4f s)\n", name.c_str(),
                 rep + 1, last.seconds.wall, last.seconds.cpu, cat.wall, cat.cpu);
  }
  const double mb = static_cast<double>(r.cbf_bytes) / 1e6;
  r.cbf_mbs = mb / median(cbf_s);
  r.cat_mbs = mb / median(cat_s);
  r.gather_mbs = mb / median(gather_s);
  r.ratio = r.cbf_mbs / r.cat_mbs;
  r.cbf_cpu_mbs = mb / median(cbf_cpu_s);
  r.cat_cpu_mbs = mb / median(cat_cpu_s);
  r.cpu_ratio = r.cbf_cpu_mbs / r.cat_cpu_mbs;
  r.chunks = last.chunks;
  r.sequences = last.sequences;
  r.values = last.checks.values;

  const Checks& a = last.checks;
  const Checks& b = reference;
  const double rel = std::fabs(a.value_sum - b.value_sum) / std::max(1.0, std::fabs(b.value_sum));
  r.checks_ok = a.values == b.values && a.index_sum == b.index_sum && a.count_sum == b.count_sum &&
                rel < 1e-9 && r.sequences == spec.count;
  char note[256];
  std::snprintf(
      note, sizeof note, "values %llu/%llu, index sums %llu/%llu, value sums %.6f/%.6f, sequences %llu/%llu",
      static_cast<unsigned long long>(a.values), static_cast<unsigned long long>(b.values),
      static_cast<unsigned long long>(a.index_sum), static_cast<unsigned long long>(b.index_sum), a.value_sum,
      b.value_sum, static_cast<unsigned long long>(r.sequences), static_cast<unsigned long long>(spec.count));
  r.check_note = note;
  if (!keep) {
    if (generated_ctf) fs::remove(ctf);
    if (generated_cbf) fs::remove(cbf);
  }
  return r;
}

void print_table(const std::vector<Result>& results, int reps) {
  std::printf(
      "cntkio CBF throughput: 1 thread, float, 32 MiB chunks, file in page cache, median of %d (MB = 10^6 "
      "bytes "
      "of the CBF file)\n\n",
      reps);
  std::printf("%-10s %8s %8s %6s %10s %11s %10s %10s %6s %6s %7s %12s %13s\n", "dataset", "CTF MB", "CBF MB",
              "chunks", "sequences", "values", "cbf MB/s", "cat MB/s", "ratio", "(cpu)", "target",
              "gather MB/s", "gather / cat");
  for (const Result& r : results) {
    std::printf("%-10s %8.1f %8.1f %6llu %10llu %11llu %10.0f %10.0f %5.2fx %5.2fx %7s %-6s %12.0f %12.2fx\n",
                r.name.c_str(), static_cast<double>(r.ctf_bytes) / 1e6,
                static_cast<double>(r.cbf_bytes) / 1e6, static_cast<unsigned long long>(r.chunks),
                static_cast<unsigned long long>(r.sequences), static_cast<unsigned long long>(r.values),
                r.cbf_mbs, r.cat_mbs, r.ratio, r.cpu_ratio, ">=0.5x", r.ratio >= kTarget ? "met" : "MISSED",
                r.gather_mbs, r.gather_mbs / r.cat_mbs);
  }
  std::printf(
      "\ncbf = make_cbf_deserializer + load_chunk of every chunk + reading every value, sparse index and nnz "
      "count;\ncat = read() of the whole file in 128 KiB blocks; ratio = cbf / cat from wall-clock time, "
      "(cpu) = "
      "the same from thread CPU time.\n");
  for (const Result& r : results) {
    std::printf("check %-10s %s: %s\n", r.name.c_str(), r.checks_ok ? "ok" : "MISMATCH",
                r.check_note.c_str());
  }
}

void print_json(const std::vector<Result>& results, int reps) {
  for (const Result& r : results) {
    std::printf(
        "{\"dataset\":\"%s\",\"ctf_bytes\":%llu,\"cbf_bytes\":%llu,\"chunks\":%llu,\"sequences\":%llu,"
        "\"values\":%llu,"
        "\"reps\":%d,\"cbf_mb_s\":%.1f,\"cat_mb_s\":%.1f,\"ratio\":%.3f,\"cbf_cpu_mb_s\":%.1f,\"cat_cpu_mb_"
        "s\":%.1f,"
        "\"cpu_ratio\":%.3f,\"gather_mb_s\":%.1f,\"target\":%.1f,\"target_met\":%s,\"checks_ok\":%s}\n",
        r.name.c_str(), static_cast<unsigned long long>(r.ctf_bytes),
        static_cast<unsigned long long>(r.cbf_bytes), static_cast<unsigned long long>(r.chunks),
        static_cast<unsigned long long>(r.sequences), static_cast<unsigned long long>(r.values), reps,
        r.cbf_mbs, r.cat_mbs, r.ratio, r.cbf_cpu_mbs, r.cat_cpu_mbs, r.cpu_ratio, r.gather_mbs, kTarget,
        r.ratio >= kTarget ? "true" : "false", r.checks_ok ? "true" : "false");
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    const bool own_dir = args.dir.empty();
    const fs::path dir = own_dir ? make_temp_dir() : fs::path(args.dir);
    if (!own_dir) fs::create_directories(dir);
    std::vector<Result> results;
    bool all_ok = true;
    try {
      for (const std::string& name : args.datasets) {
        results.push_back(measure(name, dir, args.scale, args.keep && !own_dir, args.reps, args.keep));
        all_ok = all_ok && results.back().checks_ok;
      }
    } catch (...) {
      if (own_dir && !args.keep) fs::remove_all(dir);
      throw;
    }
    if (own_dir && !args.keep) fs::remove_all(dir);
    if (args.keep) std::fprintf(stderr, "kept the data files in %s\n", dir.c_str());
    if (args.json) {
      print_json(results, args.reps);
    } else {
      print_table(results, args.reps);
    }
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cbf_throughput: %s (see --help)\n", e.what());
    return 2;
  }
}
