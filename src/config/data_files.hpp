// The data files of a deserializer section: [file] as a path or pattern or an array of them, and
// [fileList] (core/data_files.hpp expands them).
#pragma once

#include <string>
#include <vector>

#include "cntkio/config.hpp"

namespace cntkio::config_detail {

/// Reads [file] (a path or pattern, or an array `(a.ctf:b.ctf)` of them: the first into `file`, the rest into
/// `more_files`) and [fileList] of a deserializer section.
void data_files_from_config(const Config& section, std::string& file, std::vector<std::string>& more_files,
                            std::string& file_list);

}  // namespace cntkio::config_detail
