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

// Keys one input may visit. A block that refers to itself through `$var$` (x = $y$, y = [ c = $x$ ]) is a
// tree as deep as the walk goes, with as many branches as keys: without a limit a few such lines took 0.2 s
// per input and most of the run's time.
constexpr size_t kMaxVisits = 300;
size_t visits = 0;

// Visits every key of `scope` with every accessor, descending into blocks and block arrays.
void walk(const cntkio::Config& scope, int depth) {
  if (depth > 5) return;
  size_t visited = 0;
  for (const std::string& key : scope.keys()) {
    if (++visits > kMaxVisits) return;
    // One resolution per key, then every typed conversion on the resolved text. Each getter resolves the
    // value again, so the getters run on the values they are meant for, and on every fourth key whatever it
    // holds (their error paths); calling all of them on every key made the run three times slower without
    // reaching more code.
    const bool every_getter = visited++ % 4 == 0;
    std::optional<std::string> raw;
    try {
      raw = scope.find_string(key);
      if (every_getter) (void)scope.get_uint(key, 0);
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
    const size_t first = raw ? raw->find_first_not_of(" \t\r\n") : std::string::npos;
    const char opening = first == std::string::npos ? '\0' : (*raw)[first];
    try {
      if (every_getter || opening == '[' || opening == '{') walk(scope.get_block(key), depth + 1);
    } catch (const cntkio::Error&) {
    }
    try {
      if (every_getter || opening == '(' || (raw && raw->find(':') != std::string::npos))
        (void)scope.get_array(key);
    } catch (const cntkio::Error&) {
    }
    try {
      // Only real arrays: walking a plain block both as a block and as a one-element array would double the
      // work at every level.
      if (opening == '(') {
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
    visits = 0;
    walk(root, 0);
    root.validate_variables();
  } catch (const cntkio::Error&) {
  }
  return 0;
}
