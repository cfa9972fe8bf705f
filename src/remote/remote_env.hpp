// The remote Env (remote_env.cpp): http://, https:// and s3:// paths, registered with Env::register_scheme.
#pragma once

namespace cntkio::remote {

/// Registers the remote Env for the schemes http, https and s3. Core's default Env calls it once, before it
/// routes its first URL (src/core/env/routing_env.cpp).
void register_remote_schemes();

}  // namespace cntkio::remote
