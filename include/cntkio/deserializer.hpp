/// @file
/// The Deserializer interface: turns files into chunks of sequences of samples, one or more streams each.
///
/// Contract (CNTK's): chunk_infos() describes all chunks in file order; sequence_infos_for_chunk(c) lists the
/// sequences of chunk c; load_chunk(c) parses chunk c and returns it (it may be called again for the same
/// chunk after it was released, and must return the same data). Scheduling lengths (SequenceInfo and
/// ChunkInfo sample counts) come from the index, not from the parsed data.
///
/// Thread-safety: describe methods are const and safe to call concurrently once constructed. load_chunk may
/// be called concurrently for different chunks unless an implementation documents otherwise.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/sequence.hpp"
#include "cntkio/skip_report.hpp"
#include "cntkio/stream.hpp"

namespace cntkio {

/// The source of a reader's data: describes chunks and sequences cheaply and loads chunks on request (see
/// the contract above). make_ctf_deserializer, make_cbf_deserializer, make_htk_feature_deserializer,
/// make_mlf_deserializer and make_image_deserializer create the built-in ones.
class Deserializer {
 public:
  virtual ~Deserializer() = default;

  /// The streams this deserializer produces, ids 0..n-1 in order.
  virtual const std::vector<StreamInfo>& streams() const = 0;
  /// All chunks, in id order.
  virtual std::vector<ChunkInfo> chunk_infos() const = 0;
  /// The sequences of chunk `chunk_id`, appended to `out` in index order.
  virtual void sequence_infos_for_chunk(uint32_t chunk_id, std::vector<SequenceInfo>& out) const = 0;
  /// Secondary lookup by key (composite readers): the description of the sequence with `key`, if present.
  virtual std::optional<SequenceInfo> sequence_info_by_key(const SequenceKey& key) const {
    (void)key;
    return std::nullopt;
  }
  /// Loads chunk `chunk_id`. Throws FormatError / IoError.
  virtual ChunkPtr load_chunk(uint32_t chunk_id) = 0;
  /// Loads only the sequences `indices_in_chunk` (ascending, no repeats) of chunk `chunk_id`, where that is
  /// much cheaper than loading the chunk: a chunk whose get_sequence(i), for each i listed, gives exactly
  /// what load_chunk(chunk_id)'s would. The randomizers ask for the sequences of the first minibatch from a
  /// new position whose chunks are still loading, instead of waiting for them all (a window's first
  /// minibatch would wait for the whole window; without randomization, for its whole first chunk). Null when
  /// it cannot, or when loading them would have an effect the chunk's load has (a warning, a counted error):
  /// the caller then waits for the whole chunk, whose load reports it. Must not count or log anything. Null
  /// by default.
  virtual ChunkPtr load_sequences(uint32_t chunk_id, std::span<const uint32_t> indices_in_chunk) {
    (void)chunk_id;
    (void)indices_in_chunk;
    return nullptr;
  }
  /// True when load_sequences can load sequences (of clean data): the block randomizer then starts loading a
  /// sweep's first window after randomizing it, since the first minibatch does not wait for those loads.
  virtual bool loads_sequences_alone() const { return false; }
  /// Text form of a key, for messages and key dumps (CTF: the decimal id).
  virtual std::string key_to_string(const SequenceKey& key) const { return std::to_string(key.sequence); }
  /// Where the sequence with `key` is written (file and line, or byte offset; empty fields where unknown),
  /// for the errors of later stages, which know only the key. For error paths: may be slow.
  virtual SourceLocation sequence_location(const SequenceKey& key) const {
    (void)key;
    return {};
  }
  /// What this deserializer reads, as lines of text for `cntkio inspect` (the file, its size and counts, and
  /// what is particular to the format, such as an index cache). By default its chunk, sequence and sample
  /// counts.
  virtual std::vector<std::string> describe() const {
    const std::vector<ChunkInfo> chunks = chunk_infos();
    size_t sequences = 0;
    size_t samples = 0;
    for (const ChunkInfo& c : chunks) {
      sequences += c.number_of_sequences;
      samples += c.number_of_samples;
    }
    return {std::to_string(chunks.size()) + " chunk(s), " + std::to_string(sequences) + " sequences, " +
            std::to_string(samples) + " samples"};
  }
  /// Adds what this deserializer skipped or will never deliver to `report`: input errors tolerated under
  /// its maxErrors (rows, samples), and sequences a key lookup cannot reach (a key held twice). Nothing by
  /// default. May run while another thread loads chunks.
  virtual void add_skips(SkipReport& report) const { (void)report; }
  /// True when each sequence of this deserializer labels the samples of the primary sequence with the same
  /// key one for one (MLF labels of feature frames): a composite reader refuses one that is longer than the
  /// primary's, before anything is loaded.
  virtual bool labels_primary_samples() const { return false; }
  /// Throws IoError when a file whose bytes this deserializer hands out in place (a memory mapping) was cut
  /// by another process while they were read: what was delivered since may hold zeros the file never had.
  /// The pipeline calls it after each minibatch's values are copied. Nothing by default.
  virtual void check_inputs_intact() const {}
  /// What this deserializer built that another one of this process, over the same unchanged data with the
  /// same options, takes instead of building it again (the CTF index). While the returned object is held,
  /// deserializers created later find it, in this process and in processes forked from it (DataLoader
  /// workers). Null when there is nothing to share.
  virtual std::shared_ptr<const void> shared_index() const { return nullptr; }
  /// A data file and its identity when this deserializer opened it.
  struct InputFileVersion {
    std::string path;       ///< as opened through the Env
    FileIdentity identity;  ///< Env::file_identity when opened
  };
  /// The files whose bytes make this deserializer's chunks, each with the identity it had when opened. The
  /// cache of decoded chunks (SourceOptions::chunk_cache_bytes) compares them with the files' identities now
  /// and drops what it holds when one changed; it keeps no chunk of a deserializer that lists none (the
  /// default), since it could not tell when they go stale.
  virtual std::vector<InputFileVersion> input_files() const { return {}; }
};

}  // namespace cntkio
