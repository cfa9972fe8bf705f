// TransformStage: runs the per-stream SequenceTransformers (image crop, scale, ...) on every batch a
// randomizer delivers, before the packer sees it (design.md: Randomizer → Transforms → Packer).
//
// The position of a sequence in the batch is its transform slot (CNTK seeds transform randomness by it).
// Slots are independent (each reads only its own input item and per-slot state), so with a pool they run
// in parallel (CNTK's multiThreadedDeserialization); the results are the same either way, and the first
// failing slot's error (in slot order) is the one reported.
//
// The state of the stage is the inner enumerator's plus, when a transformer draws random numbers, how far
// every random engine has gone (EnumeratorState::transform_draws); restoring it repositions the engines, so
// a restored reader transforms exactly as the uninterrupted one.
//
// Thread-safety: none; one thread drives an instance (the packer's).
#pragma once

#include <memory>
#include <vector>

#include "cntkio/deserializer.hpp"
#include "cntkio/registry.hpp"
#include "cntkio/transform.hpp"
#include "core/thread_pool.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline {

class TransformStage final : public SequenceEnumerator {
 public:
  /// `transformers` has one entry per stream of `inner` (null: passed through unchanged). With a `pool`,
  /// the slots of a batch are transformed on its threads.
  TransformStage(std::shared_ptr<SequenceEnumerator> inner, std::vector<SequenceTransformerPtr> transformers,
                 std::shared_ptr<core::ThreadPool> pool = nullptr);

  const std::vector<StreamInfo>& streams() const override { return streams_; }
  void start_epoch(const EpochConfiguration& config) override { inner_->start_epoch(config); }
  void set_configuration(const EpochConfiguration& config) override { inner_->set_configuration(config); }
  Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) override;
  size_t current_sample_position() const override { return inner_->current_sample_position(); }
  void set_current_sample_position(size_t position) override {
    inner_->set_current_sample_position(position);
  }
  EnumeratorState state() const override;
  void restore(const EnumeratorState& state) override;
  void reposition_transforms(const std::optional<std::vector<std::vector<uint64_t>>>& draws) override;
  void skip_delivered(const DeliveredBefore& delivered) override { inner_->skip_delivered(delivered); }
  std::string key_to_string(const SequenceKey& key) const override { return inner_->key_to_string(key); }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return inner_->sequence_location(key);
  }

 private:
  // UsageError unless `draws` is unset or has one entry per random transform.
  void check_draws(const std::optional<std::vector<std::vector<uint64_t>>>& draws) const;

  std::shared_ptr<SequenceEnumerator> inner_;
  std::vector<SequenceTransformerPtr> transformers_;
  size_t random_transforms_ = 0;  // of all transformers together
  std::vector<StreamInfo> streams_;
  std::shared_ptr<core::ThreadPool> pool_;
};

/// Wraps `inner` in a TransformStage if any entry of `transformers` is set (with a pool of `threads`
/// threads if threads > 1); otherwise returns `inner`.
std::shared_ptr<SequenceEnumerator> with_transforms(std::shared_ptr<SequenceEnumerator> inner,
                                                    std::vector<SequenceTransformerPtr> transformers,
                                                    size_t threads = 0);

/// The transformer of a stream described by `input`: each of `transforms` made by its registered type (the
/// output of one is the input of the next), consecutive ones fused where they can be; null for none.
/// Throws ConfigError for an unknown type.
SequenceTransformerPtr make_stream_transformer(const std::vector<TransformSpec>& transforms,
                                               const StreamInfo& input, const TransformContext& context);

}  // namespace cntkio::pipeline
