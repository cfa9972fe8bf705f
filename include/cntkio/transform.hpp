/// @file
/// Sequence transformers: per-sequence changes of one stream, applied between the randomizer and the packer
/// (CNTK's transforms: image crop, scale, colour jitter, ...).
///
/// Transforms are registered by type (cntkio/registry.hpp) and named per stream in a reader's spec; the
/// minibatch source routes every batch the randomizer delivers through the chain of each stream. A
/// transformer sees the position `slot` of each sequence inside the batch of the current minibatch; CNTK
/// seeds its per-slot random engines with that position, so results depend only on the batch composition,
/// never on which thread runs a slot.
///
/// Thread-safety: start_batch is called by one thread between batches; apply may then be called
/// concurrently for different slots of the same batch (never twice for one slot at the same time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/sequence.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

class SequenceTransformer;
/// A transformer, shared by whoever made it and the pipeline.
using SequenceTransformerPtr = std::shared_ptr<SequenceTransformer>;

/// Changes the items of one stream, sequence by sequence (see the contract above).
class SequenceTransformer {
 public:
  virtual ~SequenceTransformer() = default;

  /// The description of the stream after this transformer (shape empty when it varies per sequence).
  virtual StreamInfo output_stream(const StreamInfo& input) const = 0;

  /// Announces a batch of `batch_size` sequences (grows per-slot state such as random engines).
  virtual void start_batch(size_t batch_size) = 0;

  /// Transforms the item of the sequence at position `slot` of the current batch. The result may point into
  /// memory the transformer allocates; it stores whatever keeps that memory alive in `owner`.
  /// Throws cntkio errors (FormatError with the file and line of the failing item where known).
  virtual SequenceData apply(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) = 0;

  /// How many of its transforms draw random numbers (0: the transformer is deterministic).
  virtual size_t random_transforms() const { return 0; }
  /// Per random transform (random_transforms() entries), per slot: the outputs its random engine has given
  /// so far. A reader checkpoint records them so that a restore continues the draws exactly.
  virtual std::vector<std::vector<uint64_t>> random_draws() const { return {}; }
  /// Puts every random engine where random_draws() said it was (engines not listed restart from their
  /// seed). Throws UsageError when `draws` does not have random_transforms() entries.
  virtual void reposition_random_draws(const std::vector<std::vector<uint64_t>>& draws) {
    if (!draws.empty()) throw UsageError("This transformer has no random transforms to reposition.");
  }

  /// One transformer that does this one's work and then `next`'s, where this one can do both in one pass
  /// (the image transforms keep the image decoded from one to the next); null where it cannot. The pipeline
  /// asks before it chains two transforms of a stream. It is asked before either has seen a batch.
  virtual SequenceTransformerPtr fused_with(const SequenceTransformerPtr& next) const {
    (void)next;
    return nullptr;
  }
};

}  // namespace cntkio
