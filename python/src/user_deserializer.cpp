// The bridge that makes a Python UserDeserializer (python/cntkio/_user_deserializer.py) a registered
// deserializer type of the C++ pipeline. The Python side (_Adapter) checks the user's answers and hands each
// chunk over as flat NumPy arrays; this side copies them into memory it owns, so that a loaded chunk lives
// and dies without the GIL. Python is called with the GIL taken, from whichever thread needs a chunk.
#include "user_deserializer.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/registry.hpp"

namespace py = pybind11;

namespace cntkio::python {

const char* const kUserDeserializerType = "PythonUserDeserializer";

namespace {

// A Python object that can be copied and destroyed on any thread: the reference is dropped with the GIL
// taken, and not at all once the interpreter is finalizing (it owns the object then).
class PythonHandle {
 public:
  explicit PythonHandle(py::object object) : object_(new py::object(std::move(object))) {}
  ~PythonHandle() {
    if (Py_IsInitialized() == 0 || _Py_IsFinalizing() != 0) {
      (void)object_->release();  // the interpreter owns (or has freed) the object now
      delete object_;
      return;
    }
    py::gil_scoped_acquire gil;
    delete object_;
  }
  PythonHandle(const PythonHandle&) = delete;
  PythonHandle& operator=(const PythonHandle&) = delete;
  // Only with the GIL held.
  const py::object& object() const { return *object_; }

 private:
  py::object* object_;
};

// What a DeserializerSpec of this type holds.
struct UserDeserializerOptions {
  std::shared_ptr<PythonHandle> adapter;
};

// The text of the Python exception being handled, for a cntkio error (the pipeline carries C++ exceptions
// across its threads; a Python exception object cannot outlive the GIL).
std::string python_error_text(const py::error_already_set& e) {
  return e.what();
}

// What the user's code raised, as the error the caller gets: an OSError stays an I/O error (OSError in
// Python, exit 5 from the CLI), MemoryError, KeyboardInterrupt and SystemExit stay themselves, anything
// else is a data error of the deserializer. `doing` says what failed ("could not load chunk 3").
[[noreturn]] void throw_python_failure(const py::error_already_set& e, const std::string& doing,
                                       const SourceLocation& location) {
  const std::string text = "The UserDeserializer " + doing + ": " + python_error_text(e);
  for (PyObject* kind : {PyExc_MemoryError, PyExc_KeyboardInterrupt, PyExc_SystemExit}) {
    if (e.matches(kind)) throw PythonBuiltinError(kind, text);
  }
  if (e.matches(PyExc_OSError)) {
    int error_number = 0;
    const py::object number = e.value().attr("errno");
    if (py::isinstance<py::int_>(number)) error_number = number.cast<int>();
    const py::object file = e.value().attr("filename");
    throw IoError(text + "; the file",
                  py::isinstance<py::str>(file) ? file.cast<std::string>() : location.file, error_number);
  }
  throw FormatError(text, location);
}

struct StreamData {
  std::vector<char> values;          // dense: samples x dim values; sparse: the nonzero values
  std::vector<int32_t> indices;      // sparse: feature index of each value
  std::vector<uint32_t> nnz_counts;  // sparse: entries of each sample
  std::vector<uint32_t> lengths;     // samples of each sequence
  std::vector<size_t> first_sample;  // per sequence: its first sample
  std::vector<size_t> first_value;   // sparse, per sequence: its first nonzero value
};

class UserChunk final : public Chunk {
 public:
  UserChunk(std::vector<StreamData> streams, std::vector<size_t> dims, size_t value_size)
      : streams_(std::move(streams)), dims_(std::move(dims)), value_size_(value_size) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    for (size_t s = 0; s < streams_.size(); ++s) {
      const StreamData& d = streams_[s];
      SequenceData data;
      data.number_of_samples = d.lengths[index_in_chunk];
      const size_t first = d.first_sample[index_in_chunk];
      if (d.first_value.empty()) {
        data.values = d.values.data() + first * dims_[s] * value_size_;
      } else {
        const size_t value = d.first_value[index_in_chunk];
        data.values = d.values.data() + value * value_size_;
        data.indices = d.indices.data() + value;
        data.nnz_counts = d.nnz_counts.data() + first;
        const size_t end =
            index_in_chunk + 1 < d.first_value.size() ? d.first_value[index_in_chunk + 1] : d.indices.size();
        data.total_nnz = end - value;
      }
      out.push_back(data);
    }
  }

 private:
  std::vector<StreamData> streams_;
  std::vector<size_t> dims_;
  size_t value_size_;
};

class UserDeserializer final : public Deserializer {
 public:
  UserDeserializer(std::shared_ptr<PythonHandle> adapter, const DeserializerContext& context)
      : adapter_(std::move(adapter)), keys_(context.keys), element_type_(context.element_type) {
    if (!keys_) keys_ = std::make_shared<KeyTable>();
    py::gil_scoped_acquire gil;
    try {
      const py::object& a = adapter_->object();
      name_ = a.attr("name").cast<std::string>();
      uint32_t id = 0;
      for (const py::handle item : a.attr("stream_list")()) {
        const auto t = item.cast<py::tuple>();
        StreamInfo info;
        info.id = id++;
        info.name = t[0].cast<std::string>();
        info.alias = info.name;
        info.storage = t[1].cast<bool>() ? StorageFormat::kSparseCsc : StorageFormat::kDense;
        info.element_type = element_type_;
        info.sample_shape = t[2].cast<std::vector<size_t>>();
        info.defines_mb_size = t[3].cast<bool>();
        streams_.push_back(info);
      }
      const auto chunks = a.attr("num_chunks").cast<uint32_t>();
      const char* dtype = element_type_ == ElementType::kFloat ? "float32" : "float64";
      for (uint32_t c = 0; c < chunks; ++c) {
        const auto lengths = a.attr("lengths")(c, dtype).cast<py::array_t<int64_t, py::array::c_style>>();
        ChunkInfo chunk;
        chunk.id = c;
        chunk.number_of_sequences = static_cast<size_t>(lengths.size());
        chunk_first_sequence_.push_back(lengths_.size());
        for (py::ssize_t i = 0; i < lengths.size(); ++i) {
          lengths_.push_back(static_cast<uint32_t>(lengths.at(i)));
          chunk.number_of_samples += static_cast<size_t>(lengths.at(i));
        }
        chunks_.push_back(chunk);
      }
    } catch (py::error_already_set& e) {
      throw_python_failure(e, "could not be indexed", location());
    }
    // Keys: the running index of each sequence through the chunks (see _user_deserializer.py).
    key_ids_.reserve(lengths_.size());
    for (size_t i = 0; i < lengths_.size(); ++i) {
      const uint64_t id = keys_->id_of(std::to_string(i));
      key_ids_.push_back(id);
      if (!keys_->is_numeric()) by_key_.emplace(id, i);
    }
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  std::vector<ChunkInfo> chunk_infos() const override { return chunks_; }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    const size_t first = chunk_first_sequence_.at(chunk_id);
    for (size_t i = 0; i < chunks_[chunk_id].number_of_sequences; ++i) out.push_back(info_of(first + i));
  }

  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    size_t global = 0;
    if (keys_->is_numeric()) {
      if (key.sequence >= lengths_.size()) return std::nullopt;
      global = static_cast<size_t>(key.sequence);
    } else {
      const auto it = by_key_.find(key.sequence);
      if (it == by_key_.end()) return std::nullopt;
      global = it->second;
    }
    return info_of(global);
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    if (chunk_id >= chunks_.size()) {
      throw UsageError("UserDeserializer " + name_ + ": chunk " + std::to_string(chunk_id) +
                       " requested, it has " + std::to_string(chunks_.size()));
    }
    const size_t value_size = element_size(element_type_);
    std::vector<StreamData> data(streams_.size());
    std::vector<size_t> dims;
    for (const StreamInfo& s : streams_) dims.push_back(s.sample_dim());
    const size_t first = chunk_first_sequence_[chunk_id];
    const size_t count = chunks_[chunk_id].number_of_sequences;
    py::gil_scoped_acquire gil;
    try {
      const char* dtype = element_type_ == ElementType::kFloat ? "float32" : "float64";
      const auto parts = adapter_->object().attr("chunk")(chunk_id, dtype).cast<py::list>();
      for (size_t s = 0; s < streams_.size(); ++s) {
        const auto part = parts[s].cast<py::tuple>();
        copy_stream(part, s, dims[s], value_size, chunk_id, first, count, data[s]);
      }
      // A sequence's longest stream gave its scheduling length when it was indexed: shorter now is a change.
      for (size_t i = 0; i < count; ++i) {
        uint32_t longest = 0;
        for (const StreamData& d : data) longest = std::max(longest, d.lengths[i]);
        if (longest != lengths_[first + i]) {
          throw FormatError("get_chunk returned sequence " + std::to_string(i) + " with " +
                                std::to_string(longest) + " samples, shorter than when it was indexed (" +
                                std::to_string(lengths_[first + i]) +
                                "): it must return the same data each time",
                            location(), "UserDeserializer " + name_ + ", chunk " + std::to_string(chunk_id));
        }
      }
    } catch (py::error_already_set& e) {
      throw_python_failure(e, "could not load chunk " + std::to_string(chunk_id), location());
    }
    return std::make_shared<UserChunk>(std::move(data), std::move(dims), value_size);
  }

  std::string key_to_string(const SequenceKey& key) const override { return keys_->key_of(key.sequence); }

  SourceLocation sequence_location(const SequenceKey& key) const override {
    SourceLocation at = location();
    at.sequence_key = key_to_string(key);
    return at;
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> lines = Deserializer::describe();
    lines.insert(lines.begin(), "Python UserDeserializer " + name_);
    return lines;
  }

 private:
  SourceLocation location() const {
    SourceLocation at;
    at.file = "UserDeserializer " + name_;
    return at;
  }

  SequenceInfo info_of(size_t global) const {
    const auto it = std::upper_bound(chunk_first_sequence_.begin(), chunk_first_sequence_.end(), global);
    const auto chunk = static_cast<uint32_t>(it - chunk_first_sequence_.begin() - 1);
    SequenceInfo info;
    info.chunk_id = chunk;
    info.index_in_chunk = static_cast<uint32_t>(global - chunk_first_sequence_[chunk]);
    info.number_of_samples = lengths_[global];
    info.key = SequenceKey{key_ids_[global], 0};
    return info;
  }

  // Copies stream `s` of a chunk from the adapter's (values, indices, nnz_counts, lengths), checking it
  // against the index: the scheduling lengths were taken from the first load and must not change.
  void copy_stream(const py::tuple& part, size_t s, size_t dim, size_t value_size, uint32_t chunk_id,
                   size_t first, size_t count, StreamData& out) const {
    const std::string where = "UserDeserializer " + name_ + ", chunk " + std::to_string(chunk_id) +
                              ", stream '" + streams_[s].name + "'";
    const auto lengths = part[3].cast<py::array_t<int64_t, py::array::c_style>>();
    if (static_cast<size_t>(lengths.size()) != count) {
      throw FormatError("get_chunk returned " + std::to_string(lengths.size()) + " sequences, " +
                            std::to_string(count) +
                            " when it was indexed: it must return the same data each time",
                        location(), where);
    }
    size_t samples = 0;
    for (size_t i = 0; i < count; ++i) {
      const auto n = static_cast<size_t>(lengths.at(static_cast<py::ssize_t>(i)));
      if (n > lengths_[first + i]) {
        throw FormatError("get_chunk returned " + std::to_string(n) + " samples for sequence " +
                              std::to_string(i) + ", longer than when it was indexed (" +
                              std::to_string(lengths_[first + i]) + ")",
                          location(), where);
      }
      out.lengths.push_back(static_cast<uint32_t>(n));
      out.first_sample.push_back(samples);
      samples += n;
    }
    const auto values = py::reinterpret_borrow<py::array>(part[0]);
    const size_t value_count = static_cast<size_t>(values.size());
    if (streams_[s].storage == StorageFormat::kDense) {
      if (value_count != samples * dim) {
        throw FormatError("get_chunk returned " + std::to_string(value_count) + " values for " +
                              std::to_string(samples) + " samples of dimension " + std::to_string(dim),
                          location(), where);
      }
      out.values.resize(value_count * value_size);
      if (value_count != 0) std::memcpy(out.values.data(), values.data(), value_count * value_size);
      return;
    }
    const auto indices = part[1].cast<py::array_t<int32_t, py::array::c_style>>();
    const auto nnz = part[2].cast<py::array_t<uint32_t, py::array::c_style>>();
    if (static_cast<size_t>(nnz.size()) != samples || static_cast<size_t>(indices.size()) != value_count) {
      throw FormatError("get_chunk returned sparse data whose counts disagree (" + std::to_string(samples) +
                            " samples, " + std::to_string(nnz.size()) + " entry counts, " +
                            std::to_string(indices.size()) + " indices, " + std::to_string(value_count) +
                            " values)",
                        location(), where);
    }
    out.nnz_counts.assign(nnz.data(), nnz.data() + nnz.size());
    out.indices.assign(indices.data(), indices.data() + indices.size());
    size_t total = 0;
    for (uint32_t c : out.nnz_counts) total += c;
    if (total != value_count) {
      throw FormatError("get_chunk returned sparse samples with " + std::to_string(total) + " entries and " +
                            std::to_string(value_count) + " values",
                        location(), where);
    }
    for (size_t k = 0; k < out.indices.size(); ++k) {
      if (out.indices[k] < 0 || static_cast<size_t>(out.indices[k]) >= dim) {
        throw FormatError("get_chunk returned the sparse index " + std::to_string(out.indices[k]) +
                              ", outside the stream's dimension " + std::to_string(dim),
                          location(), where);
      }
    }
    out.values.resize(value_count * value_size);
    if (value_count != 0) std::memcpy(out.values.data(), values.data(), value_count * value_size);
    size_t value = 0;
    for (size_t i = 0; i < count; ++i) {
      out.first_value.push_back(value);
      for (size_t k = 0; k < out.lengths[i]; ++k) value += out.nnz_counts[out.first_sample[i] + k];
    }
  }

  std::shared_ptr<PythonHandle> adapter_;
  KeyTablePtr keys_;
  ElementType element_type_;
  std::string name_;
  std::vector<StreamInfo> streams_;
  std::vector<ChunkInfo> chunks_;
  std::vector<size_t> chunk_first_sequence_;     // per chunk: the running index of its first sequence
  std::vector<uint32_t> lengths_;                // per sequence: its scheduling length
  std::vector<uint64_t> key_ids_;                // per sequence: its key id
  std::unordered_map<uint64_t, size_t> by_key_;  // key id -> running index (string and hashed keys)
};

}  // namespace

void register_user_deserializer_type() {
  DeserializerType type;
  type.name = kUserDeserializerType;
  type.spec_from_config = [](const Config& section, const ConfigContext&) -> DeserializerSpec {
    throw section.error("type",
                        "A PythonUserDeserializer is made from Python (a cntkio.UserDeserializer "
                        "object given to MinibatchSource), not from a config.");
  };
  type.create = [](const DeserializerSpec& spec,
                   const DeserializerContext& context) -> std::shared_ptr<Deserializer> {
    const auto options = options_of<UserDeserializerOptions>(spec, "a UserDeserializer's adapter");
    if (!options.adapter) throw UsageError("A PythonUserDeserializer spec holds no Python object.");
    return std::make_shared<UserDeserializer>(options.adapter, context);
  };
  register_deserializer(std::move(type));
}

void bind_user_deserializer(py::module_& m) {
  m.def(
      "_user_deserializer_spec",
      [](py::object adapter) {
        DeserializerSpec spec;
        spec.type = kUserDeserializerType;
        spec.options = UserDeserializerOptions{std::make_shared<PythonHandle>(std::move(adapter))};
        return spec;
      },
      py::arg("adapter"),
      "The DeserializerSpec of a UserDeserializer (its cntkio._user_deserializer._Adapter).");
}

}  // namespace cntkio::python
