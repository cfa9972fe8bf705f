// libFuzzer target: the CNTK config language (reading, record parsing, blocks, arrays, `$var$` resolution,
// typed conversions). Any exception other than a cntkio::Error, any sanitizer report, hang or huge
// allocation is a finding.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"

namespace {

// Visits every key of `scope` with every accessor, descending into blocks and block arrays.
void walk(const cntkio::Config& scope, int depth) {
  if (depth > 5) return;
  for (const std::string& key : scope.keys()) {
    try {
      (void)scope.find_string(key);
      (void)scope.get_bool(key, false);
    } catch (const cntkio::Error&) {
    }
    try {
      (void)scope.get_uint(key, 0);
    } catch (const cntkio::Error&) {
    }
    try {
      (void)scope.get_int(key, 0);
      (void)scope.get_double(key, 0.0);
    } catch (const cntkio::Error&) {
    }
    try {
      walk(scope.get_block(key), depth + 1);
    } catch (const cntkio::Error&) {
    }
    try {
      (void)scope.get_array(key);
    } catch (const cntkio::Error&) {
    }
    try {
      // Only real arrays: walking a plain block both as a block and as a one-element array would double the
      // work at every level.
      const std::optional<std::string> raw = scope.find_string(key);
      if (raw && !raw->empty() && (*raw)[0] == '(') {
        for (const cntkio::Config& element : scope.get_block_array(key)) walk(element, depth + 1);
      }
    } catch (const cntkio::Error&) {
    }
    (void)scope.location(key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    cntkio::Config root = cntkio::Config::from_text(text, "fuzz.cntk");
    walk(root, 0);
    root.validate_variables();
  } catch (const cntkio::Error&) {
  }
  return 0;
}
