// A mapping of a remote file filled on first touch or on a will-need hint (Linux userfaultfd): a reader that
// maps the file reads only the blocks it touches, e.g. one chunk of a CTF file whose index comes from its
// cache. A block that cannot be fetched reads as zeros and marks the mapping broken; FileMapping::intact()
// and failure() tell the reader (core::MappedFile::check_intact throws the fetch's IoError text), so the
// zeros never reach a minibatch.
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

/// Takes the bytes of one fetch as they arrive: `offset` counts from the fetch's first byte (0 again when the
/// fetch is tried again). Returns false to stop the transfer. Called with data == nullptr (and n == 0) to ask
/// whether the transfer is still wanted, also while no bytes arrive.
using Sink = std::function<bool(uint64_t offset, const char* data, size_t n)>;

/// Where a mapping's blocks come from.
struct BlockSource {
  /// Block `b`'s bytes where they are at hand without a request (the block cache), else data == nullptr.
  std::function<BlockBytes(uint64_t b)> cached;
  /// The most blocks fetched ahead of a fault that continues a forward walk (as many as the walk has
  /// covered, up to this).
  uint64_t read_ahead_blocks = 0;
  /// Fetches bytes [first, last] of the file with one request, handing them to `sink` in order as they
  /// arrive. Throws IoError.
  std::function<void(uint64_t first, uint64_t last, const Sink& sink)> fetch;
  /// The most blocks one fetch asks for.
  uint64_t blocks_per_fetch = 1;
};

/// A mapping of `size` bytes whose blocks of `block_size` bytes (a multiple of the page size) are fetched on
/// first touch, or for a will_need() range, and copied into place page by page as they arrive (a reader
/// waiting on a page goes on as soon as that page is there); nullptr where userfaultfd is not available (the
/// caller then reads with read_at).
std::unique_ptr<FileMapping> make_lazy_mapping(uint64_t size, uint64_t block_size, BlockSource source);

}  // namespace cntkio::remote
