#include "pipeline/transform_stage.hpp"

#include <exception>
#include <future>

#include "cntkio/deserializer.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

// Keeps the transformed items of one batch alive for as long as the packer holds the batch's chunks.
class TransformedData final : public Chunk {
 public:
  void get_sequence(uint32_t, std::vector<SequenceData>&) const override {
    throw UsageError("Transformed data is not a chunk of sequences.");
  }
  std::vector<std::shared_ptr<const void>> owners;
};

}  // namespace

TransformStage::TransformStage(std::shared_ptr<SequenceEnumerator> inner,
                               std::vector<SequenceTransformerPtr> transformers,
                               std::shared_ptr<core::ThreadPool> pool)
    : inner_(std::move(inner)), transformers_(std::move(transformers)), pool_(std::move(pool)) {
  if (!inner_) throw UsageError("A transform stage needs a sequence enumerator.");
  streams_ = inner_->streams();
  if (transformers_.size() != streams_.size()) {
    throw UsageError("A transform stage needs one transformer entry per stream (" +
                     std::to_string(streams_.size()) + "), got " + std::to_string(transformers_.size()) +
                     ".");
  }
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (transformers_[i]) streams_[i] = transformers_[i]->output_stream(streams_[i]);
  }
}

Sequences TransformStage::get_next_sequences(size_t global_sample_count, size_t local_sample_count) {
  Sequences batch = inner_->get_next_sequences(global_sample_count, local_sample_count);
  const size_t n = batch.num_sequences();
  if (n == 0) return batch;
  auto holder = std::make_shared<TransformedData>();
  holder->owners.resize(n * transformers_.size());
  for (size_t i = 0; i < transformers_.size() && i < batch.data.size(); ++i) {
    if (transformers_[i]) transformers_[i]->start_batch(n);
  }
  // Slot j touches only batch.data[*][j], its owners and the transformers' per-slot state.
  auto transform_slot = [this, &batch, &holder, n](size_t j) {
    for (size_t i = 0; i < transformers_.size() && i < batch.data.size(); ++i) {
      SequenceData& item = batch.data[i][j];
      if (!transformers_[i] || !item.valid) continue;
      item = transformers_[i]->apply(item, j, holder->owners[i * n + j]);
    }
  };
  if (!pool_ || pool_->size() <= 1 || n == 1) {
    for (size_t j = 0; j < n; ++j) transform_slot(j);
  } else {
    std::vector<std::future<void>> done;
    done.reserve(n);
    for (size_t j = 0; j < n; ++j) done.push_back(pool_->submit([&transform_slot, j] { transform_slot(j); }));
    std::exception_ptr first;
    for (auto& f : done) {  // wait for all before leaving (the tasks refer to this frame)
      try {
        f.get();
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) std::rethrow_exception(first);
  }
  batch.chunks.push_back(std::move(holder));
  return batch;
}

std::shared_ptr<SequenceEnumerator> with_transforms(std::shared_ptr<SequenceEnumerator> inner,
                                                    std::vector<SequenceTransformerPtr> transformers,
                                                    size_t threads) {
  bool any = false;
  for (const auto& t : transformers) any = any || static_cast<bool>(t);
  if (!any) return inner;
  auto pool = threads > 1 ? std::make_shared<core::ThreadPool>(threads) : nullptr;
  return std::make_shared<TransformStage>(std::move(inner), std::move(transformers), std::move(pool));
}

void append_transformers(const Deserializer& deserializer, std::vector<SequenceTransformerPtr>& out) {
  const size_t count = deserializer.streams().size();
  std::vector<SequenceTransformerPtr> own;
  if (const auto* provider = dynamic_cast<const TransformProvider*>(&deserializer))
    own = provider->transformers();
  own.resize(count);
  out.insert(out.end(), own.begin(), own.end());
}

}  // namespace cntkio::pipeline
