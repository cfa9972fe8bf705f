// Where the index cache of a remote file lives: a local folder, since remote paths are read-only
// (docs/remote-data.md). Its name hashes the URL, ETag and size, so a second process or rank reading the
// same version finds it, and a new version of the file gets a new cache.
#pragma once

#include <string>

#include "cntkio/env.hpp"

namespace cntkio::core {

/// The local cache folder: $CNTKIO_CACHE_DIR, else $XDG_CACHE_HOME/cntkio, else $HOME/.cache/cntkio (else
/// /tmp/cntkio-cache). Not created.
std::string local_cache_dir();

/// A path in local_cache_dir() (created, with its parents, when missing) for the cache of the remote file
/// `url` in its version `identity`: `<hash of URL, ETag, size>-<the URL's last component><suffix>`.
std::string local_cache_path(const std::string& url, const FileIdentity& identity, const std::string& suffix);

}  // namespace cntkio::core
