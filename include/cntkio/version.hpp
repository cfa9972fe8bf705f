/// @file
/// The version of the cntkio library.
///
/// cntkio has one version number, the CMake project version (`project(cntkio VERSION ...)`): the library
/// returns it from version(), `cntkio --version` prints it, the Python module exposes it as
/// `cntkio.__version__`, and the CMake package, the pkg-config file and the Debian package carry it.
/// CHANGELOG.md lists what each version changed.
///
/// Thread-safety: version() may be called from any thread.
#pragma once

/// cntkio: CNTK's data readers (CTF, CBF, HTK, images) with CNTK's exact reader semantics. Start with
/// MinibatchSource::from_config (minibatch_source.hpp); docs/ has the user guide and format references.
namespace cntkio {

/// The version of the cntkio library this program runs with, "MAJOR.MINOR.PATCH" (for example "0.1.0").
/// With the shared library this is the version of the libcntkio.so loaded at run time, which may be newer
/// than the headers the program was compiled with.
const char* version() noexcept;

}  // namespace cntkio
