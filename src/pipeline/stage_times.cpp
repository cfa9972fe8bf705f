#include "pipeline/stage_times.hpp"

#include <algorithm>

namespace cntkio::pipeline {
namespace {

double seconds(uint64_t ns) {
  return static_cast<double>(ns) / 1e9;
}

class TimedEnumerator final : public SequenceEnumerator {
 public:
  TimedEnumerator(std::shared_ptr<SequenceEnumerator> inner, std::shared_ptr<StageTimes> times)
      : inner_(std::move(inner)), times_(std::move(times)) {}

  const std::vector<StreamInfo>& streams() const override { return inner_->streams(); }
  void start_epoch(const EpochConfiguration& config) override { inner_->start_epoch(config); }
  void set_configuration(const EpochConfiguration& config) override { inner_->set_configuration(config); }
  Sequences get_next_sequences(size_t global_sample_count, size_t local_sample_count) override {
    const StageTimer timer(&times_->enumerate_ns);
    return inner_->get_next_sequences(global_sample_count, local_sample_count);
  }
  size_t current_sample_position() const override { return inner_->current_sample_position(); }
  void set_current_sample_position(size_t position) override {
    inner_->set_current_sample_position(position);
  }
  EnumeratorState state() const override { return inner_->state(); }
  void restore(const EnumeratorState& state) override { inner_->restore(state); }
  void reposition_transforms(const std::optional<std::vector<std::vector<uint64_t>>>& draws) override {
    inner_->reposition_transforms(draws);
  }
  void skip_delivered(const DeliveredBefore& delivered) override { inner_->skip_delivered(delivered); }
  bool defer_fetch(bool on) override { return inner_->defer_fetch(on); }
  void fetch(Sequences& sequences) const override { inner_->fetch(sequences); }
  void count_invalid(const Sequences& sequences) override { inner_->count_invalid(sequences); }
  void recycle(Sequences&& used) override { inner_->recycle(std::move(used)); }
  std::string key_to_string(const SequenceKey& key) const override { return inner_->key_to_string(key); }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return inner_->sequence_location(key);
  }

 private:
  std::shared_ptr<SequenceEnumerator> inner_;
  std::shared_ptr<StageTimes> times_;
};

}  // namespace

void StageTimes::fill(SourceStats& stats) const {
  const uint64_t enumerate = enumerate_ns.load(std::memory_order_relaxed);
  const uint64_t waited_in_enumerator =
      chunk_wait_ns.load(std::memory_order_relaxed) + reader_load_ns.load(std::memory_order_relaxed);
  stats.index_s = seconds(index_ns.load(std::memory_order_relaxed));
  stats.load_s = seconds(load_ns.load(std::memory_order_relaxed));
  stats.randomize_s = seconds(enumerate - std::min(enumerate, waited_in_enumerator));
  stats.pack_s = seconds(read_ns.load(std::memory_order_relaxed) - std::min(read_ns.load(), enumerate));
  stats.chunk_wait_s = seconds(chunk_wait_ns.load(std::memory_order_relaxed));
  stats.minibatch_wait_s = seconds(minibatch_wait_ns.load(std::memory_order_relaxed));
}

std::shared_ptr<SequenceEnumerator> with_timing(std::shared_ptr<SequenceEnumerator> inner,
                                                std::shared_ptr<StageTimes> times) {
  return std::make_shared<TimedEnumerator>(std::move(inner), std::move(times));
}

}  // namespace cntkio::pipeline
