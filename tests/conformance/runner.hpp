// Runs the cases of shared/conformance/cases.json through the code path of `cntkio dump` (the `keys` cases
// through the built `cntkio dump --keys` itself, the `parser` cases through the CTF deserializer directly).
#pragma once

#include <string>
#include <vector>

namespace cntkio::conformance {

struct CaseResult {
  std::string name;
  std::string kind;
  std::string mode;
  bool generated = false;
  bool passed = false;
  bool skipped = false;  ///< not run: its format is not built (image cases with CNTKIO_WITH_IMAGES=OFF)
  std::string detail;    ///< why it failed, or was skipped
};

/// Runs every included case of `conformance_dir`/cases.json whose name matches `filter` (substring; empty:
/// all). Changes the working directory while running a case and restores it afterwards.
/// `extra_overrides` (key=value) are applied after each case's own: the cases must pass with options that
/// change nothing that is delivered (a chunk cache). With a `data_url` (a URL that serves `conformance_dir`,
/// e.g. http://127.0.0.1:8080 or s3://bucket), only the CTF and CBF cases that read one data file through a
/// reader section run, with that file's path rewritten to its URL (a config override of the reader's `file`);
/// the others are reported as not run.
std::vector<CaseResult> run_cases(const std::string& conformance_dir, const std::string& filter = {},
                                  const std::vector<std::string>& extra_overrides = {},
                                  const std::string& data_url = {});

}  // namespace cntkio::conformance
