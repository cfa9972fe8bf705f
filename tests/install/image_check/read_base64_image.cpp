// Reads the first image of a Base64ImageDeserializer map file through the installed shared libcntkio, which
// loads the image component from <libdir>/cntkio. Prints the image's values, one per line.
//
//   read_base64_image MAP_FILE
#include <cntkio/config.hpp>
#include <cntkio/errors.hpp>
#include <cntkio/minibatch_source.hpp>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s MAP_FILE\n", argv[0]);
    return 2;
  }
  try {
    const cntkio::Config config = cntkio::Config::from_text(
        "reader = [ randomize = false\n"
        "  deserializers = ([ type = \"Base64ImageDeserializer\" ; file = \"" +
        std::string(argv[1]) +
        "\"\n"
        "    input = [ features = [ transforms = ( [ type = \"Scale\" ; width = 1 ; height = 1 ; channels = "
        "3 ] ) ]\n"
        "              labels = [ labelDim = 2 ] ] ]) ]\n");
    auto source = cntkio::MinibatchSource::from_config(config.get_block("reader"));
    size_t features = 0;
    for (const cntkio::StreamInfo& stream : source->streams()) {
      if (stream.name == "features") features = stream.id;
    }
    source->start_epoch(1, 0, cntkio::kFullSweep);
    cntkio::Minibatch minibatch;
    if (!source->next_minibatch(minibatch)) throw cntkio::UsageError("no minibatch");
    const cntkio::StreamBatch& batch = minibatch.streams[features];
    for (size_t row = 0; row < 3; ++row) std::printf("%g\n", batch.value_at(row, 0));
  } catch (const cntkio::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
