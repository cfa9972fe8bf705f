// Options of the HTK deserializers from the records that describe a stream: shared by the composite form
// (htk_feature_options_from_config, mlf_options_from_config) and the flat readers (htk_legacy_reader.cpp).
#pragma once

#include <optional>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/htk.hpp"

namespace cntkio::htk {

/// The options of feature stream `name` described by `stream` (scpFile, dim, contextWindow, ...);
/// maxSequenceSize and definesMBSize come from `input`, precision and traceLevel from `section` (all with
/// their parents); `frame_mode` unset: the section's frameMode (default true). Throws ConfigError.
HtkFeatureOptions feature_options_from(const std::string& name, const Config& stream, const Config& input,
                                       const Config& section, std::optional<bool> frame_mode);

/// The options of label stream `name` described by `stream` (labelDim, mlfFile/mlfFileList, ...); chunk size,
/// precision and traceLevel from `section`. Throws ConfigError.
MlfOptions mlf_options_from(const std::string& name, const Config& stream, const Config& section,
                            std::optional<bool> frame_mode);

}  // namespace cntkio::htk
