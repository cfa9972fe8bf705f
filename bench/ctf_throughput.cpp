// CTF throughput: cntkio's indexer + parser against a minimal fast_float tokenizer, on the same bytes.
//
// For each of three generated files (dense, sparse, sequences) the program measures, single-threaded and
// with the file in the page cache:
//   index      make_ctf_deserializer() alone (maps the file, builds the sequence index and the chunks);
//   cntkio     index + load_chunk() of every chunk + reading every value through Chunk::get_sequence;
//   fast_float a reference loop that maps the file, skips `|name`, splits on blanks, `:` and newlines, reads
//              ids and sparse indices with a digit loop and every value with fast_float::from_chars (float),
//              and sums them: the practical limit of a text parser that produces the same numbers.
// Each figure is the median of --reps repetitions; MB = 10^6 bytes. The ratio cntkio/fast_float is printed
// with its target from issue #9 (>= 1.3 dense, >= 1.1 sparse, >= 0.8 sequences). Both sides sum what they
// read, and the sums and counts are compared, so neither can be optimised away and both read the same
// numbers.
//
// Usage: ctf_throughput [--scale S] [--dir D] [--keep] [--reps N] [--datasets LIST] [--json]
// (--help explains the options; bench/README.md has figures measured with it).

#include <fast_float/fast_float.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "cntkio/ctf.hpp"
#include "ctf_datasets.hpp"

namespace {

namespace fs = std::filesystem;
using bench::make_temp_dir;
using bench::median;
using bench::Seconds;
using bench::Stopwatch;
using bench::sum_floats;

// ----------------------------------------------------------------------------------------------------
// Command line

struct Args {
  double scale = 1.0;
  std::string dir;
  bool keep = false;
  bool json = false;
  int reps = 3;
  size_t threads = 1;  // > 1: also time cntkio with CtfOptions::parse_threads = threads
  std::vector<std::string> datasets = {"dense", "sparse", "sequences"};
};

void print_usage(std::FILE* to) {
  std::fprintf(
      to,
      "usage: ctf_throughput [--scale S] [--dir D] [--keep] [--reps N] [--threads N] [--datasets LIST]"
      " [--json]\n"
      "  --scale S      size factor of the generated files (default 1: about 70-160 MB each)\n"
      "  --dir D        generate the files in D (default: a new temporary directory)\n"
      "  --keep         keep the generated files, and reuse files already in --dir\n"
      "  --reps N       timed repetitions per figure; the median is reported (default 3)\n"
      "  --threads N    also time cntkio indexing the file and parsing each chunk on N threads\n"
      "                 (index_threads = parse_threads = N; 0 = the hardware threads); the 1-thread\n"
      "                 figures are still taken\n"
      "  --datasets L   comma-separated subset of dense,sparse,sequences\n"
      "  --json         print one JSON line per dataset instead of the table\n");
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](auto convert) {
      const std::string text = value();
      try {
        return convert(text);
      } catch (const std::exception&) {
        throw std::invalid_argument(a + " needs a number, not '" + text + "'");
      }
    };
    if (a == "--scale") {
      args.scale = number([](const std::string& t) { return std::stod(t); });
      if (!(args.scale > 0)) throw std::invalid_argument("--scale must be > 0");
    } else if (a == "--dir") {
      args.dir = value();
    } else if (a == "--keep") {
      args.keep = true;
    } else if (a == "--json") {
      args.json = true;
    } else if (a == "--reps") {
      args.reps = number([](const std::string& t) { return std::stoi(t); });
      if (args.reps < 1) throw std::invalid_argument("--reps must be >= 1");
    } else if (a == "--threads") {
      const int n = number([](const std::string& t) { return std::stoi(t); });
      if (n < 0) throw std::invalid_argument("--threads must be >= 0");
      args.threads = n == 0 ? std::max(1u, std::thread::hardware_concurrency()) : static_cast<size_t>(n);
    } else if (a == "--datasets") {
      args.datasets = split_list(value());
      for (const auto& d : args.datasets) {
        if (d != "dense" && d != "sparse" && d != "sequences")
          throw std::invalid_argument("unknown dataset " + d);
      }
    } else if (a == "--help" || a == "-h") {
      print_usage(stdout);
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown argument " + a);
    }
  }
  return args;
}

// ----------------------------------------------------------------------------------------------------
// Data generation

struct Dataset {
  std::string name;
  std::string path;
  std::vector<cntkio::CtfStreamOptions> streams;
  double target = 1.0;  // minimum cntkio/fast_float ratio we aim for (issue #9)
  uint64_t sequences = 0;
  bool generated = false;  // whether this run wrote the file (and so removes it unless --keep)
};

Dataset make_dataset(const std::string& name, const fs::path& dir, double scale, bool reuse) {
  const bench::CtfDatasetSpec spec = bench::ctf_dataset_spec(name, scale);
  Dataset d;
  d.name = name;
  d.streams = spec.streams;
  d.target = name == "dense" ? 1.3 : name == "sparse" ? 1.1 : 0.8;
  const uint64_t count = spec.count;
  void (*generate)(const std::string&, uint64_t) = spec.generate;
  d.sequences = count;
  d.path = (dir / spec.file_name()).string();
  if (!(reuse && fs::exists(d.path))) {
    std::fprintf(stderr, "generating %s ...\n", d.path.c_str());
    generate(d.path, count);
    d.generated = true;
  }
  return d;
}

// ----------------------------------------------------------------------------------------------------
// Measurement

// What a pass read: compared between cntkio and the reference.
struct Checks {
  uint64_t values = 0;     // numbers that are values (not ids, not sparse indices)
  uint64_t index_sum = 0;  // sum of the sparse indices
  double value_sum = 0;    // sum of the values (each as float)
  uint64_t id_sum = 0;     // reference only: sum of the sequence ids of all lines (read, not compared)
};

// Sum of n floats with independent accumulators, so the check costs little next to the parse.
uint64_t sum_indices(const int32_t* v, size_t n) {
  uint64_t acc[4] = {};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (int k = 0; k < 4; ++k) acc[k] += static_cast<uint32_t>(v[i + k]);
  }
  for (; i < n; ++i) acc[0] += static_cast<uint32_t>(v[i]);
  return acc[0] + acc[1] + acc[2] + acc[3];
}

struct CntkioPass {
  Seconds index;
  Seconds total;
  uint64_t sequences = 0;
  uint64_t chunks = 0;
  Checks checks;
};

// Reads every value of `chunk` back through get_sequence and adds it to `checks`.
void read_back(const cntkio::Chunk& chunk, size_t sequences, const std::vector<cntkio::StreamInfo>& streams,
               Checks& checks) {
  std::vector<cntkio::SequenceData> data;
  for (size_t i = 0; i < sequences; ++i) {
    data.clear();
    chunk.get_sequence(static_cast<uint32_t>(i), data);
    for (size_t s = 0; s < streams.size(); ++s) {
      const cntkio::SequenceData& sd = data[s];
      const float* values = static_cast<const float*>(sd.values);
      size_t n = 0;
      if (streams[s].storage == cntkio::StorageFormat::kSparseCsc) {
        n = sd.total_nnz;
        checks.index_sum += sum_indices(sd.indices, n);
      } else {
        n = static_cast<size_t>(sd.number_of_samples) * streams[s].sample_dim();
      }
      checks.value_sum += sum_floats(values, n);
      checks.values += n;
    }
  }
}

// `parse_threads` > 1: the file is indexed by that many threads, and chunks are loaded one after another,
// each parsed by that many threads. With `overlap_read_back`, chunk k is read back on a thread of its own
// while chunk k + 1 loads, as the pipeline's packer consumes loaded chunks while the pool parses the next;
// the chunks are still read back in order, so the sums equal the 1-thread pass's bit for bit.
CntkioPass run_cntkio(const Dataset& d, size_t parse_threads = 1, bool overlap_read_back = false) {
  cntkio::CtfOptions options;
  options.parse_threads = parse_threads;
  options.index_threads = parse_threads;
  options.file = d.path;
  options.streams = d.streams;
  options.element_type = cntkio::ElementType::kFloat;
  options.trace_level = 0;  // chunk_size_in_bytes stays at its default (32 MiB)

  CntkioPass pass;
  const Stopwatch watch(parse_threads > 1 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID);
  std::shared_ptr<cntkio::Deserializer> deserializer = cntkio::make_ctf_deserializer(options);
  pass.index = watch.elapsed();

  const std::vector<cntkio::StreamInfo>& streams = deserializer->streams();
  std::thread reader;  // reading back the previous chunk (overlap_read_back)
  try {
    for (const cntkio::ChunkInfo& info : deserializer->chunk_infos()) {
      cntkio::ChunkPtr chunk = deserializer->load_chunk(info.id);
      if (!overlap_read_back) {
        read_back(*chunk, info.number_of_sequences, streams, pass.checks);
        continue;
      }
      if (reader.joinable()) reader.join();
      reader = std::thread([chunk = std::move(chunk), n = info.number_of_sequences, &streams, &pass] {
        read_back(*chunk, n, streams, pass.checks);
      });
    }
  } catch (...) {
    if (reader.joinable()) reader.join();
    throw;
  }
  if (reader.joinable()) reader.join();
  const cntkio::CtfIndexSummary summary = cntkio::ctf_index_summary(*deserializer);
  deserializer.reset();  // unmaps the file: part of the cost, as the reference's munmap is
  pass.total = watch.elapsed();
  pass.sequences = summary.sequences;
  pass.chunks = summary.chunks;
  return pass;
}

// Read-only mapping, mapped the way cntkio maps its input (MAP_PRIVATE, MADV_SEQUENTIAL).
class Mapping {
 public:
  explicit Mapping(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot open " + path);
    struct stat st {};
    if (::fstat(fd, &st) != 0 || st.st_size == 0) {
      ::close(fd);
      throw std::runtime_error("cannot stat or empty: " + path);
    }
    size_ = static_cast<size_t>(st.st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) throw std::runtime_error("cannot map " + path);
    ::madvise(p, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const char*>(p);
  }
  ~Mapping() { ::munmap(const_cast<char*>(data_), size_); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  const char* begin() const { return data_; }
  const char* end() const { return data_ + size_; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

inline bool is_digit(char c) {
  return static_cast<unsigned char>(c - '0') < 10;
}

// The reference: tokenize and convert every number, nothing else (no validation, no storage).
__attribute__((noinline)) Checks reference_scan(const char* p, const char* end) {
  Checks checks;
  double sum = 0;
  uint64_t values = 0;
  uint64_t index_sum = 0;
  uint64_t id_sum = 0;
  bool in_stream = false;  // after a `|name` on the current line: numbers are values or indices
  while (p < end) {
    const char c = *p;
    if (c == '\n') {
      in_stream = false;
      ++p;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++p;
    } else if (c == '|') {
      ++p;
      while (p < end && *p != ' ' && *p != '\t' && *p != '\n' && *p != '|') ++p;
      in_stream = true;
    } else if (!in_stream) {  // sequence id
      const char* q = p;
      uint64_t id = 0;
      while (q < end && is_digit(*q)) id = id * 10 + static_cast<uint64_t>(*q++ - '0');
      id_sum += id;
      p = q == p ? p + 1 : q;
    } else {
      // A run of digits followed by ':' is a sparse index; everything else is a value.
      const char* q = p;
      uint64_t index = 0;
      while (q < end && is_digit(*q)) index = index * 10 + static_cast<uint64_t>(*q++ - '0');
      if (q != p && q < end && *q == ':') {
        index_sum += index;
        p = q + 1;
      }
      float value;
      const fast_float::from_chars_result r = fast_float::from_chars(p, end, value);
      if (r.ec != std::errc()) {
        ++p;
        continue;
      }
      sum += value;
      ++values;
      p = r.ptr;
    }
  }
  checks.values = values;
  checks.index_sum = index_sum;
  checks.value_sum = sum;
  checks.id_sum = id_sum;
  return checks;
}

struct ReferencePass {
  Seconds seconds;
  Checks checks;
};

ReferencePass run_reference(const Dataset& d) {
  ReferencePass pass;
  const Stopwatch watch;
  {
    Mapping map(d.path);
    pass.checks = reference_scan(map.begin(), map.end());
  }
  pass.seconds = watch.elapsed();
  return pass;
}

// Reads the whole file once so that every timed pass finds it in the page cache.
void warm_up(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path);
  std::vector<char> buffer(1 << 20);
  while (::read(fd, buffer.data(), buffer.size()) > 0) {
  }
  ::close(fd);
}

struct Result {
  std::string name;
  uint64_t bytes = 0;
  uint64_t sequences = 0;
  uint64_t chunks = 0;
  uint64_t values = 0;
  // Wall-clock figures (the ones reported): MB/s of each step, median over the repetitions.
  double index_mbs = 0;
  double parse_mbs = 0;  // load + touch only (total minus index)
  double cntkio_mbs = 0;
  double reference_mbs = 0;
  double ratio = 0;
  // The same from thread CPU time: robust against other processes competing for the cores.
  double cntkio_cpu_mbs = 0;
  double reference_cpu_mbs = 0;
  double cpu_ratio = 0;
  // With --threads N > 1: cntkio (index + parse) with index_threads = parse_threads = N, wall-clock and
  // process CPU time.
  size_t threads = 1;
  double mt_mbs = 0;
  double mt_cpu_s = 0;
  double mt_speedup = 0;  // mt_mbs / cntkio_mbs
  // The same N-thread pass with every chunk read back before the next one loads (how this benchmark measured
  // until session 7): shown beside the figure above, which overlaps the read-back as the pipeline does.
  double mt_serial_mbs = 0;
  double mt_serial_speedup = 0;
  double target = 0;
  bool checks_ok = false;
  std::string check_note;
};

Result measure(const Dataset& d, int reps, size_t threads) {
  Result r;
  r.threads = threads;
  r.name = d.name;
  r.target = d.target;
  r.bytes = static_cast<uint64_t>(fs::file_size(d.path));
  warm_up(d.path);
  std::vector<double> index_s, parse_s, total_s, reference_s, total_cpu_s, reference_cpu_s, mt_s, mt_cpu_s,
      mt_serial_s;
  CntkioPass last_cntkio, last_mt, last_mt_serial;
  ReferencePass last_reference;
  for (int rep = 0; rep < reps; ++rep) {
    last_cntkio = run_cntkio(d);
    last_reference = run_reference(d);
    index_s.push_back(last_cntkio.index.wall);
    parse_s.push_back(last_cntkio.total.wall - last_cntkio.index.wall);
    total_s.push_back(last_cntkio.total.wall);
    reference_s.push_back(last_reference.seconds.wall);
    total_cpu_s.push_back(last_cntkio.total.cpu);
    reference_cpu_s.push_back(last_reference.seconds.cpu);
    if (threads > 1) {
      last_mt = run_cntkio(d, threads, true);
      mt_s.push_back(last_mt.total.wall);
      mt_cpu_s.push_back(last_mt.total.cpu);
      last_mt_serial = run_cntkio(d, threads, false);
      mt_serial_s.push_back(last_mt_serial.total.wall);
      std::fprintf(stderr,
                   "  %s rep %d: cntkio %zu threads %.3f s (process cpu %.3f s), read back between chunks "
                   "%.3f s\n",
                   d.name.c_str(), rep + 1, threads, last_mt.total.wall, last_mt.total.cpu,
                   last_mt_serial.total.wall);
    }
    std::fprintf(stderr,
                 "  %s rep %d: index %.3f s, cntkio %.3f s (cpu %.3f s), fast_float %.3f s (cpu %.3f s)\n",
                 d.name.c_str(), rep + 1, last_cntkio.index.wall, last_cntkio.total.wall,
                 last_cntkio.total.cpu, last_reference.seconds.wall, last_reference.seconds.cpu);
  }
  const double mb = static_cast<double>(r.bytes) / 1e6;
  r.index_mbs = mb / median(index_s);
  r.parse_mbs = mb / median(parse_s);
  r.cntkio_mbs = mb / median(total_s);
  r.reference_mbs = mb / median(reference_s);
  r.ratio = r.cntkio_mbs / r.reference_mbs;
  r.cntkio_cpu_mbs = mb / median(total_cpu_s);
  r.reference_cpu_mbs = mb / median(reference_cpu_s);
  r.cpu_ratio = r.cntkio_cpu_mbs / r.reference_cpu_mbs;
  if (threads > 1) {
    r.mt_mbs = mb / median(mt_s);
    r.mt_cpu_s = median(mt_cpu_s);
    r.mt_speedup = r.mt_mbs / r.cntkio_mbs;
    r.mt_serial_mbs = mb / median(mt_serial_s);
    r.mt_serial_speedup = r.mt_serial_mbs / r.cntkio_mbs;
  }
  r.sequences = last_cntkio.sequences;
  r.chunks = last_cntkio.chunks;
  r.values = last_cntkio.checks.values;

  const Checks& a = last_cntkio.checks;
  const Checks& b = last_reference.checks;
  const double scale = std::max(1.0, std::fabs(b.value_sum));
  const double rel = std::fabs(a.value_sum - b.value_sum) / scale;
  r.checks_ok =
      a.values == b.values && a.index_sum == b.index_sum && rel < 1e-6 && r.sequences == d.sequences;
  // Parsing on several threads must read exactly what one thread reads (the same sums in the same order).
  auto same_as_one_thread = [&](const CntkioPass& p) {
    const Checks& m = p.checks;
    return m.values == a.values && m.index_sum == a.index_sum && m.value_sum == a.value_sum &&
           p.sequences == r.sequences;
  };
  const bool mt_same = threads <= 1 || (same_as_one_thread(last_mt) && same_as_one_thread(last_mt_serial));
  r.checks_ok = r.checks_ok && mt_same;
  char note[256];
  std::snprintf(
      note, sizeof note,
      "values %llu/%llu, index sums %llu/%llu, value sums %.6f/%.6f (rel %.1e), sequences %llu/%llu",
      static_cast<unsigned long long>(a.values), static_cast<unsigned long long>(b.values),
      static_cast<unsigned long long>(a.index_sum), static_cast<unsigned long long>(b.index_sum), a.value_sum,
      b.value_sum, rel, static_cast<unsigned long long>(r.sequences),
      static_cast<unsigned long long>(d.sequences));
  r.check_note = note;
  if (threads > 1) r.check_note += mt_same ? ", N threads identical" : ", N threads DIFFER";
  return r;
}

// ----------------------------------------------------------------------------------------------------
// Output

void print_table(const std::vector<Result>& results, int reps) {
  std::printf(
      "cntkio CTF throughput: 1 thread, float, chunkSizeInBytes 32 MiB, file in page cache, "
      "median of %d (MB = 10^6 bytes)\n\n",
      reps);
  std::printf("%-10s %8s %10s %6s %10s %10s %10s %11s %10s %6s %6s %7s\n", "dataset", "file MB", "sequences",
              "chunks", "values", "index", "parse", "cntkio", "fast_float", "ratio", "(cpu)", "target");
  std::printf("%-10s %8s %10s %6s %10s %10s %10s %11s %10s\n", "", "", "", "", "", "MB/s", "MB/s", "MB/s",
              "MB/s");
  for (const Result& r : results) {
    char target[16];
    std::snprintf(target, sizeof target, ">=%.1fx", r.target);
    std::printf("%-10s %8.1f %10llu %6llu %10llu %10.1f %10.1f %11.1f %10.1f %5.2fx %5.2fx %7s %s\n",
                r.name.c_str(), static_cast<double>(r.bytes) / 1e6,
                static_cast<unsigned long long>(r.sequences), static_cast<unsigned long long>(r.chunks),
                static_cast<unsigned long long>(r.values), r.index_mbs, r.parse_mbs, r.cntkio_mbs,
                r.reference_mbs, r.ratio, r.cpu_ratio, target, r.ratio >= r.target ? "met" : "MISSED");
  }
  std::printf(
      "\nindex = make_ctf_deserializer (map + index + chunks); parse = load_chunk of every chunk + reading "
      "every\n"
      "value; cntkio = index + parse; fast_float = map + tokenize + fast_float::from_chars of every value;\n"
      "ratio = cntkio / fast_float from wall-clock time, (cpu) = the same from thread CPU time.\n");
  if (!results.empty() && results[0].threads > 1) {
    std::printf("\n%-10s %8s %16s %18s %12s %24s\n", "dataset", "threads", "cntkio MB/s", "vs 1 thread",
                "process cpu", "read back in turn MB/s");
    for (const Result& r : results) {
      std::printf("%-10s %8zu %16.1f %17.2fx %11.3fs %15.1f (%.2fx)\n", r.name.c_str(), r.threads, r.mt_mbs,
                  r.mt_speedup, r.mt_cpu_s, r.mt_serial_mbs, r.mt_serial_speedup);
    }
    std::printf(
        "(index + parse, CtfOptions::index_threads = parse_threads = N: the file indexed in N runs, each "
        "chunk\n"
        "split at sequence boundaries; chunk k is read back while chunk k + 1 loads, as the pipeline packs\n"
        "loaded chunks while the pool parses; 'in turn': each chunk read back before the next one loads)\n");
  }
  for (const Result& r : results) {
    std::printf("check %-10s %s: %s\n", r.name.c_str(), r.checks_ok ? "ok" : "MISMATCH",
                r.check_note.c_str());
  }
}

void print_json(const std::vector<Result>& results, int reps) {
  for (const Result& r : results) {
    std::printf(
        "{\"dataset\":\"%s\",\"file_bytes\":%llu,\"sequences\":%llu,\"chunks\":%llu,\"values\":%llu,"
        "\"reps\":%d,\"index_mb_s\":%.1f,\"parse_mb_s\":%.1f,\"cntkio_mb_s\":%.1f,\"fast_float_mb_s\":%.1f,"
        "\"ratio\":%.3f,\"cntkio_cpu_mb_s\":%.1f,\"fast_float_cpu_mb_s\":%.1f,\"cpu_ratio\":%.3f,"
        "\"threads\":%zu,\"cntkio_mt_mb_s\":%.1f,\"mt_cpu_s\":%.4f,\"mt_speedup\":%.3f,"
        "\"cntkio_mt_in_turn_mb_s\":%.1f,\"mt_in_turn_speedup\":%.3f,"
        "\"target\":%.1f,\"target_met\":%s,\"checks_ok\":%s}\n",
        r.name.c_str(), static_cast<unsigned long long>(r.bytes),
        static_cast<unsigned long long>(r.sequences), static_cast<unsigned long long>(r.chunks),
        static_cast<unsigned long long>(r.values), reps, r.index_mbs, r.parse_mbs, r.cntkio_mbs,
        r.reference_mbs, r.ratio, r.cntkio_cpu_mbs, r.reference_cpu_mbs, r.cpu_ratio, r.threads, r.mt_mbs,
        r.mt_cpu_s, r.mt_speedup, r.mt_serial_mbs, r.mt_serial_speedup, r.target,
        r.ratio >= r.target ? "true" : "false", r.checks_ok ? "true" : "false");
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
        Dataset d = make_dataset(name, dir, args.scale, args.keep && !own_dir);
        results.push_back(measure(d, args.reps, args.threads));
        all_ok = all_ok && results.back().checks_ok;
        if (d.generated && !args.keep) fs::remove(d.path);
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
    std::fprintf(stderr, "ctf_throughput: %s (see --help)\n", e.what());
    return 2;
  }
}
