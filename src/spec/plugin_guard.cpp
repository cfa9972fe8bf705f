#include "spec/plugin_guard.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/transform.hpp"
#include "core/forwarding_deserializer.hpp"

namespace cntkio::spec_detail {
namespace {

// Runs `call`, turning an exception that is not a cntkio error into one that names `who` and `doing`.
template <typename Call>
auto named_failures(const std::string& who, const std::string& doing, Call&& call) -> decltype(call()) {
  try {
    return call();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(who + " failed " + doing + ": " + e.what());
  } catch (...) {
    throw Error(who + " failed " + doing + " (an exception that is not a std::exception).");
  }
}

struct ChunkFacts {
  std::string who;  // "The plugin deserializer 'T' (module 'M')"
  std::shared_ptr<const Deserializer> deserializer;
  uint32_t chunk_id = 0;
  std::vector<SequenceInfo> sequences;  // by index_in_chunk
};

class GuardedChunk final : public Chunk {
 public:
  GuardedChunk(ChunkPtr inner, std::shared_ptr<const ChunkFacts> facts)
      : inner_(std::move(inner)), facts_(std::move(facts)) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    const ChunkFacts& f = *facts_;
    if (index_in_chunk >= f.sequences.size()) {
      throw UsageError(f.who + ": sequence " + std::to_string(index_in_chunk) + " of chunk " +
                       std::to_string(f.chunk_id) + " was asked for; the chunk lists " +
                       std::to_string(f.sequences.size()));
    }
    const size_t before = out.size();
    named_failures(
        f.who,
        "to deliver sequence " + std::to_string(index_in_chunk) + " of chunk " + std::to_string(f.chunk_id),
        [&] { inner_->get_sequence(index_in_chunk, out); });
    check(f.sequences[index_in_chunk],
          std::span<const SequenceData>(out.data() + before, out.size() - before));
  }

  void prefetch_sequence(uint32_t index_in_chunk) const override {
    inner_->prefetch_sequence(index_in_chunk);
  }

 private:
  [[noreturn]] void fail(const SequenceInfo& info, const StreamInfo* stream, const std::string& what) const {
    const ChunkFacts& f = *facts_;
    SourceLocation where = f.deserializer->sequence_location(info.key);
    where.sequence_key = f.deserializer->key_to_string(info.key);
    if (stream != nullptr) where.stream = stream->name;
    if (where.file.empty()) where.file = f.who.substr(4);  // "plugin deserializer '...' (module '...')"
    throw FormatError(f.who + " delivered " + what, std::move(where));
  }

  void check(const SequenceInfo& info, std::span<const SequenceData> data) const {
    const std::vector<StreamInfo>& streams = facts_->deserializer->streams();
    if (data.size() != streams.size()) {
      fail(info, nullptr,
           std::to_string(data.size()) + " streams for a sequence; it declares " +
               std::to_string(streams.size()));
    }
    uint32_t longest = 0;
    bool all_valid = true;
    for (size_t s = 0; s < data.size(); ++s) {
      const SequenceData& d = data[s];
      const StreamInfo& stream = streams[s];
      if (!d.valid) {
        all_valid = false;
        continue;
      }
      if (d.number_of_samples > info.number_of_samples) {
        fail(info, &stream,
             std::to_string(d.number_of_samples) + " samples where its sequence list says " +
                 std::to_string(info.number_of_samples) +
                 ": the data must have the length it was listed with");
      }
      longest = std::max(longest, d.number_of_samples);
      if (d.native != nullptr || d.number_of_samples == 0)
        continue;  // a format's own item, for its transform
      if (d.values == nullptr)
        fail(info, &stream, "no values for " + std::to_string(d.number_of_samples) + " samples");
      if (stream.storage == StorageFormat::kDense) continue;
      if (d.nnz_counts == nullptr || (d.total_nnz > 0 && d.indices == nullptr)) {
        fail(info, &stream, "sparse samples without their entry counts or indices");
      }
      size_t dim = 1;
      for (size_t extent :
           d.sample_shape.empty() ? std::span<const size_t>(stream.sample_shape) : d.sample_shape)
        dim *= extent;
      size_t entries = 0;
      for (uint32_t k = 0; k < d.number_of_samples; ++k) entries += d.nnz_counts[k];
      if (entries != d.total_nnz) {
        fail(info, &stream,
             "sparse samples whose entry counts add up to " + std::to_string(entries) +
                 ", not to its total of " + std::to_string(d.total_nnz));
      }
      for (size_t k = 0; k < d.total_nnz; ++k) {
        if (d.indices[k] < 0 || static_cast<size_t>(d.indices[k]) >= dim) {
          fail(info, &stream,
               "the sparse index " + std::to_string(d.indices[k]) + ", outside the stream's dimension " +
                   std::to_string(dim));
        }
      }
    }
    if (all_valid && longest != info.number_of_samples) {
      fail(info, nullptr,
           "a sequence of " + std::to_string(longest) + " samples where its sequence list says " +
               std::to_string(info.number_of_samples) + ": the data must have the length it was listed with");
    }
  }

  ChunkPtr inner_;
  std::shared_ptr<const ChunkFacts> facts_;
};

class GuardedDeserializer final : public core::ForwardingDeserializer {
 public:
  GuardedDeserializer(std::shared_ptr<Deserializer> inner, std::string who)
      : ForwardingDeserializer(std::move(inner)), who_(std::move(who)) {
    const std::vector<StreamInfo>& streams = inner_->streams();
    for (size_t s = 0; s < streams.size(); ++s) {
      if (streams[s].id != s) {
        throw UsageError(who_ + " numbers its stream '" + streams[s].name + "' " +
                         std::to_string(streams[s].id) +
                         "; stream ids must be 0, 1, ... in the order of streams().");
      }
    }
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    ChunkPtr chunk = named_failures(who_, "to load chunk " + std::to_string(chunk_id),
                                    [&] { return inner_->load_chunk(chunk_id); });
    if (!chunk) throw Error(who_ + " returned no data for chunk " + std::to_string(chunk_id) + ".");
    return guard(std::move(chunk), chunk_id);
  }

  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices_in_chunk) override {
    ChunkPtr chunk = named_failures(who_, "to load sequences of chunk " + std::to_string(chunk_id),
                                    [&] { return inner_->load_sequences(chunk_id, indices_in_chunk); });
    return chunk ? guard(std::move(chunk), chunk_id) : nullptr;
  }

 private:
  ChunkPtr guard(ChunkPtr chunk, uint32_t chunk_id) const {
    auto facts = std::make_shared<ChunkFacts>();
    facts->who = who_;
    facts->deserializer = inner_;
    facts->chunk_id = chunk_id;
    std::vector<SequenceInfo> listed;
    inner_->sequence_infos_for_chunk(chunk_id, listed);
    for (const SequenceInfo& info : listed) {
      if (info.index_in_chunk >= facts->sequences.size()) facts->sequences.resize(info.index_in_chunk + 1);
      facts->sequences[info.index_in_chunk] = info;
    }
    return std::make_shared<GuardedChunk>(std::move(chunk), std::move(facts));
  }

  std::string who_;
};

// A plugin transformer: a sequence must keep its length, and a failure names the transform.
class GuardedTransformer final : public SequenceTransformer {
 public:
  GuardedTransformer(SequenceTransformerPtr inner, std::string who)
      : inner_(std::move(inner)), who_(std::move(who)) {}

  StreamInfo output_stream(const StreamInfo& input) const override { return inner_->output_stream(input); }
  void start_batch(size_t batch_size) override { inner_->start_batch(batch_size); }
  SequenceData apply(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) override {
    SequenceData out =
        named_failures(who_, "on the sequence at position " + std::to_string(slot) + " of a batch",
                       [&] { return inner_->apply(input, slot, owner); });
    if (out.valid && input.valid && out.number_of_samples != input.number_of_samples) {
      throw Error(who_ + " turned a sequence of " + std::to_string(input.number_of_samples) +
                  " samples into one of " + std::to_string(out.number_of_samples) +
                  ": a transform must keep the sequence's length.");
    }
    return out;
  }
  size_t random_transforms() const override { return inner_->random_transforms(); }
  std::vector<std::vector<uint64_t>> random_draws() const override { return inner_->random_draws(); }
  void reposition_random_draws(const std::vector<std::vector<uint64_t>>& draws) override {
    inner_->reposition_random_draws(draws);
  }
  SequenceTransformerPtr fused_with(const SequenceTransformerPtr& next) const override {
    // Fusing would hand the plugin's work to another transformer unguarded; a guarded one is never fused.
    (void)next;
    return nullptr;
  }

 private:
  SequenceTransformerPtr inner_;
  std::string who_;
};

}  // namespace

DeserializerType guard_plugin_deserializer_type(DeserializerType type, const std::string& module) {
  const std::string who = "The plugin deserializer '" + type.name + "' (module '" + module + "')";
  auto create = std::move(type.create);
  if (!create) return type;
  type.create = [create = std::move(create), who](
                    const DeserializerSpec& spec,
                    const DeserializerContext& context) -> std::shared_ptr<Deserializer> {
    std::shared_ptr<Deserializer> made =
        named_failures(who, "to start", [&] { return create(spec, context); });
    if (!made) throw Error(who + " created no deserializer.");
    return std::make_shared<GuardedDeserializer>(std::move(made), who);
  };
  return type;
}

TransformType guard_plugin_transform_type(TransformType type, const std::string& module) {
  const std::string who = "The plugin transform '" + type.name + "' (module '" + module + "')";
  auto create = std::move(type.create);
  if (!create) return type;
  type.create = [create = std::move(create), who](const TransformSpec& spec, const StreamInfo& input,
                                                  const TransformContext& context) -> SequenceTransformerPtr {
    SequenceTransformerPtr made =
        named_failures(who, "to start", [&] { return create(spec, input, context); });
    if (!made) return made;
    return std::make_shared<GuardedTransformer>(std::move(made), who);
  };
  return type;
}

}  // namespace cntkio::spec_detail
