// A mapping of a remote file filled on first touch (Linux userfaultfd): a reader that maps the file reads
// only the blocks it touches, e.g. one chunk of a CTF file whose index comes from its cache. A block that
// cannot be fetched reads as zeros and marks the mapping broken; FileMapping::intact() and failure() tell the
// reader (core::MappedFile::check_intact throws the fetch's IoError text), so the zeros never reach a
// minibatch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cntkio/env.hpp"

namespace cntkio::remote {

/// The bytes of one block (all but the last block are block_size long), kept alive by `owner`.
struct BlockBytes {
  std::shared_ptr<const void> owner;
  const char* data = nullptr;
  size_t size = 0;
};

/// Gives block `b` of the file; throws IoError.
using BlockReader = std::function<BlockBytes(uint64_t b)>;

/// A mapping of `size` bytes whose blocks of `block_size` bytes (a multiple of the page size) `read` fills
/// on first touch, or nullptr where userfaultfd is not available (the caller then reads with read_at).
std::unique_ptr<FileMapping> make_lazy_mapping(uint64_t size, uint64_t block_size, BlockReader read);

}  // namespace cntkio::remote
