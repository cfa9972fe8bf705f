// A deserializer that hands every call to another one: the base of wrappers that change a few calls (the
// chunk cache keeps loaded chunks, the plugin guard checks what a plugin delivers).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cntkio/deserializer.hpp"

namespace cntkio::core {

class ForwardingDeserializer : public Deserializer {
 public:
  explicit ForwardingDeserializer(std::shared_ptr<Deserializer> inner) : inner_(std::move(inner)) {}

  const std::vector<StreamInfo>& streams() const override { return inner_->streams(); }
  std::vector<ChunkInfo> chunk_infos() const override { return inner_->chunk_infos(); }
  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    inner_->sequence_infos_for_chunk(chunk_id, out);
  }
  std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const override {
    return inner_->sequence_info_by_key(key);
  }
  ChunkPtr load_chunk(uint32_t chunk_id) override { return inner_->load_chunk(chunk_id); }
  ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices_in_chunk) override {
    return inner_->load_sequences(chunk_id, indices_in_chunk);
  }
  bool loads_sequences_alone() const override { return inner_->loads_sequences_alone(); }
  std::string key_to_string(const SequenceKey& key) const override { return inner_->key_to_string(key); }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return inner_->sequence_location(key);
  }
  std::vector<std::string> describe() const override { return inner_->describe(); }
  void add_skips(SkipReport& report) const override { inner_->add_skips(report); }
  bool labels_primary_samples() const override { return inner_->labels_primary_samples(); }
  void check_inputs_intact() const override { inner_->check_inputs_intact(); }
  std::shared_ptr<const void> shared_index() const override { return inner_->shared_index(); }
  std::vector<InputFileVersion> input_files() const override { return inner_->input_files(); }

 protected:
  std::shared_ptr<Deserializer> inner_;
};

}  // namespace cntkio::core
