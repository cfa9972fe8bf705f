// `cntkio inspect FILE`: the header of a CBF file (either layout) without a config.
#pragma once

#include <ostream>
#include <string>

namespace cntkio::cli {

/// Prints the layout, streams, chunk table and sequence/sample counts of the CBF file `path`. Throws
/// UsageError if it is not a CBF file (a CTF file needs --config/--section), FormatError if it is corrupt.
void inspect_data_file(const std::string& path, std::ostream& out);

}  // namespace cntkio::cli
