#include "cntkio/minibatch_source.hpp"

#include <limits>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "core/text.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/bundler.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/registry.hpp"

namespace cntkio {
namespace {

using pipeline::EpochConfiguration;
using pipeline::kRequestDataSize;

constexpr size_t kRandomizeAuto = kRequestDataSize;  // CNTK's randomizeAuto: 2^62 - 1

struct RandomizationSettings {
  bool randomize = false;
  size_t window = 0;
  bool sample_based = false;
  uint64_t seed = 0;
};

class ComposedSource final : public MinibatchSource {
 public:
  ComposedSource(std::shared_ptr<pipeline::SequenceEnumerator> enumerator,
                 std::unique_ptr<pipeline::Packer> packer, size_t truncation_length)
      : enumerator_(std::move(enumerator)),
        packer_(std::move(packer)),
        truncation_length_(truncation_length) {}

  const std::vector<StreamInfo>& streams() const override { return enumerator_->streams(); }

  void start_epoch(size_t minibatch_size, size_t epoch_index, size_t epoch_size, size_t worker_rank,
                   size_t num_workers) override {
    if (epoch_size == 0) throw UsageError("Epoch size cannot be 0.");
    if (minibatch_size == 0) throw UsageError("Minibatch size cannot be 0.");
    if (num_workers == 0 || worker_rank >= num_workers) {
      throw UsageError("Worker rank " + std::to_string(worker_rank) + " is not below the number of workers " +
                       std::to_string(num_workers) + ".");
    }
    EpochConfiguration config;
    config.num_workers = num_workers;
    config.worker_rank = worker_rank;
    config.minibatch_size_in_samples = minibatch_size;
    config.total_epoch_size_in_samples = epoch_size;
    config.epoch_index = epoch_index;
    config.allow_minibatches_to_cross_sweeps = false;
    config.truncation_length = truncation_length_;
    enumerator_->start_epoch(config);
    packer_->set_configuration(config);
    epoch_over_ = false;
    position_ = enumerator_->current_sample_position();
  }

  bool next_minibatch(Minibatch& out) override {
    while (!epoch_over_) {
      Minibatch mb = packer_->read_minibatch();
      position_ = enumerator_->current_sample_position();
      if (mb.end_of_epoch) epoch_over_ = true;
      // CNTK's shim also ends the epoch on an empty minibatch in mid-epoch (possible for one worker of many);
      // that drops the rest of the epoch for this worker, so we keep reading instead.
      if (mb.empty()) continue;
      out = std::move(mb);
      return true;
    }
    return false;
  }

  size_t current_sample_position() const override { return position_; }

 private:
  std::shared_ptr<pipeline::SequenceEnumerator> enumerator_;
  std::unique_ptr<pipeline::Packer> packer_;
  size_t truncation_length_;
  bool epoch_over_ = true;
  size_t position_ = 0;
};

std::shared_ptr<pipeline::SequenceEnumerator> make_randomizer(std::shared_ptr<Deserializer> deserializer,
                                                              const RandomizationSettings& r,
                                                              size_t max_invalid_sequences) {
  if (!r.randomize)
    return std::make_shared<pipeline::NoRandomizer>(std::move(deserializer), max_invalid_sequences);
  return std::make_shared<pipeline::BlockRandomizer>(std::move(deserializer), r.window, r.sample_based,
                                                     r.seed, max_invalid_sequences);
}

void check_precision(const Config& reader) {
  std::string precision = reader.get_string("precision", "float");
  if (precision != "float" && precision != "double") {
    throw ConfigError("precision must be exactly 'float' or 'double', not '" + precision + "'.",
                      reader.path() + ".precision");
  }
}

// Stand-alone readers (readerType = CNTKTextFormatReader): spec pipeline.md §1.2 and §3.1.
std::unique_ptr<MinibatchSource> make_standalone(const Config& reader, const std::string& reader_type) {
  std::string type = pipeline::deserializer_type_for_reader(reader_type);
  if (type != "CNTKTextFormatDeserializer") {
    throw ConfigError("readerType '" + reader_type + "' is not supported (supported: CNTKTextFormatReader).",
                      reader.path() + ".readerType");
  }
  CtfOptions options = ctf_options_from_config(reader, false);
  std::shared_ptr<Deserializer> deserializer = make_ctf_deserializer(options);

  RandomizationSettings r;
  std::string randomize = reader.get_string("randomize", "true");
  if (core::iequals(randomize, "none")) {
    r.randomize = false;
  } else {
    r.randomize = Config::to_bool(randomize, reader.path() + ".randomize");
  }
  if (r.randomize) {
    size_t window =
        reader.exists("randomizationWindow") ? reader.get_uint("randomizationWindow") : kRandomizeAuto;
    r.sample_based = reader.get_bool("sampleBasedRandomizationWindow", false);
    if (!r.sample_based && window == kRandomizeAuto) window = 4294967296ull / options.chunk_size_in_bytes;
    r.window = window;
    r.seed = reader.get_uint("randomizationSeed", 0);
    if (window == 0) r.randomize = false;
  }
  auto enumerator = make_randomizer(deserializer, r, 0);
  bool frame_mode = reader.get_bool("frameMode", false);
  auto packer = frame_mode ? pipeline::make_frame_packer(enumerator, false)
                           : pipeline::make_sequence_packer(enumerator, false);
  return std::make_unique<ComposedSource>(enumerator, std::move(packer), 0);
}

// Composite reader (deserializers = ( [...]:[...] )): spec pipeline.md §1.2, §3.1, §6.
std::unique_ptr<MinibatchSource> make_composite(const Config& reader) {
  const bool frame_mode = reader.get_bool("frameMode", false);
  const bool truncated = reader.get_bool("truncated", false);
  const size_t truncation_length = reader.get_uint("truncationLength", 0);
  if (frame_mode && truncated) {
    throw ConfigError("frameMode and truncated BPTT are mutually exclusive.", reader.path() + ".truncated");
  }
  if (truncated && truncation_length == 0) {
    throw ConfigError("truncated=true needs truncationLength greater than 0.",
                      reader.path() + ".truncationLength");
  }
  const std::string precision = reader.get_string("precision", "float");
  const bool has_trace_level = reader.exists("traceLevel");
  const std::string trace_level = has_trace_level ? reader.get_string("traceLevel") : std::string();

  std::vector<Config> sections = reader.get_block_array("deserializers");
  if (sections.empty())
    throw ConfigError("'deserializers' lists no deserializer.", reader.path() + ".deserializers");
  std::vector<std::shared_ptr<Deserializer>> deserializers;
  bool any_ctf = false;
  bool string_keys_by_default = false;
  for (const Config& section : sections) {
    string_keys_by_default = string_keys_by_default || pipeline::prefers_string_keys(section.get_string("type"));
  }
  const bool numeric_keys = reader.get_bool("useNumericSequenceKeys", !string_keys_by_default);
  const bool hashed_keys = reader.get_bool("hashSequenceKeys", false);
  pipeline::DeserializerContext context;
  context.keys = std::make_shared<KeyTable>(numeric_keys ? KeyMode::kNumeric
                                            : hashed_keys ? KeyMode::kHashed
                                                          : KeyMode::kString);
  for (Config& section : sections) {
    section.set("frameMode", frame_mode ? "true" : "false");
    section.set("precision", precision);
    if (has_trace_level) section.set("traceLevel", trace_level);
    std::string type = section.get_string("type");
    if (type == "CNTKTextFormatDeserializer") any_ctf = true;
    deserializers.push_back(pipeline::create_deserializer(type, section, context));
  }
  std::shared_ptr<Deserializer> joined =
      deserializers.size() == 1 ? deserializers[0] : pipeline::make_bundler(deserializers);

  RandomizationSettings r;
  r.randomize = reader.get_bool("randomize", true);
  r.window = reader.exists("randomizationWindow") ? reader.get_uint("randomizationWindow") : kRandomizeAuto;
  r.sample_based = reader.get_bool("sampleBasedRandomizationWindow", true);
  if (any_ctf && !reader.exists_current("randomizationWindow")) {
    if (!reader.exists("sampleBasedRandomizationWindow") || !r.sample_based) {
      r.sample_based = false;
      r.window = 4294967296ull / reader.get_uint("chunkSizeInBytes", 32ull << 20);
    } else {
      throw ConfigError(
          "A sample-based randomization window must be given explicitly (randomizationWindow) when a CTF "
          "deserializer is used.",
          reader.path() + ".randomizationWindow");
    }
  }
  r.seed = reader.get_uint("randomizationSeed", 0);
  const size_t max_errors = reader.get_uint("maxErrors", 0);
  auto enumerator = make_randomizer(joined, r, max_errors);
  const bool local_timeline = reader.get_bool("localTimeline", true);
  std::unique_ptr<pipeline::Packer> packer;
  if (frame_mode) {
    packer = pipeline::make_frame_packer(enumerator, local_timeline);
  } else if (truncated) {
    packer = pipeline::make_truncated_bptt_packer(enumerator, truncation_length,
                                                  reader.get_uint("rightSplice", 0));
  } else {
    packer = pipeline::make_sequence_packer(enumerator, local_timeline);
  }
  return std::make_unique<ComposedSource>(enumerator, std::move(packer), truncated ? truncation_length : 0);
}

}  // namespace

std::unique_ptr<MinibatchSource> MinibatchSource::from_config(const Config& reader) {
  check_precision(reader);
  if (reader.exists("readers")) {
    throw ConfigError("Several independent readers ('readers') are not supported.",
                      reader.path() + ".readers");
  }
  if (reader.exists("deserializers")) return make_composite(reader);
  return make_standalone(reader, reader.get_string("readerType", "Cntk.Deserializers.TextFormat"));
}

}  // namespace cntkio
