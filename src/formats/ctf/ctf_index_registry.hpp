// Indexes shared within a process: a CTF deserializer opened on a file that another deserializer of this
// process has indexed with the same options takes that index instead of scanning the file again. A process
// forked while an index is held (a DataLoader worker) inherits it as well. Entries are weak: an index lives
// as long as some deserializer (or holder) keeps it.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>
#include <string>

#include "core/mapped_file.hpp"
#include "formats/ctf/ctf_index.hpp"

namespace cntkio::ctf {

/// Everything the index of a file depends on: the file's bytes and the options of build_index and
/// form_chunks. (Threads do not change an index; string and hashed keys are not shared, since their ids
/// live in the reader's key table.)
struct SharedIndexKey {
  core::FileIdentity file;
  /// The file's path where its identity names no device and inode (a remote file): an ETag made of time
  /// and size (nginx's) is the same for two files written in the same second at the same size.
  std::string location;
  bool skip_sequence_ids = false;
  std::string main_alias;
  uint64_t chunk_size_in_bytes = 0;
  auto operator<=>(const SharedIndexKey&) const = default;
};

/// Whether an index of the file may be shared: its last change lies at least a second before `now_ns`
/// (realtime). File times tick coarsely, so a file rewritten in place within the same tick, at the same
/// size, would keep its identity; a file that has been still for a second would not.
bool settled_for_sharing(const core::FileIdentity& file, int64_t now_ns);

/// The index registered under `key`, or null.
std::shared_ptr<const CtfIndex> find_shared_index(const SharedIndexKey& key);

/// Registers `index` under `key` (replacing an entry whose index is gone).
void share_index(const SharedIndexKey& key, const std::shared_ptr<const CtfIndex>& index);

/// Counts one index built by scanning a file (CtfDeserializer calls it).
void count_index_build();
/// Indexes built by scanning files in this process so far (a forked process starts from its parent's count):
/// what tests read to see that a reader took an index instead of building one.
uint64_t index_builds();

}  // namespace cntkio::ctf
