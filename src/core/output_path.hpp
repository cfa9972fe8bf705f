// Checks for the files cntkio writes: they are written as `<path>.partial` and renamed over `path`, which
// replaces whatever `path` is.
#pragma once

#include <cstdint>
#include <string>

namespace cntkio::core {

/// Throws UsageError if `path` exists and is not a regular file (a device such as /dev/null, a symbolic
/// link, a FIFO, a directory): the rename that completes an output would replace it. `temp_path` names the
/// file written first (default `<path>.partial`), for the message.
void check_output_path(const std::string& path, const std::string& temp_path = {});

/// Throws UsageError when `path` holds a NUL byte: the system would write to the path cut there instead.
void check_output_name(const std::string& path);

/// The CLI's guard against an output that replaces a file the same run reads (`convert a.ctf a.ctf`, a dump
/// whose --output is the reader's data file): once remember_inputs() was called, every regular file the
/// POSIX Env opens for reading is noted, and an output written through a `.partial` temporary (not the
/// index cache, which replaces a stale cache it read on purpose) is refused if it is one of them, when it
/// is opened and again before it is renamed into place. Off in a library process, whose later writes may
/// legitimately replace files it read long before.
void remember_inputs();
/// Notes a file opened for reading (when remember_inputs() is on).
void note_input(uint64_t device, uint64_t inode, const std::string& path);
/// Throws UsageError when remember_inputs() is on and `path` is a file noted as read.
void check_not_an_input(const std::string& path);

}  // namespace cntkio::core
