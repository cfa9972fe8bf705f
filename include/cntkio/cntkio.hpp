/// @file
/// The whole public API of cntkio in one include: the reader (MinibatchSource, ReaderSpec, ReaderState), the
/// registry and plugins, the deserializer and transform interfaces, the formats' options and helpers (CTF,
/// CBF, HTK/MLF, images), the converters, the config language, errors and keys.
///
/// Thread-safety: see each header.
#pragma once

#include "cntkio/cbf.hpp"
#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/deserializer.hpp"
#include "cntkio/distributed.hpp"
#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/image.hpp"
#include "cntkio/keys.hpp"
#include "cntkio/minibatch.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/plugin.hpp"
#include "cntkio/reader_spec.hpp"
#include "cntkio/registry.hpp"
#include "cntkio/sequence.hpp"
#include "cntkio/skip_report.hpp"
#include "cntkio/stream.hpp"
#include "cntkio/transform.hpp"
#include "cntkio/version.hpp"
