#include "pipeline/transform_stage.hpp"

#include <algorithm>
#include <cstddef>
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
    if (transformers_[i]) {
      streams_[i] = transformers_[i]->output_stream(streams_[i]);
      random_transforms_ += transformers_[i]->random_transforms();
    }
  }
}

EnumeratorState TransformStage::state() const {
  EnumeratorState state = inner_->state();
  if (random_transforms_ == 0) return state;
  std::vector<std::vector<uint64_t>> draws;
  draws.reserve(random_transforms_);
  for (const auto& t : transformers_) {
    if (!t) continue;
    for (auto& engines : t->random_draws()) draws.push_back(std::move(engines));
  }
  state.transform_draws = std::move(draws);
  return state;
}

void TransformStage::restore(const EnumeratorState& state) {
  check_draws(state.transform_draws);
  inner_->restore(state);
  reposition_transforms(state.transform_draws);
}

void TransformStage::check_draws(const std::optional<std::vector<std::vector<uint64_t>>>& draws) const {
  if (draws && draws->size() != random_transforms_) {
    throw UsageError("The reader state holds the random draws of " + std::to_string(draws->size()) +
                     " transforms, but this reader has " + std::to_string(random_transforms_) +
                     " random transforms (a state of another reader?).");
  }
}

void TransformStage::reposition_transforms(const std::optional<std::vector<std::vector<uint64_t>>>& draws) {
  check_draws(draws);
  if (random_transforms_ == 0) return;
  // Without recorded draws (a state of an older cntkio), the engines start again from their seeds.
  size_t next = 0;
  for (const auto& t : transformers_) {
    const size_t count = t ? t->random_transforms() : 0;
    if (count == 0) continue;
    std::vector<std::vector<uint64_t>> own(count);
    if (draws)
      std::copy(draws->begin() + static_cast<std::ptrdiff_t>(next),
                draws->begin() + static_cast<std::ptrdiff_t>(next + count), own.begin());
    t->reposition_random_draws(own);
    next += count;
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
