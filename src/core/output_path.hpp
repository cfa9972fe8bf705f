// Checks for the files cntkio writes: they are written as `<path>.partial` and renamed over `path`, which
// replaces whatever `path` is.
#pragma once

#include <string>

namespace cntkio::core {

/// Throws UsageError if `path` exists and is not a regular file (a device such as /dev/null, a symbolic
/// link, a FIFO, a directory): the rename that completes an output would replace it. `temp_path` names the
/// file written first (default `<path>.partial`), for the message.
void check_output_path(const std::string& path, const std::string& temp_path = {});

/// Throws UsageError when `path` holds a NUL byte: the system would write to the path cut there instead.
void check_output_name(const std::string& path);

}  // namespace cntkio::core
