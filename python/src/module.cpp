// The extension module cntkio._core: a thin binding of cntkio::MinibatchSource for the pure-Python package
// (python/cntkio), which builds the cntk.io surface on top of it. Readers are made from a ReaderSpec (bound
// in spec_bindings.cpp) or from CNTK config files.
//
// Thread-safety: a Reader serializes its calls with a mutex; reading runs with the GIL released.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arrays.hpp"
#include "cntkio/config.hpp"
#include "cntkio/distributed.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/registry.hpp"
#include "cntkio/version.hpp"
#include "formats/ctf/ctf_index_registry.hpp"
#include "spec/config_rules.hpp"
#include "spec_bindings.hpp"
#include "user_deserializer.hpp"

namespace py = pybind11;

namespace cntkio::python {
namespace {

PyObject* g_format_error = nullptr;  // cntkio.FormatError(ValueError)
PyObject* g_config_error = nullptr;  // cntkio.ConfigError(ValueError)

// Raises `type(message)` with extra attributes.
void raise_with_attributes(PyObject* type, const std::string& message, const py::dict& attributes) {
  py::object exception = py::reinterpret_borrow<py::object>(type)(message);
  for (auto item : attributes) exception.attr(item.first) = item.second;
  PyErr_SetObject(type, exception.ptr());
}

py::object optional_int(const std::optional<uint64_t>& value) {
  return value ? py::object(py::int_(*value)) : py::object(py::none());
}

void translate_exception(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const FormatError& e) {
    const SourceLocation& at = e.location();
    py::dict attributes;
    attributes["cntk_text"] = e.cntk_text();
    attributes["file"] = at.file;
    attributes["line"] = optional_int(at.line);
    attributes["column"] = optional_int(at.column);
    attributes["byte_offset"] = optional_int(at.byte_offset);
    attributes["stream"] = at.stream;
    attributes["sequence_key"] = at.sequence_key;
    raise_with_attributes(g_format_error, e.what(), attributes);
  } catch (const ConfigError& e) {
    py::dict attributes;
    attributes["cntk_text"] = e.cntk_text();
    attributes["key_path"] = e.key_path();
    attributes["file"] = e.file();
    attributes["line"] = e.line() == 0 ? py::object(py::none()) : py::object(py::int_(e.line()));
    attributes["column"] = e.column() == 0 ? py::object(py::none()) : py::object(py::int_(e.column()));
    raise_with_attributes(g_config_error, e.what(), attributes);
  } catch (const IoError& e) {
    // OSError(errno, message) becomes FileNotFoundError, PermissionError, ... as Python's own errors do.
    py::object args = e.error_number() != 0 ? py::object(py::make_tuple(e.error_number(), e.what()))
                                            : py::object(py::make_tuple(e.what()));
    PyErr_SetObject(PyExc_OSError, args.ptr());
  } catch (const UsageError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const PythonBuiltinError& e) {
    PyErr_SetString(e.type(), e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

// The packing a reader packs with (its spec's, else what its formats imply: spec pipeline.md §1.2), which
// decides the dense array shape. After MinibatchSource::create, which loads the modules `spec` names.
PackingMode packing_mode(ReaderSpec spec) {
  spec_detail::resolve_reader_defaults(spec.source, spec.deserializers, nullptr);
  switch (*spec.source.packing) {
    case Packing::kFrames:
      return PackingMode::kFrame;
    case Packing::kTruncatedSequences:
      return PackingMode::kTruncated;
    case Packing::kSequences:
      break;
  }
  return PackingMode::kSequence;
}

Config descend(const Config& root, const std::vector<std::string>& path) {
  Config scope = root;
  for (const std::string& block : path) scope = scope.get_block(block);
  return scope;
}

// One minibatch handed to Python: the arrays of a stream are made on request and view its buffers.
class Batch {
 public:
  Batch(std::shared_ptr<const Minibatch> minibatch, PackingMode mode)
      : minibatch_(std::move(minibatch)), mode_(mode) {}
  bool end_of_sweep() const { return minibatch_->end_of_sweep; }
  bool end_of_epoch() const { return minibatch_->end_of_epoch; }
  size_t num_streams() const { return minibatch_->streams.size(); }
  // Keys are the bytes the data gave (a CTF id may hold any byte but a blank): bytes that are no UTF-8 come
  // through as surrogate escapes (os.fsencode(key) gives the bytes back), not as a UnicodeDecodeError.
  py::list keys() const {
    py::list out(minibatch_->keys.size());
    for (size_t i = 0; i < minibatch_->keys.size(); ++i) {
      const std::string& key = minibatch_->keys[i];
      PyObject* text =
          PyUnicode_DecodeUTF8(key.data(), static_cast<Py_ssize_t>(key.size()), "surrogateescape");
      if (text == nullptr) throw py::error_already_set();
      out[i] = py::reinterpret_steal<py::object>(text);
    }
    return out;
  }
  py::dict stream(size_t index) const {
    if (index >= minibatch_->streams.size()) throw py::index_error("stream index out of range");
    if (minibatch_->deferred_values) {
      throw std::logic_error(
          "this minibatch was read with deferred values (Reader.defer_values): only torch_item can write it");
    }
    return stream_arrays(minibatch_, index, mode_);
  }
  py::tuple torch_item(bool sparse_as_dense, size_t align, size_t header, const py::function& allocate,
                       const std::map<std::string, int64_t>& class_indices) const {
    return python::torch_item(minibatch_, mode_, sparse_as_dense ? SparseItem::kDense : SparseItem::kIndices,
                              align, header, allocate, class_indices);
  }

 private:
  std::shared_ptr<const Minibatch> minibatch_;
  PackingMode mode_;
};

// The shared indexes of a reader (MinibatchSource::shared_indexes), held by cntkio.torch.MinibatchDataset so
// that the readers of its DataLoader workers and later epochs take them. Only memory: safe to drop anywhere.
struct IndexHold {
  std::vector<std::shared_ptr<const void>> indexes;
};

// One thread that runs one job at a time (Reader's read-ahead of torch items). Thread-safety: start() and
// wait() from one thread at a time.
class JobThread {
 public:
  JobThread() : thread_([this] { run(); }) {}
  ~JobThread() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  JobThread(const JobThread&) = delete;
  JobThread& operator=(const JobThread&) = delete;

  // Runs `job` on the thread; the previous job must have been waited for.
  void start(std::function<void()> job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = std::move(job);
      busy_ = true;
    }
    wake_.notify_all();
  }
  // Until the job started last has finished.
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return !busy_; });
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || job_; });
      if (!job_) return;  // stopped
      std::function<void()> job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();  // catches its own exceptions
      lock.lock();
      busy_ = false;
      done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

class Reader;

// The readers alive in this process. An atexit hook closes them before the interpreter finalizes: their
// threads may call Python (a UserDeserializer's chunks), which no thread can once finalization has begun.
std::mutex g_live_readers_mutex;
auto* g_live_readers = new std::set<Reader*>;  // never freed: atexit hooks may run after static destructors

class Reader {
 public:
  explicit Reader(const ReaderSpec& spec)
      : source_(MinibatchSource::create(spec)), mode_(packing_mode(spec)), owner_pid_(::getpid()) {
    std::lock_guard<std::mutex> lock(g_live_readers_mutex);
    g_live_readers->insert(this);
  }

  // Stops the reader's threads and drops it; later calls raise. Call with the GIL held.
  void close() {
    if (::getpid() != owner_pid_) {
      (void)source_.release();
      (void)ahead_thread_.release();  // its thread is not in this process
      return;
    }
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    source_.reset();
  }

  // Closes every reader of this process (the atexit hook).
  static void close_all() {
    std::vector<Reader*> readers;
    {
      std::lock_guard<std::mutex> lock(g_live_readers_mutex);
      readers.assign(g_live_readers->begin(), g_live_readers->end());
    }
    for (Reader* reader : readers) reader->close();
  }

  // A process forked from the creator (a DataLoader worker) inherits the object but not its background
  // threads: destroying it there would wait for threads that do not exist, so it is left alone.
  ~Reader() {
    {
      std::lock_guard<std::mutex> lock(g_live_readers_mutex);
      g_live_readers->erase(this);
    }
    if (::getpid() != owner_pid_) {
      (void)source_.release();
      (void)ahead_thread_.release();
      return;
    }
    // The reader's threads may be waiting for the GIL (a UserDeserializer's chunk): let them finish.
    if (PyGILState_Check() != 0) {
      py::gil_scoped_release release;
      ahead_thread_.reset();  // waits for a group read ahead
      source_.reset();
    } else {
      ahead_thread_.reset();
    }
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;

  static std::unique_ptr<Reader> from_files(const std::vector<std::string>& files,
                                            const std::vector<std::string>& overrides,
                                            const std::vector<std::string>& path) {
    return std::make_unique<Reader>(
        ReaderSpec::from_config(descend(Config::from_files(files, overrides), path)));
  }
  static std::unique_ptr<Reader> from_spec(const ReaderSpec& spec) {
    py::gil_scoped_release release;  // a UserDeserializer indexes on this thread and loads on others
    return std::make_unique<Reader>(spec);
  }

  py::list streams() const {
    py::list out;
    for (const StreamInfo& s : live().streams()) {
      py::dict d;
      d["name"] = s.name;
      d["alias"] = s.alias;
      d["id"] = s.id;
      d["storage"] = to_string(s.storage);
      d["dtype"] = s.element_type == ElementType::kFloat ? "float32" : "float64";
      py::list shape;  // NumPy order: CNTK's column-major shape reversed
      for (auto it = s.sample_shape.rbegin(); it != s.sample_shape.rend(); ++it) shape.append(*it);
      d["shape"] = py::tuple(shape);
      d["defines_mb_size"] = s.defines_mb_size;
      out.append(d);
    }
    return out;
  }

  const char* packing() const {
    return mode_ == PackingMode::kFrame       ? "frame"
           : mode_ == PackingMode::kTruncated ? "truncated"
                                              : "sequence";
  }

  void set_v2_limits(size_t max_samples, size_t max_sweeps) {
    check_process();
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    live().set_v2_limits(max_samples, max_sweeps);
  }

  py::object next_v2(size_t minibatch_size, size_t num_partitions, size_t partition_index) {
    check_process();
    auto minibatch = std::make_shared<Minibatch>();
    bool got = false;
    {
      py::gil_scoped_release release;
      drop_ahead();
      std::lock_guard<std::mutex> lock(mutex_);
      got = live().next_minibatch_v2(minibatch_size, num_partitions, partition_index, *minibatch);
    }
    return wrap(got, std::move(minibatch));
  }

  // Up to `count` minibatches of next_v2 written by torch_items into one buffer (one `allocate` call):
  // (buffer, [(entries, state JSON or None, end_of_sweep) per minibatch]), fewer at the end of the data, and
  // (None, []) when there is none. One call for several minibatches: a Python call per minibatch costs as
  // much as reading a small one.
  py::tuple next_torch_items(size_t count, size_t minibatch_size, size_t num_partitions,
                             size_t partition_index, bool sparse_as_dense, size_t align, size_t header,
                             const py::function& allocate,
                             const std::map<std::string, int64_t>& class_indices, bool with_state) {
    check_process();
    std::vector<std::shared_ptr<const Minibatch>> minibatches;
    std::vector<std::string> states;
    {
      py::gil_scoped_release release;
      drop_ahead();
      std::lock_guard<std::mutex> lock(mutex_);
      while (minibatches.size() < count) {
        auto minibatch = std::make_shared<Minibatch>();
        if (!live().next_minibatch_v2(minibatch_size, num_partitions, partition_index, *minibatch)) break;
        minibatches.push_back(std::move(minibatch));
        if (with_state) states.push_back(live().state().to_json());
      }
    }
    if (minibatches.empty()) return py::make_tuple(py::none(), py::list());
    py::tuple written =
        python::torch_items(minibatches, mode_, sparse_as_dense ? SparseItem::kDense : SparseItem::kIndices,
                            align, header, allocate, class_indices);
    py::list entries = written[1];
    py::list out;
    for (size_t i = 0; i < minibatches.size(); ++i) {
      out.append(py::make_tuple(entries[i],
                                with_state ? py::object(py::str(states[i])) : py::object(py::none()),
                                minibatches[i]->end_of_sweep));
    }
    return py::make_tuple(written[0], out);
  }

  // next_torch_items for reading in this process (cntkio.torch without DataLoader workers), with the
  // buffer allocated here and the state of every minibatch: (buffer or None, [(entries, state JSON,
  // end_of_sweep) per minibatch], exhausted), exhausted when the reader had no more minibatches; with
  // `tensor_of`, dicts {key: tensor_of(array)} instead of the entries (written_items_to_python). After a
  // group of `count` minibatches none of which ended a sweep, the next group is read and written on a thread
  // of the reader's own while Python makes tensors of this one: the next call with the same arguments takes
  // it (it may hold another count of minibatches than that call asks for). Any other reading call, restore
  // and set_v2_limits drop a group read ahead, as the reader's own read-ahead is dropped.
  py::tuple next_torch_items_ahead(size_t count, size_t minibatch_size, size_t num_partitions,
                                   size_t partition_index, bool sparse_as_dense, size_t align, size_t header,
                                   const std::map<std::string, int64_t>& class_indices,
                                   const py::object& tensor_of) {
    check_process();
    const TorchRequest request = torch_request(count, minibatch_size, num_partitions, partition_index,
                                               sparse_as_dense, align, header, class_indices);
    TorchGroup group;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> ahead_lock(ahead_mutex_);
      if (ahead_pending_) {
        ahead_thread_->wait();
        ahead_pending_ = false;
        group = std::move(ahead_group_);
        ahead_group_ = TorchGroup{};
        if (!ahead_request_.same_reading(request)) {
          throw std::logic_error(
              "next_torch_items_ahead: called with other arguments than the group read ahead");
        }
      } else {
        group = read_torch_group(request);
      }
      if (group.error) std::rethrow_exception(group.error);
      // Full: as long as asked when it was read (a group read ahead, with the count of the call before).
      const bool full = group.states.size() >= group.count && !group.exhausted;
      if (full && !group.ended_sweep()) start_ahead(request);
    }
    if (group.states.empty()) return py::make_tuple(py::none(), py::list(), group.exhausted);
    py::tuple written = written_items_to_python(std::move(group.written), tensor_of);
    py::list items = written[1];
    py::list out;
    for (size_t i = 0; i < group.states.size(); ++i) {
      out.append(
          py::make_tuple(items[i], py::str(group.states[i]), static_cast<bool>(group.end_of_sweep[i])));
    }
    return py::make_tuple(written[0], out, group.exhausted);
  }

  // Starts reading and writing the group that next_torch_items_ahead with these arguments will take (unless a
  // group is read ahead already): cntkio.torch calls it when an epoch ends, for the next epoch's first group.
  void torch_items_read_ahead(size_t count, size_t minibatch_size, size_t num_partitions,
                              size_t partition_index, bool sparse_as_dense, size_t align, size_t header,
                              const std::map<std::string, int64_t>& class_indices) {
    check_process();
    const TorchRequest request = torch_request(count, minibatch_size, num_partitions, partition_index,
                                               sparse_as_dense, align, header, class_indices);
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> ahead_lock(ahead_mutex_);
    if (!ahead_pending_) start_ahead(request);
  }

  // Reads up to `count` minibatches of next_v2 and drops them: (minibatches read, whether one of them ended a
  // sweep). A DataLoader worker that leaves minibatches to the other workers advances past them so.
  py::tuple skip_v2(size_t count, size_t minibatch_size, size_t num_partitions, size_t partition_index) {
    check_process();
    size_t read = 0;
    bool end_of_sweep = false;
    {
      py::gil_scoped_release release;
      drop_ahead();
      std::lock_guard<std::mutex> lock(mutex_);
      Minibatch minibatch;
      while (read < count &&
             live().next_minibatch_v2(minibatch_size, num_partitions, partition_index, minibatch)) {
        ++read;
        end_of_sweep = end_of_sweep || minibatch.end_of_sweep;
      }
    }
    return py::make_tuple(read, end_of_sweep);
  }

  // MinibatchSource::describe(): per deserializer a line with its type, then what it reads ("N chunk(s),
  // ...").
  std::vector<std::string> describe() const {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return live().describe();
  }

  // MinibatchSource::partition_chunks(): the chunks distributed reading shares out (0: unknown).
  size_t partition_chunks() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live().partition_chunks();
  }

  bool defer_values(bool on) {
    check_process();
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    return live().defer_values(on);
  }

  void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size, size_t rank,
                   size_t workers) {
    check_process();
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    live().start_epoch(minibatch_size, epoch_index, epoch_size, rank, workers);
  }

  py::object next_v1() {
    check_process();
    auto minibatch = std::make_shared<Minibatch>();
    bool got = false;
    {
      py::gil_scoped_release release;
      drop_ahead();
      std::lock_guard<std::mutex> lock(mutex_);
      got = live().next_minibatch(*minibatch);
    }
    return wrap(got, std::move(minibatch));
  }

  std::string state() const {
    py::gil_scoped_release release;
    finish_ahead();  // the position after it, as after the reader's own read-ahead
    std::lock_guard<std::mutex> lock(mutex_);
    return live().state().to_json();
  }

  // MinibatchSource::skip_report() as a dict (the counts, the first locations and the one-line text). No
  // lock: the report may be taken while another thread reads, and should not wait for that read.
  py::dict skip_report() const {
    const SkipReport report = live().skip_report();
    py::dict d;
    d["errors"] = report.errors;
    d["rows_skipped"] = report.rows_skipped;
    d["samples_skipped"] = report.samples_skipped;
    d["sequences_skipped"] = report.sequences_skipped;
    d["first_locations"] = report.first_locations;
    d["text"] = report.to_string();
    return d;
  }

  // MinibatchSource::stats() as a dict: stage times in seconds, the loader threads' busy seconds, and the
  // chunk cache's figures under "chunk_cache". No lock, as skip_report.
  py::dict stats() const {
    const SourceStats s = live().stats();
    py::dict d;
    d["index_s"] = s.index_s;
    d["load_s"] = s.load_s;
    d["randomize_s"] = s.randomize_s;
    d["pack_s"] = s.pack_s;
    d["chunk_wait_s"] = s.chunk_wait_s;
    d["minibatch_wait_s"] = s.minibatch_wait_s;
    d["loader_busy_s"] = s.loader_busy_s;
    py::dict cache;
    cache["budget_bytes"] = s.chunk_cache.budget_bytes;
    cache["bytes"] = s.chunk_cache.bytes;
    cache["chunks"] = s.chunk_cache.chunks;
    cache["hits"] = s.chunk_cache.hits;
    cache["misses"] = s.chunk_cache.misses;
    cache["invalidations"] = s.chunk_cache.invalidations;
    d["chunk_cache"] = cache;
    return d;
  }

  void restore(const std::string& json) {
    check_process();
    ReaderState state = ReaderState::from_json(json);
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    live().restore(state);
  }

  // Reads with next_minibatch_v2 in a C++ loop (no Python per minibatch) until the limit or
  // `max_minibatches`: (minibatches, samples of stream 0, seconds). The C++ reference figure of
  // bench/python_throughput.py.
  py::tuple read_loop(size_t minibatch_size, size_t max_minibatches) {
    check_process();
    size_t minibatches = 0, samples = 0;
    double seconds = 0;
    {
      py::gil_scoped_release release;
      drop_ahead();
      std::lock_guard<std::mutex> lock(mutex_);
      Minibatch minibatch;
      const auto start = std::chrono::steady_clock::now();
      while (minibatches < max_minibatches && live().next_minibatch_v2(minibatch_size, 1, 0, minibatch)) {
        ++minibatches;
        samples += minibatch.streams.at(0).layout.num_samples();
      }
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return py::make_tuple(minibatches, samples, seconds);
  }

  IndexHold hold_indexes() const {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mutex_);
    return IndexHold{live().shared_indexes()};
  }

  // Samples in one sweep: the position where v1 epoch 1 of one sweep starts. Reconfigures the reader (call it
  // before reading).
  size_t sweep_size() {
    check_process();
    py::gil_scoped_release release;
    drop_ahead();
    std::lock_guard<std::mutex> lock(mutex_);
    return live().sweep_size();
  }

 private:
  // What next_torch_items_ahead reads and how it writes it.
  struct TorchRequest {
    size_t count = 0;
    size_t minibatch_size = 0;
    size_t num_partitions = 1;
    size_t partition_index = 0;
    SparseItem sparse = SparseItem::kIndices;
    size_t align = 1;
    size_t header = 0;
    std::map<std::string, int64_t> class_pads;
    // The same minibatches written the same way (the count may differ).
    bool same_reading(const TorchRequest& o) const {
      return minibatch_size == o.minibatch_size && num_partitions == o.num_partitions &&
             partition_index == o.partition_index && sparse == o.sparse && align == o.align &&
             header == o.header && class_pads == o.class_pads;
    }
  };
  static TorchRequest torch_request(size_t count, size_t minibatch_size, size_t num_partitions,
                                    size_t partition_index, bool sparse_as_dense, size_t align, size_t header,
                                    const std::map<std::string, int64_t>& class_indices) {
    return TorchRequest{count,
                        minibatch_size,
                        num_partitions,
                        partition_index,
                        sparse_as_dense ? SparseItem::kDense : SparseItem::kIndices,
                        align,
                        header,
                        class_indices};
  }
  // A group of minibatches read and written by read_torch_group.
  struct TorchGroup {
    WrittenItemsPtr written;
    std::vector<std::string> states;
    std::vector<char> end_of_sweep;
    bool exhausted = false;
    std::exception_ptr error;  // of a group read ahead
    size_t count = 0;          // minibatches asked for
    bool ended_sweep() const {
      return std::any_of(end_of_sweep.begin(), end_of_sweep.end(), [](char e) { return e != 0; });
    }
  };

  // Reads and writes up to request.count minibatches. Without the GIL, on any thread.
  TorchGroup read_torch_group(const TorchRequest& request) {
    TorchGroup group;
    group.count = request.count;
    std::vector<std::shared_ptr<const Minibatch>> minibatches;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (minibatches.size() < request.count) {
        auto minibatch = std::make_shared<Minibatch>();
        if (!live().next_minibatch_v2(request.minibatch_size, request.num_partitions, request.partition_index,
                                      *minibatch)) {
          group.exhausted = true;
          break;
        }
        group.end_of_sweep.push_back(minibatch->end_of_sweep ? 1 : 0);
        minibatches.push_back(std::move(minibatch));
        group.states.push_back(live().state().to_json());
      }
    }
    if (!minibatches.empty()) {
      group.written = write_torch_items(minibatches, mode_, request.sparse, request.align, request.header,
                                        request.class_pads);
    }
    return group;
  }

  // Starts reading `request`'s group on ahead_thread_ (with ahead_mutex_ held, none pending).
  void start_ahead(const TorchRequest& request) {
    if (!ahead_thread_) ahead_thread_ = std::make_unique<JobThread>();
    ahead_request_ = request;
    ahead_pending_ = true;
    ahead_thread_->start([this] {
      try {
        ahead_group_ = read_torch_group(ahead_request_);
      } catch (...) {
        ahead_group_ = TorchGroup{};
        ahead_group_.error = std::current_exception();
      }
    });
  }

  // Waits for a group read ahead and drops it (call without the GIL).
  void drop_ahead() {
    std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (!ahead_pending_) return;
    ahead_thread_->wait();
    ahead_pending_ = false;
    ahead_group_ = TorchGroup{};
  }

  // Waits for a group read ahead, which stays for the next call (call without the GIL).
  void finish_ahead() const {
    std::lock_guard<std::mutex> lock(ahead_mutex_);
    if (ahead_pending_) ahead_thread_->wait();
  }

  void check_process() const {
    if (::getpid() != owner_pid_) {
      throw UsageError(
          "This MinibatchSource was created in another process (this one was forked from it, e.g. a "
          "DataLoader "
          "worker); create the source in the process that reads it (cntkio.torch.MinibatchDataset does).");
    }
  }

  py::object wrap(bool got, std::shared_ptr<Minibatch> minibatch) const {
    if (!got) return py::none();
    return py::cast(Batch(std::move(minibatch), mode_));
  }

  MinibatchSource& live() const {
    if (!source_) throw UsageError("This MinibatchSource was closed (the interpreter is exiting).");
    return *source_;
  }

  std::unique_ptr<MinibatchSource> source_;
  PackingMode mode_;
  pid_t owner_pid_;
  mutable std::mutex mutex_;
  // next_torch_items_ahead's group read ahead: used under ahead_mutex_ and, while ahead_pending_, written by
  // ahead_thread_'s job only (the job takes mutex_, never ahead_mutex_). Destroyed first: its job may still
  // be reading.
  mutable std::mutex ahead_mutex_;
  TorchRequest ahead_request_;
  TorchGroup ahead_group_;
  bool ahead_pending_ = false;
  std::unique_ptr<JobThread> ahead_thread_;
};

}  // namespace
}  // namespace cntkio::python

PYBIND11_MODULE(_core, m) {
  using namespace cntkio;
  using namespace cntkio::python;
  m.doc() = "cntkio's C++ reader (use the package cntkio, not this module)";
  m.attr("__version__") = cntkio::version();  // the library's version, re-exported as cntkio.__version__

  g_format_error = PyErr_NewExceptionWithDoc(
      "cntkio.FormatError", "Malformed input data; carries file, line, column and byte_offset.",
      PyExc_ValueError, nullptr);
  g_config_error = PyErr_NewExceptionWithDoc(
      "cntkio.ConfigError", "A malformed or inconsistent reader configuration.", PyExc_ValueError, nullptr);
  m.attr("FormatError") = py::handle(g_format_error);
  m.attr("ConfigError") = py::handle(g_config_error);
  py::register_exception_translator(&translate_exception);
  bind_reader_spec(m);
  register_user_deserializer_type();
  bind_user_deserializer(m);

  m.attr("INFINITELY_REPEAT") = py::int_(kInfinitelyRepeat);
  m.attr("FULL_DATA_SWEEP") = py::int_(kFullDataSweep);
  m.attr("FULL_SWEEP_EPOCH") = py::int_(kFullSweep);

  py::class_<Batch>(m, "Batch")
      .def_property_readonly("end_of_sweep", &Batch::end_of_sweep)
      .def_property_readonly("end_of_epoch", &Batch::end_of_epoch)
      .def_property_readonly("num_streams", &Batch::num_streams)
      .def_property_readonly("keys", &Batch::keys)
      .def("stream", &Batch::stream, py::arg("index"))
      .def("torch_item", &Batch::torch_item, py::arg("sparse_as_dense"), py::arg("align"), py::arg("header"),
           py::arg("allocate"), py::arg("class_indices") = std::map<std::string, int64_t>{});

  py::class_<Reader>(m, "Reader")
      .def_static("from_files", &Reader::from_files, py::arg("files"), py::arg("overrides"), py::arg("path"))
      .def_static("from_spec", &Reader::from_spec, py::arg("spec"),
                  "The reader a ReaderSpec describes (MinibatchSource::create).")
      .def("streams", &Reader::streams)
      .def_property_readonly("packing", &Reader::packing)
      .def("set_v2_limits", &Reader::set_v2_limits, py::arg("max_samples"), py::arg("max_sweeps"))
      .def("next_v2", &Reader::next_v2, py::arg("minibatch_size"), py::arg("num_partitions"),
           py::arg("partition_index"))
      .def("next_torch_items", &Reader::next_torch_items, py::arg("count"), py::arg("minibatch_size"),
           py::arg("num_partitions"), py::arg("partition_index"), py::arg("sparse_as_dense"),
           py::arg("align"), py::arg("header"), py::arg("allocate"), py::arg("class_indices"),
           py::arg("with_state"))
      .def("next_torch_items_ahead", &Reader::next_torch_items_ahead, py::arg("count"),
           py::arg("minibatch_size"), py::arg("num_partitions"), py::arg("partition_index"),
           py::arg("sparse_as_dense"), py::arg("align"), py::arg("header"), py::arg("class_indices"),
           py::arg("tensor_of") = py::none())
      .def("torch_items_read_ahead", &Reader::torch_items_read_ahead, py::arg("count"),
           py::arg("minibatch_size"), py::arg("num_partitions"), py::arg("partition_index"),
           py::arg("sparse_as_dense"), py::arg("align"), py::arg("header"), py::arg("class_indices"))
      .def("skip_v2", &Reader::skip_v2, py::arg("count"), py::arg("minibatch_size"),
           py::arg("num_partitions"), py::arg("partition_index"))
      .def("describe", &Reader::describe)
      .def("partition_chunks", &Reader::partition_chunks,
           "The chunks that distributed reading shares out, whole, among the workers (0: unknown).")
      .def("defer_values", &Reader::defer_values, py::arg("on"),
           "Later minibatches leave their values in the loaded chunks until torch_item writes them (once); "
           "their stream arrays are then unavailable. False where the packing cannot (truncated BPTT).")
      .def("start_epoch", &Reader::start_epoch, py::arg("minibatch_size"), py::arg("epoch_index"),
           py::arg("epoch_size"), py::arg("worker_rank"), py::arg("num_workers"))
      .def("next_v1", &Reader::next_v1)
      .def("state", &Reader::state)
      .def("skip_report", &Reader::skip_report)
      .def("stats", &Reader::stats)
      .def("restore", &Reader::restore, py::arg("state"))
      .def("sweep_size", &Reader::sweep_size)
      .def("read_loop", &Reader::read_loop, py::arg("minibatch_size"), py::arg("max_minibatches"))
      .def("hold_indexes", &Reader::hold_indexes);

  // Before the interpreter finalizes (atexit runs first), stop every reader's threads.
  py::module_::import("atexit").attr("register")(py::cpp_function(&Reader::close_all));

  py::class_<IndexHold>(m, "IndexHold").def("__len__", [](const IndexHold& h) { return h.indexes.size(); });

  m.def("merge_reader_states", [](const std::vector<std::string>& states) {
    std::vector<ReaderState> parsed;
    for (const std::string& s : states) parsed.push_back(ReaderState::from_json(s));
    return merge_reader_states(parsed).to_json();
  });
  m.def("worker_from_environment", [] {
    WorkerInfo w = worker_from_environment();
    py::dict d;
    d["rank"] = w.rank;
    d["count"] = w.count;
    d["local_rank"] = w.local_rank;
    d["source"] = w.source;
    return d;
  });
  m.def(
      "release_free_heap",
      [] {
#if defined(__GLIBC__)
        ::malloc_trim(0);
        return true;
#else
        return false;
#endif
      },
      "Hands the free pages of the C heap back to the kernel (glibc's malloc_trim); False where the C "
      "library "
      "has no such call. Called before a fork, it lets the child's allocations take fresh pages instead of "
      "copying the parent's.");
  m.def("known_deserializer_types", &registered_deserializer_types);
  m.def("ctf_index_builds", &ctf::index_builds,
        "CTF files indexed by scanning them in this process so far (a forked process counts on from its "
        "parent's number); a reader that took a shared index or read a cache adds none.");
}
