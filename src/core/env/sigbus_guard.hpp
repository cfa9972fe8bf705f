// The SIGBUS guard of the POSIX Env's mappings. Touching a mapped page past the end of a file that another
// process truncated raises SIGBUS, which would kill the process. cntkio installs one SIGBUS handler (once,
// chaining to whatever handler was there before): when the faulting address lies in a registered mapping, it
// maps a page of zeros over the missing page, marks that mapping as faulted and lets the read go on. The
// mapping's owner then reports the file as cut (FileMapping::intact() is false), so the zeros never reach a
// minibatch. Faults at any other address go to the previous handler (or kill the process as before).
// docs/robustness.md describes it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cntkio::core::env {

/// Registers [data, data + size); returns its slot, or -1 when every slot is taken (the caller must then not
/// map). Installs the handler if it is not the active one.
int register_mapping(const char* data, size_t size);
/// Frees a slot register_mapping() returned.
void unregister_mapping(int slot);
/// Whether the guard patched a page of the mapping in `slot` since it was registered.
bool mapping_faulted(int slot);
/// Pages patched since the process started (for tests).
uint64_t guarded_faults();

}  // namespace cntkio::core::env
