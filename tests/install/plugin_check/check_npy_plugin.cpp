// Checks the example plugin (examples/plugin) in a program that links the installed shared libcntkio:
//
//   check_npy_plugin CONFIG BAD_FOLDER
//
// CONFIG is examples/plugin/npy.cntk, run from a folder that holds its data/ (make_data.py's files); the
// plugin is found as the config says (module = "cntkio_npy"). BAD_FOLDER holds a .npy file whose values are
// cut short. Checks, each against the values make_data.py writes (times the config's factor 10):
//  - the config's reader and the same reader built as a ReaderSpec in C++ deliver the same minibatches;
//  - one sweep delivers every sequence once, randomized (not in file order);
//  - two workers together deliver every sequence exactly once;
//  - a reader restored from a checkpoint after any minibatch continues as the uninterrupted one;
//  - the plugin's FormatError reaches this program as a cntkio::FormatError.
// Prints "plugin check passed" and what it read; exits 1 with the failed check on stderr.
#include <cntkio/config.hpp>
#include <cntkio/errors.hpp>
#include <cntkio/minibatch_source.hpp>
#include <cntkio/reader_spec.hpp>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "npy_plugin.hpp"

namespace {

constexpr int kFiles = 12;
constexpr double kFactor = 10;
constexpr size_t kMinibatchSize = 8;

struct Sequence {
  std::string key;
  std::vector<double> values;
  friend bool operator==(const Sequence&, const Sequence&) = default;
};

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("check failed: " + what);
}

// make_data.py: sequence i has 1 + (5 i mod 7) samples; value d of sample t is 100 i + 10 t + d.
std::map<std::string, std::vector<double>> expected_sequences() {
  std::map<std::string, std::vector<double>> out;
  for (int i = 0; i < kFiles; ++i) {
    char key[8];
    std::snprintf(key, sizeof key, "s%02d", i);
    for (int t = 0; t < 1 + (5 * i) % 7; ++t) {
      for (int d = 0; d < 3; ++d) out[key].push_back(kFactor * (100 * i + 10 * t + d));
    }
  }
  return out;
}

std::vector<Sequence> read(cntkio::MinibatchSource& source, size_t limit = SIZE_MAX) {
  std::vector<Sequence> out;
  cntkio::Minibatch minibatch;
  for (size_t n = 0; n < limit && source.next_minibatch(minibatch); ++n) {
    const cntkio::StreamBatch& batch = minibatch.streams.at(0);
    for (const cntkio::Layout::Entry& entry : batch.layout.entries) {
      if (entry.is_gap) continue;
      Sequence sequence{minibatch.keys.at(entry.sequence_index), {}};
      for (ptrdiff_t t = entry.t_begin; t < entry.t_end; ++t) {
        const size_t column = static_cast<size_t>(t) * batch.layout.num_parallel + entry.row;
        for (size_t row = 0; row < batch.info.sample_dim(); ++row) {
          sequence.values.push_back(batch.value_at(row, column));
        }
      }
      out.push_back(std::move(sequence));
    }
  }
  return out;
}

std::vector<Sequence> read_sweep(const cntkio::ReaderSpec& spec, size_t rank = 0, size_t workers = 1) {
  std::unique_ptr<cntkio::MinibatchSource> source = cntkio::MinibatchSource::create(spec);
  source->start_epoch(kMinibatchSize, 0, cntkio::kFullSweep, rank, workers);
  return read(*source);
}

// The reader of npy.cntk, written in C++.
cntkio::ReaderSpec spec_in_cpp(const std::string& folder) {
  cntkio_npy::NpyOptions options;
  options.folder = folder;
  options.stream = "features";
  options.dim = 3;
  options.files_per_chunk = 4;
  cntkio::DeserializerSpec deserializer;
  deserializer.type = cntkio_npy::kDeserializerType;
  deserializer.module = "cntkio_npy";
  deserializer.options = options;
  deserializer.transforms.push_back(
      {"features",
       {cntkio::TransformSpec{cntkio_npy::kMultiplyType, "", cntkio_npy::MultiplyOptions{kFactor}}}});
  cntkio::ReaderSpec spec;
  spec.source.randomize = true;
  spec.source.seed = 1;
  spec.deserializers.push_back(deserializer);
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CONFIG BAD_FOLDER\n", argv[0]);
    return 2;
  }
  try {
    const cntkio::Config config = cntkio::Config::from_files({argv[1]});
    const cntkio::ReaderSpec spec =
        cntkio::ReaderSpec::from_config(config.get_block("Train").get_block("reader"));
    const std::map<std::string, std::vector<double>> expected = expected_sequences();

    // One sweep: every sequence once, with its values, randomized; the same from the C++ spec.
    const std::vector<Sequence> sweep = read_sweep(spec);
    std::map<std::string, std::vector<double>> seen;
    std::vector<std::string> order;
    for (const Sequence& s : sweep) {
      check(seen.emplace(s.key, s.values).second, "sequence " + s.key + " read twice in one sweep");
      order.push_back(s.key);
    }
    check(seen == expected, "the sweep's sequences or values differ from make_data.py's");
    std::vector<std::string> file_order;
    for (const auto& [key, values] : expected) file_order.push_back(key);
    check(order != file_order, "the sweep is in file order, not randomized");
    check(read_sweep(spec_in_cpp("data")) == sweep, "the C++ ReaderSpec reads otherwise than the config");

    // Two workers: each sequence exactly once between them; each resumes exactly from any checkpoint.
    std::multiset<std::string> both;
    for (size_t rank = 0; rank < 2; ++rank) {
      const std::vector<Sequence> whole = read_sweep(spec, rank, 2);
      for (const Sequence& s : whole) both.insert(s.key);
      for (size_t cut = 1;; ++cut) {
        std::unique_ptr<cntkio::MinibatchSource> first = cntkio::MinibatchSource::create(spec);
        first->start_epoch(kMinibatchSize, 0, cntkio::kFullSweep, rank, 2);
        std::vector<Sequence> resumed = read(*first, cut);
        if (resumed.size() == whole.size()) break;
        const std::string state = first->state().to_json();
        std::unique_ptr<cntkio::MinibatchSource> second = cntkio::MinibatchSource::create(spec);
        second->start_epoch(kMinibatchSize, 0, cntkio::kFullSweep, rank, 2);
        second->restore(cntkio::ReaderState::from_json(state));
        for (Sequence& s : read(*second)) resumed.push_back(std::move(s));
        check(resumed == whole, "worker " + std::to_string(rank) + " restored after minibatch " +
                                    std::to_string(cut) + " reads otherwise");
      }
    }
    std::multiset<std::string> all(file_order.begin(), file_order.end());
    check(both == all, "two workers do not read every sequence exactly once");

    // The plugin's FormatError, thrown in the plugin, is caught here as what it is.
    try {
      read_sweep(spec_in_cpp(argv[2]));
      check(false, "the cut .npy file was read");
    } catch (const cntkio::FormatError& e) {
      std::printf("format error caught: %s\n", e.what());
    }

    std::printf("plugin check passed: %zu sequences, order", sweep.size());
    for (const std::string& key : order) std::printf(" %s", key.c_str());
    std::printf("\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
