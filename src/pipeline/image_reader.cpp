#include "pipeline/image_reader.hpp"

#include "cntkio/image.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/transform_stage.hpp"

namespace cntkio::pipeline {

ReaderParts make_image_reader(const Config& reader, size_t threads) {
  ImageReaderSettings settings = image_reader_settings_from_config(reader);
  settings.options.keys = std::make_shared<KeyTable>(KeyMode::kString);  // this path uses string keys
  std::shared_ptr<Deserializer> deserializer = make_image_deserializer(settings.options);
  std::vector<SequenceTransformerPtr> transformers;
  append_transformers(*deserializer, transformers);
  auto pool = threads > 0 ? std::make_shared<core::ThreadPool>(threads) : nullptr;
  std::shared_ptr<SequenceEnumerator> randomizer;
  if (settings.randomize) {
    randomizer =
        std::make_shared<BlockRandomizer>(deserializer, 1, true, settings.randomization_seed, 0, pool);
  } else {
    randomizer = std::make_shared<NoRandomizer>(deserializer, 0, pool);
  }
  ReaderParts parts;
  parts.enumerator = with_transforms(randomizer, std::move(transformers), threads);
  parts.packer = make_frame_packer(parts.enumerator, false);
  return parts;
}

}  // namespace cntkio::pipeline
