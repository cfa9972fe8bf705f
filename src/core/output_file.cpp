#include "core/output_file.hpp"

namespace cntkio::core {

OutputFile::OutputFile(const std::string& path, const WritableFileOptions& options)
    : file_(Env::current()->new_writable_file(path, options)) {}

}  // namespace cntkio::core
