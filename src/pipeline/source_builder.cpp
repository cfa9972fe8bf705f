// MinibatchSource::create: a ReaderSpec assembled into deserializers (by their registered types), the
// bundler, a randomizer, the transform stage and a packer (design.md's one picture).
#include <chrono>
#include <memory>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/registry.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/block_randomizer.hpp"
#include "pipeline/bundler.hpp"
#include "pipeline/chunk_cache.hpp"
#include "pipeline/composed_source.hpp"
#include "pipeline/no_randomizer.hpp"
#include "pipeline/packer.hpp"
#include "pipeline/stage_times.hpp"
#include "pipeline/transform_stage.hpp"
#include "spec/config_rules.hpp"

namespace cntkio {
namespace {

// The randomizer the options ask for, loading chunks on `pool` (may be null).
std::shared_ptr<pipeline::SequenceEnumerator> make_randomizer(std::shared_ptr<Deserializer> deserializer,
                                                              const SourceOptions& source,
                                                              std::shared_ptr<core::ThreadPool> pool,
                                                              std::shared_ptr<pipeline::StageTimes> times,
                                                              pipeline::SkipSources& skips) {
  if (!source.randomize) {
    auto randomizer = std::make_shared<pipeline::NoRandomizer>(std::move(deserializer), source.max_errors,
                                                               std::move(pool), std::move(times));
    skips.sequences_removed = [randomizer] { return randomizer->invalid_sequences_removed(); };
    skips.sequences_removed_keys = [randomizer] { return randomizer->invalid_sequence_keys(); };
    return randomizer;
  }
  auto randomizer = std::make_shared<pipeline::BlockRandomizer>(
      std::move(deserializer), *source.randomization_window, *source.sample_based_window, source.seed,
      source.max_errors, std::move(pool), std::move(times));
  skips.sequences_removed = [randomizer] { return randomizer->invalid_sequences_removed(); };
  skips.sequences_removed_keys = [randomizer] { return randomizer->invalid_sequence_keys(); };
  return randomizer;
}

// The transformers of the joined streams, in their order (deserializer after deserializer): each stream's
// chain from the spec's transforms naming it, null for the others.
std::vector<SequenceTransformerPtr> make_transformers(
    const std::vector<DeserializerSpec>& specs,
    const std::vector<std::shared_ptr<Deserializer>>& deserializers, const TransformContext& context) {
  std::vector<SequenceTransformerPtr> out;
  for (size_t d = 0; d < deserializers.size(); ++d) {
    const std::vector<StreamInfo>& streams = deserializers[d]->streams();
    for (const StreamTransforms& chain : specs[d].transforms) {
      bool known = false;
      std::string names;
      for (const StreamInfo& s : streams) {
        known = known || s.name == chain.stream;
        names += (names.empty() ? "'" : ", '") + s.name + "'";
      }
      if (!known && !chain.transforms.empty()) {
        throw UsageError("The transforms of a '" + specs[d].type + "' deserializer name the stream '" +
                         chain.stream + "', which it does not have (its streams: " + names + ").");
      }
    }
    for (const StreamInfo& stream : streams) {
      // Several entries for one stream make one chain, in the order given.
      std::vector<TransformSpec> transforms;
      for (const StreamTransforms& chain : specs[d].transforms) {
        if (chain.stream == stream.name)
          transforms.insert(transforms.end(), chain.transforms.begin(), chain.transforms.end());
      }
      out.push_back(transforms.empty() ? nullptr
                                       : pipeline::make_stream_transformer(transforms, stream, context));
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<MinibatchSource> MinibatchSource::create(const ReaderSpec& given) {
  const auto started = std::chrono::steady_clock::now();
  if (given.deserializers.empty()) throw UsageError("A reader needs at least one deserializer.");
  ReaderSpec spec = given;
  for (const DeserializerSpec& d : spec.deserializers) {
    load_module(d.module);
    for (const StreamTransforms& stream : d.transforms) {
      for (const TransformSpec& t : stream.transforms) load_module(t.module);
    }
  }
  SourceOptions& s = spec.source;
  spec_detail::resolve_reader_defaults(s, spec.deserializers, nullptr);
  if (s.packing == Packing::kTruncatedSequences && s.truncation_length == 0 &&
      s.truncation_slots_per_epoch.empty()) {
    throw UsageError("Truncated packing needs a truncation length greater than 0.");
  }
  if (s.packing != Packing::kTruncatedSequences && (s.truncation_length > 0 || s.right_splice > 0)) {
    throw UsageError(
        std::string(s.truncation_length > 0 ? "A truncation length" : "A right splice") +
        " is set, but the packing is not truncated (Packing::kTruncatedSequences; [truncated = true] "
        "in a config): it would be ignored.");
  }

  DeserializerContext context;
  context.keys = std::make_shared<KeyTable>(*s.keys);
  context.element_type = s.element_type;
  context.frame_mode = s.packing == Packing::kFrames;
  context.trace_level = s.trace_level;
  context.max_errors = s.max_errors;
  context.alone = spec.deserializers.size() == 1;
  std::vector<std::shared_ptr<Deserializer>> deserializers;
  for (DeserializerSpec& d : spec.deserializers) {
    const std::shared_ptr<const DeserializerType> type = find_deserializer_type(d.type);
    if (type->complete) type->complete(d, context);
    deserializers.push_back(type->create(d, context));
    if (!deserializers.back()) throw Error("The '" + d.type + "' deserializer type created no deserializer.");
  }
  std::shared_ptr<Deserializer> joined =
      deserializers.size() == 1 ? deserializers[0] : pipeline::make_bundler(deserializers);

  pipeline::SourceParts parts;
  parts.settings.prefetch = s.prefetch;
  parts.settings.threads = s.threads.value_or(core::ThreadPool::hardware_threads());
  parts.settings.trace_level = s.trace_level.value_or(1);
  parts.skips.deserializers = deserializers;
  std::vector<std::string> types;
  for (const DeserializerSpec& d : spec.deserializers) types.push_back(d.type);
  parts.describe = [deserializers, types] {
    std::vector<std::string> lines;
    for (size_t i = 0; i < deserializers.size(); ++i) {
      lines.push_back("deserializer " + types[i]);
      for (const std::string& line : deserializers[i]->describe()) lines.push_back("  " + line);
    }
    return lines;
  };
  if (deserializers.size() > 1) parts.skips.bundler = joined;
  for (const ChunkInfo& chunk : joined->chunk_infos()) {
    if (chunk.number_of_sequences > 0) ++parts.partition_chunks;  // the randomizers' non_empty_chunks
  }
  std::shared_ptr<pipeline::CachingDeserializer> cache;
  if (s.chunk_cache_bytes > 0) {
    cache = std::make_shared<pipeline::CachingDeserializer>(joined, s.chunk_cache_bytes);
    joined = cache;
  }
  auto times = std::make_shared<pipeline::StageTimes>();
  auto pool =
      parts.settings.threads > 0 ? std::make_shared<core::ThreadPool>(parts.settings.threads) : nullptr;
  parts.times = times;
  parts.pool = pool;
  parts.more_stats = [pool, cache](SourceStats& stats) {
    if (pool) stats.loader_busy_s = pool->busy_seconds();
    if (cache) stats.chunk_cache = cache->stats();
  };

  TransformContext transform_context;
  transform_context.element_type = s.element_type;
  transform_context.trace_level = s.trace_level.value_or(1);
  std::vector<SequenceTransformerPtr> transformers =
      make_transformers(spec.deserializers, deserializers, transform_context);
  bool any_transforms = false;
  for (const auto& t : transformers) any_transforms = any_transforms || static_cast<bool>(t);
  const bool parallel = s.parallel_transforms.value_or(any_transforms);
  parts.enumerator = pipeline::with_timing(
      pipeline::with_transforms(make_randomizer(joined, s, pool, times, parts.skips), std::move(transformers),
                                parallel ? parts.settings.threads : 0),
      times);
  switch (*s.packing) {
    case Packing::kFrames:
      parts.packer = pipeline::make_frame_packer(parts.enumerator, s.local_timeline);
      break;
    case Packing::kTruncatedSequences:
      parts.packer = pipeline::make_truncated_bptt_packer(parts.enumerator, s.truncation_length,
                                                          s.right_splice, s.truncation_slots_per_epoch);
      parts.truncation_length = s.truncation_length;
      break;
    case Packing::kSequences:
      parts.packer = pipeline::make_sequence_packer(parts.enumerator, s.local_timeline);
      break;
  }
  std::unique_ptr<MinibatchSource> source = pipeline::make_composed_source(std::move(parts));
  if (s.max_samples || s.max_sweeps) {
    source->set_v2_limits(s.max_samples.value_or(kInfinitelyRepeat),
                          s.max_sweeps.value_or(kInfinitelyRepeat));
  }
  times->index_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started)
          .count());
  return source;
}

std::unique_ptr<MinibatchSource> MinibatchSource::from_config(const Config& reader) {
  return create(ReaderSpec::from_config(reader));
}

}  // namespace cntkio
