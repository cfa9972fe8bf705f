// A corpus of several data files read as one deserializer: the expansion of a format's file options (a
// list, glob patterns, a list file) and the deserializer that joins one deserializer per file. The config
// side ([file] arrays, [fileList]) is config/data_files.hpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cntkio/deserializer.hpp"

namespace cntkio::core {

/// The data files `file`, `more_files` and the lines of `file_list` name, in that order: a name with a
/// wildcard (`*`, `?`, `[`) in its last component that is not itself a file is a glob pattern, expanded in
/// sorted order (Env::glob); a list file holds one path per line (blank lines and lines starting with '#'
/// skipped; a relative path is relative to the list file's folder). Throws IoError for a pattern that
/// matches nothing or an unreadable list file, ConfigError (naming `what`) when no file is named at all or a
/// file is named twice.
std::vector<std::string> expand_data_files(const std::string& file,
                                           const std::vector<std::string>& more_files,
                                           const std::string& file_list, const std::string& what);

/// `open` applied to each of `files`, the results in the order of `files`. Several files are opened at once,
/// on up to 8 threads: opening one waits for the network (a remote file) or indexes it (a CTF file without an
/// index cache), and the files do not depend on each other. A failure is the first failing file's (in the
/// order of `files`), after every open has ended.
std::vector<std::shared_ptr<Deserializer>> open_data_files(
    const std::vector<std::string>& files,
    const std::function<std::shared_ptr<Deserializer>(const std::string&)>& open);

/// One deserializer over `parts` (one per file, with the same streams), their chunks one after another:
/// chunks never span files, and the union is randomized, split and checkpointed as one corpus. A key looked
/// up by a composite reader (as a secondary) that two files hold is a FormatError naming both places; as a
/// primary, every file's sequences are read, keys repeating or not. `parts` must not be empty.
std::shared_ptr<Deserializer> join_data_files(std::vector<std::shared_ptr<Deserializer>> parts,
                                              std::vector<std::string> files);

}  // namespace cntkio::core
