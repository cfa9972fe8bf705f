#include "pipeline/bundler.hpp"

#include <algorithm>
#include <map>

#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

struct BundledSequence {
  uint32_t index_in_primary_chunk;
  uint32_t length;
  SequenceKey key;
};

struct BundledChunkDescription {
  uint32_t primary_chunk;
  size_t samples = 0;
  std::vector<BundledSequence> sequences;
};

// A loaded bundle: the primary chunk plus, per valid primary sequence, where its secondary data lies. Flat
// tables indexed by the primary's index: in frame mode every frame is a sequence, so lookups must be cheap.
class BundledChunk final : public Chunk {
 public:
  static constexpr uint32_t kNoSlot = 0xFFFFFFFFu;
  struct Part {
    const Chunk* chunk = nullptr;  // null: the key was not found at load time (owned through `owned_`)
    uint32_t index = 0;
  };

  BundledChunk(ChunkPtr primary, size_t secondaries, const std::vector<size_t>& stream_counts)
      : primary_(std::move(primary)), secondaries_(secondaries), stream_counts_(stream_counts) {}

  void get_sequence(uint32_t index_in_chunk, std::vector<SequenceData>& out) const override {
    primary_->get_sequence(index_in_chunk, out);
    const uint32_t slot = identity_ ? (index_in_chunk < slots_ ? index_in_chunk : kNoSlot)
                          : index_in_chunk < slot_of_.size() ? slot_of_[index_in_chunk]
                                                             : kNoSlot;
    for (size_t d = 0; d < secondaries_; ++d) {
      const Part* part = slot == kNoSlot ? nullptr : &parts_[slot * secondaries_ + d];
      if (part == nullptr || part->chunk == nullptr) {
        for (size_t s = 0; s < stream_counts_[d + 1]; ++s) {
          SequenceData invalid;
          invalid.valid = false;
          out.push_back(invalid);
        }
      } else {
        part->chunk->get_sequence(part->index, out);
      }
    }
  }

  void prefetch_sequence(uint32_t index_in_chunk) const override {
    primary_->prefetch_sequence(index_in_chunk);
  }

  ChunkPtr primary_;
  size_t secondaries_;
  std::vector<size_t> stream_counts_;
  bool identity_ = false;  // slot == primary index for every sequence (nothing dropped): no table
  uint32_t slots_ = 0;
  std::vector<uint32_t> slot_of_;  // primary index -> slot (kNoSlot: not bundled)
  std::vector<Part> parts_;        // slot * secondaries + d
  std::vector<ChunkPtr> owned_;    // the secondary chunks the parts point into
};

class Bundler final : public Deserializer {
 public:
  explicit Bundler(std::vector<std::shared_ptr<Deserializer>> deserializers)
      : members_(std::move(deserializers)) {
    int defining = -1;
    for (size_t d = 0; d < members_.size(); ++d) {
      const auto& member_streams = members_[d]->streams();
      stream_counts_.push_back(member_streams.size());
      for (const StreamInfo& s : member_streams) {
        if (s.defines_mb_size) {
          if (defining >= 0 && defining != static_cast<int>(d)) {
            throw ConfigError("Only one deserializer may have a stream with definesMBSize=true.");
          }
          defining = static_cast<int>(d);
        }
        StreamInfo renumbered = s;
        renumbered.id = static_cast<uint32_t>(streams_.size());
        streams_.push_back(std::move(renumbered));
      }
    }
    std::vector<SequenceInfo> primary;
    for (const ChunkInfo& chunk : members_[0]->chunk_infos()) {
      primary.clear();
      members_[0]->sequence_infos_for_chunk(chunk.id, primary);
      BundledChunkDescription bundled;
      bundled.primary_chunk = chunk.id;
      for (const SequenceInfo& p : primary) {
        uint32_t max_length = p.number_of_samples;
        uint32_t defining_length = defining == 0 ? p.number_of_samples : 0;
        bool valid = true;
        for (size_t d = 1; d < members_.size() && valid; ++d) {
          std::optional<SequenceInfo> s = members_[d]->sequence_info_by_key(p.key);
          if (!s) {
            valid = false;
            ++drops_.sequences;
            if (first_unmatched_in_ == 0) first_unmatched_in_ = d;
            // In frame mode an utterance's frames are sequences with one key: the key is listed once.
            if (drops_.first_keys.size() < 10) {
              std::string key = members_[0]->key_to_string(p.key);
              if (drops_.first_keys.empty() || drops_.first_keys.back() != key) {
                drops_.first_keys.push_back(std::move(key));
              }
            }
            break;
          }
          if (members_[d]->labels_primary_samples() && s->number_of_samples > p.number_of_samples) {
            // CNTK packs the longer label sequence as it is: a few bytes of MLF can claim a billion frames.
            SourceLocation where = members_[d]->sequence_location(p.key);
            const std::string key = members_[0]->key_to_string(p.key);
            where.sequence_key = key;
            throw FormatError(
                "The labels of sequence '" + key + "' cover " + std::to_string(s->number_of_samples) +
                    " frames, but its " + members_[0]->streams().front().name + " have " +
                    std::to_string(p.number_of_samples) + ": labels must not run past the frames they label.",
                std::move(where));
          }
          max_length = std::max(max_length, s->number_of_samples);
          if (static_cast<int>(d) == defining) defining_length = s->number_of_samples;
        }
        if (!valid) continue;
        uint32_t length = defining >= 0 ? defining_length : max_length;
        bundled.sequences.push_back(BundledSequence{p.index_in_chunk, length, p.key});
        bundled.samples += length;
      }
      if (bundled.samples > 0) chunks_.push_back(std::move(bundled));
    }
    if (chunks_.empty()) {
      throw Error(
          "Could not reconcile data between different deserializers. Keys of logical sequences do not "
          "match.",
          unmatched_keys_example());
    }
  }

  const std::vector<StreamInfo>& streams() const override { return streams_; }

 private:
  // What the "Could not reconcile" error adds (CNTK named nothing): keys of the first deserializer that the
  // other lacks, and keys that the other has instead, so that a difference in their form shows.
  std::string unmatched_keys_example() const {
    if (first_unmatched_in_ == 0 || drops_.first_keys.empty()) return "";
    auto quoted_list = [](const std::vector<std::string>& keys) {
      std::string out;
      for (size_t i = 0; i < keys.size() && i < 3; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
      return out;
    };
    std::string text = "(the first deserializer's sequences " + quoted_list(drops_.first_keys) +
                       " have no match in deserializer " + std::to_string(first_unmatched_in_ + 1) + " of " +
                       std::to_string(members_.size());
    std::vector<std::string> theirs;
    try {  // a deserializer that can only be joined (MLF labels) cannot list its sequences: then none
      std::vector<SequenceInfo> infos;
      for (const ChunkInfo& chunk : members_[first_unmatched_in_]->chunk_infos()) {
        infos.clear();
        members_[first_unmatched_in_]->sequence_infos_for_chunk(chunk.id, infos);
        for (const SequenceInfo& info : infos) {
          if (theirs.size() == 3) break;
          theirs.push_back(members_[first_unmatched_in_]->key_to_string(info.key));
        }
        if (theirs.size() == 3) break;
      }
    } catch (const Error&) {
      theirs.clear();
    }
    if (!theirs.empty()) text += ", whose sequences include " + quoted_list(theirs);
    return text + ")";
  }

 public:
  std::vector<ChunkInfo> chunk_infos() const override {
    std::vector<ChunkInfo> out;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      out.push_back(ChunkInfo{static_cast<uint32_t>(i), chunks_[i].samples, chunks_[i].sequences.size()});
    }
    return out;
  }

  void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const override {
    // CNTK reports the primary's chunk id here, which makes its NoRandomizer fetch the wrong chunk once a
    // primary chunk was dropped; we report our own (bundled) chunk id.
    for (const BundledSequence& s : checked(chunk_id).sequences) {
      out.push_back(SequenceInfo{s.index_in_primary_chunk, s.length, chunk_id, s.key});
    }
  }

  ChunkPtr load_chunk(uint32_t chunk_id) override {
    const BundledChunkDescription& description = checked(chunk_id);
    auto chunk = std::make_shared<BundledChunk>(members_[0]->load_chunk(description.primary_chunk),
                                                members_.size() - 1, stream_counts_);
    std::vector<std::map<uint32_t, ChunkPtr>> loaded(members_.size());
    const size_t secondaries = members_.size() - 1;
    uint32_t max_index = 0;
    bool identity = true;
    for (size_t slot = 0; slot < description.sequences.size(); ++slot) {
      max_index = std::max(max_index, description.sequences[slot].index_in_primary_chunk);
      identity = identity && description.sequences[slot].index_in_primary_chunk == slot;
    }
    chunk->identity_ = identity;
    chunk->slots_ = static_cast<uint32_t>(description.sequences.size());
    if (!identity) {
      chunk->slot_of_.assign(description.sequences.empty() ? 0 : static_cast<size_t>(max_index) + 1,
                             BundledChunk::kNoSlot);
    }
    chunk->parts_.resize(description.sequences.size() * secondaries);
    for (size_t slot = 0; slot < description.sequences.size(); ++slot) {
      const BundledSequence& s = description.sequences[slot];
      if (!identity) chunk->slot_of_[s.index_in_primary_chunk] = static_cast<uint32_t>(slot);
      for (size_t d = 1; d < members_.size(); ++d) {
        std::optional<SequenceInfo> info = members_[d]->sequence_info_by_key(s.key);
        if (!info) continue;
        ChunkPtr& secondary = loaded[d][info->chunk_id];
        if (!secondary) {
          secondary = members_[d]->load_chunk(info->chunk_id);
          chunk->owned_.push_back(secondary);
        }
        chunk->parts_[slot * secondaries + d - 1] = BundledChunk::Part{secondary.get(), info->index_in_chunk};
      }
    }
    return chunk;
  }

  std::string key_to_string(const SequenceKey& key) const override { return members_[0]->key_to_string(key); }
  SourceLocation sequence_location(const SequenceKey& key) const override {
    return members_[0]->sequence_location(key);
  }
  // None when a member lists none: its chunks could go stale unseen.
  std::vector<InputFileVersion> input_files() const override {
    std::vector<InputFileVersion> all;
    for (const auto& member : members_) {
      std::vector<InputFileVersion> files = member->input_files();
      if (files.empty()) return {};
      all.insert(all.end(), files.begin(), files.end());
    }
    return all;
  }

 private:
  const BundledChunkDescription& checked(uint32_t chunk_id) const {
    if (chunk_id >= chunks_.size())
      throw UsageError("Bundled chunk " + std::to_string(chunk_id) + " does not exist.");
    return chunks_[chunk_id];
  }

  std::vector<std::shared_ptr<Deserializer>> members_;
  std::vector<size_t> stream_counts_;
  std::vector<StreamInfo> streams_;
  std::vector<BundledChunkDescription> chunks_;
  BundlerDrops drops_;
  size_t first_unmatched_in_ = 0;  // the member that first lacked a primary key (0: none did)

 public:
  const BundlerDrops& drops() const { return drops_; }
};

}  // namespace

BundlerDrops bundler_drops(const Deserializer& deserializer) {
  const auto* bundler = dynamic_cast<const Bundler*>(&deserializer);
  return bundler != nullptr ? bundler->drops() : BundlerDrops{};
}

std::shared_ptr<Deserializer> make_bundler(std::vector<std::shared_ptr<Deserializer>> deserializers) {
  if (deserializers.size() < 2) throw UsageError("A bundler needs at least two deserializers.");
  return std::make_shared<Bundler>(std::move(deserializers));
}

}  // namespace cntkio::pipeline
