// Pieces shared by the packers (CNTK's PackerBase): stream checks and copying sequences into minibatch
// buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch.hpp"
#include "cntkio/sequence.hpp"
#include "cntkio/stream.hpp"
#include "pipeline/sequence_enumerator.hpp"

namespace cntkio::pipeline::packer_detail {

/// sequence_index of gap entries (CNTK's GAP_SEQUENCE_ID).
constexpr size_t kGapIndex = std::numeric_limits<size_t>::max();

/// Throws if two streams share a name (CNTK's text).
void check_stream_names(const std::vector<StreamInfo>& streams);
/// Throws UsageError for a minibatch size of 0 or a rank outside [0, W).
void check_configuration(const EpochConfiguration& config);
/// Throws unless `sequences` holds one vector per stream, each with one item per key.
void check_shape(const Sequences& sequences, size_t num_streams);

SourceLocation location(const StreamInfo& stream, const std::string& key);
/// `error` (about the sequence its location names by key, found among `sequences`) with the file, line and
/// byte offset where `source` says that sequence is; std::nullopt if it has a file already or none is known.
std::optional<FormatError> with_origin(const FormatError& error, const Sequences& sequences,
                                       const SequenceEnumerator& source);

/// The sample shape of dense stream `stream` in one minibatch (CNTK's PackerBase shape check): the
/// stream's own shape, or, when the stream's shape is not fixed (empty), the first sequence's. Throws CNTK's
/// "varying shapes" error if sequences disagree, and an error if a sequence's shape does not hold as many
/// values as a fixed stream shape (CNTK would copy the wrong number of values) or if an item still carries
/// format data no transformer consumed. `keys[i]` names sequence i.
std::vector<size_t> batch_sample_shape(const StreamInfo& stream, const std::vector<SequenceData>& data,
                                       const std::vector<std::string>& keys);
/// Throws unless `data` fits a stream of fixed shape (BPTT packing needs fixed shapes).
void check_fixed_shape(const StreamInfo& stream, const SequenceData& data, const std::string& key);

/// Asks the cache for the first bytes of every sequence of `sequences` (values, and for sparse streams
/// indices and counts). A randomized minibatch's sequences lie anywhere in the loaded chunks: requested
/// together, up front, their cache misses overlap each other and the packer's other work instead of coming
/// one by one.
void prefetch_sequences(const Sequences& sequences, const std::vector<StreamInfo>& streams);

/// Dense stream: writes every non-gap column of `layout` from `data[sequence_index]`; gap columns are zero.
void pack_dense(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                std::vector<unsigned char>& values);
/// Sparse stream: CSC with columns in order t * num_parallel + s, entries in stored order.
/// `keys[i]` names sequence i in errors.
void pack_sparse(const StreamInfo& stream, const Layout& layout, const std::vector<SequenceData>& data,
                 const std::vector<std::string>& keys, StreamBatch& out);
/// Writes one sparse sample (entries [offset, offset + nnz) of `data`) as a dense column at `column`, which
/// the caller has zeroed; duplicate indices: the last one wins.
void write_sparse_sample_as_dense(const StreamInfo& stream, const SequenceData& data, size_t offset,
                                  size_t nnz, unsigned char* column, const std::string& key);

}  // namespace cntkio::pipeline::packer_detail
