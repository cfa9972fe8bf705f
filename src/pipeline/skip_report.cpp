#include "pipeline/skip_report.hpp"

#include "pipeline/bundler.hpp"

namespace cntkio {

namespace {
std::string counted(uint64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}
}  // namespace

std::string SkipReport::to_string() const {
  std::string out = "skipped " + counted(rows_skipped, "row", "rows") + ", " +
                    counted(samples_skipped, "sample", "samples") + " and " +
                    counted(sequences_skipped, "sequence", "sequences");
  // Input errors are the CTF parser's; invalid and unjoinable sequences are counted above.
  if (errors > 0)
    out += " (" + counted(errors, "input error", "input errors") + " tolerated under maxErrors)";
  for (size_t i = 0; i < first_locations.size(); ++i) {
    out += (i == 0 ? "; first at " : ", ") + first_locations[i];
  }
  return out;
}

namespace pipeline {

SkipReport SkipSources::report() const {
  SkipReport report;
  for (const auto& d : deserializers) {
    if (d) d->add_skips(report);
  }
  if (sequences_removed) report.sequences_skipped += sequences_removed();
  if (sequences_removed_keys) {
    for (const std::string& key : sequences_removed_keys()) {
      report.first_locations.push_back("sequence " + key + " (invalid: its data could not be read)");
    }
  }
  if (bundler) {
    const BundlerDrops drops = bundler_drops(*bundler);
    report.sequences_skipped += drops.sequences;
    for (const std::string& key : drops.first_keys) {
      report.first_locations.push_back("sequence " + key + " (its key is missing in another deserializer)");
    }
  }
  return report;
}

void SkipSources::check_inputs_intact() const {
  for (const auto& d : deserializers) {
    if (d) d->check_inputs_intact();
  }
}

std::function<void()> SkipSources::input_check() const {
  return [inputs = SkipSources{deserializers, nullptr, {}, {}}] { inputs.check_inputs_intact(); };
}

}  // namespace pipeline
}  // namespace cntkio
