#include "pipeline/transform_stage.hpp"

#include <algorithm>
#include <cstddef>
#include <exception>
#include <future>

#include "cntkio/deserializer.hpp"
#include "cntkio/errors.hpp"
#include "spec/builtin_formats.hpp"

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

namespace {

// Transformers run one after the other: the output of each is the input of the next.
class TransformerChain final : public SequenceTransformer {
 public:
  explicit TransformerChain(std::vector<SequenceTransformerPtr> parts) : parts_(std::move(parts)) {}

  StreamInfo output_stream(const StreamInfo& input) const override {
    StreamInfo info = input;
    for (const auto& p : parts_) info = p->output_stream(info);
    return info;
  }
  void start_batch(size_t batch_size) override {
    for (const auto& p : parts_) p->start_batch(batch_size);
  }
  SequenceData apply(const SequenceData& input, size_t slot, std::shared_ptr<const void>& owner) override {
    // A later part's output may point into an earlier part's memory: all of it lives as long as the result.
    auto owners = std::make_shared<std::vector<std::shared_ptr<const void>>>();
    SequenceData item = input;
    for (const auto& p : parts_) {
      std::shared_ptr<const void> part_owner;
      item = p->apply(item, slot, part_owner);
      if (part_owner) owners->push_back(std::move(part_owner));
    }
    owner = std::move(owners);
    return item;
  }
  size_t random_transforms() const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->random_transforms();
    return n;
  }
  std::vector<std::vector<uint64_t>> random_draws() const override {
    std::vector<std::vector<uint64_t>> out;
    for (const auto& p : parts_) {
      std::vector<std::vector<uint64_t>> draws = p->random_draws();
      out.insert(out.end(), std::make_move_iterator(draws.begin()), std::make_move_iterator(draws.end()));
    }
    return out;
  }
  void reposition_random_draws(const std::vector<std::vector<uint64_t>>& draws) override {
    if (draws.size() != random_transforms()) {
      throw UsageError("The stream's transforms have " + std::to_string(random_transforms()) +
                       " random transforms, but the draws of " + std::to_string(draws.size()) +
                       " were given.");
    }
    size_t at = 0;
    for (const auto& p : parts_) {
      const size_t n = p->random_transforms();
      p->reposition_random_draws(
          {draws.begin() + static_cast<ptrdiff_t>(at), draws.begin() + static_cast<ptrdiff_t>(at + n)});
      at += n;
    }
  }

 private:
  std::vector<SequenceTransformerPtr> parts_;
};

}  // namespace

SequenceTransformerPtr make_stream_transformer(const std::vector<TransformSpec>& transforms,
                                               const StreamInfo& input, const TransformContext& context) {
  std::vector<SequenceTransformerPtr> parts;
  StreamInfo info = input;
  for (const TransformSpec& spec : transforms) {
    const std::shared_ptr<const TransformType> type = find_transform_type(spec.type);
    if (!type) {
      throw ConfigError("Stream '" + input.name + "' names the transform type '" + spec.type +
                        "', which is not registered" + spec_detail::left_out_format_note(spec.type) +
                        " (loaded modules included).");
    }
    SequenceTransformerPtr made = type->create(spec, info, context);
    if (!made) throw Error("The '" + spec.type + "' transform type created no transformer.");
    info = made->output_stream(info);
    if (!parts.empty()) {
      if (SequenceTransformerPtr fused = parts.back()->fused_with(made)) {
        parts.back() = std::move(fused);
        continue;
      }
    }
    parts.push_back(std::move(made));
  }
  if (parts.empty()) return nullptr;
  if (parts.size() == 1) return parts.front();
  return std::make_shared<TransformerChain>(std::move(parts));
}

}  // namespace cntkio::pipeline
