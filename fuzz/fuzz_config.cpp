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
    // One resolution per key, then every typed conversion on it: the typed getters would each resolve the
    // value again, which made the run five times slower without reaching more code. get_uint covers the
    // getters' own path (located errors) once.
    std::optional<std::string> raw;
    try {
      raw = scope.find_string(key);
      (void)scope.get_uint(key, 0);
    } catch (const cntkio::Error&) {
    }
    if (raw) {
      try {
        (void)cntkio::Config::to_bool(*raw, key);
      } catch (const cntkio::Error&) {
      }
      try {
        (void)cntkio::Config::to_int(*raw, key);
      } catch (const cntkio::Error&) {
      }
      try {
        (void)cntkio::Config::to_double(*raw, key);
      } catch (const cntkio::Error&) {
      }
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
