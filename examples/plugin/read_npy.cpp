// Reads the .npy files of a folder through the cntkio_npy plugin, with a ReaderSpec built in C++ (no
// config): the plugin's deserializer type and options, its Multiply transform, randomized, one sweep.
//
//   read_npy MODULE FOLDER [FACTOR]
//
// MODULE is "cntkio_npy" (searched in CNTKIO_PLUGIN_PATH, then by the system loader) or the plugin's path.
// Prints one line per sequence in the order read: its key, then its samples, values separated by spaces and
// samples by " |"; then the numbers of sequences and samples.
#include <cntkio/errors.hpp>
#include <cntkio/minibatch_source.hpp>
#include <cntkio/reader_spec.hpp>
#include <cntkio/registry.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "npy_plugin.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODULE FOLDER [FACTOR]\n", argv[0]);
    return 2;
  }
  try {
    // Loading the plugin registers its types; MinibatchSource::create would load `module` itself too, but
    // the options below are the plugin's own types, so the plugin should be the one this program built with.
    cntkio::load_module(argv[1]);

    cntkio_npy::NpyOptions npy;
    npy.folder = argv[2];
    npy.stream = "features";
    npy.dim = 3;
    npy.files_per_chunk = 4;

    cntkio::DeserializerSpec deserializer;
    deserializer.type = cntkio_npy::kDeserializerType;
    deserializer.module = argv[1];
    deserializer.options = npy;
    const double factor = argc > 3 ? std::strtod(argv[3], nullptr) : 1.0;
    deserializer.transforms.push_back(
        {"features",
         {cntkio::TransformSpec{cntkio_npy::kMultiplyType, "", cntkio_npy::MultiplyOptions{factor}}}});

    cntkio::ReaderSpec spec;
    spec.source.randomize = true;
    spec.source.seed = 1;
    spec.deserializers.push_back(deserializer);
    std::unique_ptr<cntkio::MinibatchSource> source = cntkio::MinibatchSource::create(spec);

    source->start_epoch(/*minibatch_size=*/8, /*epoch_index=*/0, cntkio::kFullSweep);
    cntkio::Minibatch minibatch;
    size_t sequences = 0, samples = 0;
    while (source->next_minibatch(minibatch)) {
      const cntkio::StreamBatch& batch = minibatch.streams[0];
      for (const cntkio::Layout::Entry& entry : batch.layout.entries) {
        if (entry.is_gap) continue;
        std::printf("%s", minibatch.keys[entry.sequence_index].c_str());
        // Sample t of the sequence in row r is column t * num_parallel + r.
        for (ptrdiff_t t = entry.t_begin; t < entry.t_end; ++t) {
          const size_t column = static_cast<size_t>(t) * batch.layout.num_parallel + entry.row;
          std::printf("%s", t == entry.t_begin ? "" : " |");
          for (size_t row = 0; row < batch.info.sample_dim(); ++row) {
            std::printf(" %g", batch.value_at(row, column));
          }
          ++samples;
        }
        std::printf("\n");
        ++sequences;
      }
    }
    std::printf("sequences %zu\nsamples %zu\n", sequences, samples);
  } catch (const cntkio::Error& e) {  // cntkio's errors, the plugin's included
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
