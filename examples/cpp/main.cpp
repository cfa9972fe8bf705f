// Reads a CNTK Text Format file with cntkio's public API: a reader section in CNTK's config language,
// a MinibatchSource built from it, and one sweep of minibatches in file order.
//
//   read_ctf FILE [MINIBATCH_SIZE]
//
// FILE is a CTF file with a dense stream `features` of dimension 3 and a sparse stream `label` of dimension
// 20 (such as examples/sequences.ctf). Prints the library version, the first sequence's features, and the
// numbers of sequences, samples and label entries read.
#include <cntkio/config.hpp>
#include <cntkio/errors.hpp>
#include <cntkio/minibatch_source.hpp>
#include <cntkio/version.hpp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE [MINIBATCH_SIZE]\n", argv[0]);
    return 2;
  }
  const std::string file = argv[1];
  const size_t minibatch_size = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 64;
  std::printf("cntkio %s\n", cntkio::version());

  try {
    // The same section a CNTK BrainScript config would hold; `randomize = false` reads in file order.
    const cntkio::Config config = cntkio::Config::from_text(
        "reader = [\n"
        "  readerType = \"CNTKTextFormatReader\"\n"
        "  file = \"" +
            file +
            "\"\n"
            "  randomize = false\n"
            "  input = [\n"
            "    features = [ dim = 3 ; format = \"dense\" ]\n"
            "    label = [ dim = 20 ; format = \"sparse\" ]\n"
            "  ]\n"
            "]\n",
        "example config");
    std::unique_ptr<cntkio::MinibatchSource> source =
        cntkio::MinibatchSource::from_config(config.get_block("reader"));

    // Stream positions in the minibatches follow source->streams().
    size_t features = 0, label = 0;
    for (const cntkio::StreamInfo& stream : source->streams()) {
      if (stream.name == "features") features = stream.id;
      if (stream.name == "label") label = stream.id;
    }

    source->start_epoch(minibatch_size, /*epoch_index=*/0, cntkio::kFullSweep);
    cntkio::Minibatch minibatch;
    size_t sequences = 0, samples = 0, label_entries = 0, minibatches = 0;
    while (source->next_minibatch(minibatch)) {
      const cntkio::StreamBatch& batch = minibatch.streams[features];
      if (minibatches == 0) {
        // The first sequence sits in parallel row 0 from time step 0: column t * num_parallel holds step t.
        const cntkio::Layout::Entry& first = batch.layout.entries.front();
        std::printf("first sequence %s:", minibatch.keys[first.sequence_index].c_str());
        for (ptrdiff_t t = first.t_begin; t < first.t_end; ++t) {
          const size_t column = static_cast<size_t>(t) * batch.layout.num_parallel + first.row;
          std::printf(" [%g %g %g]", batch.value_at(0, column), batch.value_at(1, column),
                      batch.value_at(2, column));
        }
        std::printf("\n");
      }
      ++minibatches;
      sequences += batch.layout.num_sequences();
      samples += batch.layout.num_samples();
      label_entries += minibatch.streams[label].nnz();
    }
    std::printf("minibatches %zu\nsequences %zu\nsamples %zu\nlabel entries %zu\n", minibatches, sequences,
                samples, label_entries);
  } catch (const cntkio::Error& e) {  // every cntkio error; what() names the file and position
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
