// cntkio_conformance [--filter TEXT] [--expected FILE] [--set KEY=VALUE]... [--data-url URL]
// [CONFORMANCE_DIR] Prints one line per case and "N passed, M failed". With --expected, exits non-zero if any
// case named in FILE (one name per line, '#' comments) does not pass. --set adds a config override to every
// case, after its own. With --data-url (a server that serves CONFORMANCE_DIR: http://HOST:PORT or
// s3://BUCKET), the CTF and CBF cases read their data file from there (tests/remote/conformance.py starts the
// servers); the other cases are not run.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <set>

#include "runner.hpp"

int main(int argc, char** argv) {
  // The image cases load the image component, which the build leaves in the build folder's top (run by
  // hand, the runner finds it there too; a CNTKIO_COMPONENT_PATH already set wins).
  ::setenv("CNTKIO_COMPONENT_PATH", CNTKIO_COMPONENT_DIR, 0);
  std::string dir = CNTKIO_CONFORMANCE_DIR;
  std::string filter;
  std::string expected_file;
  std::vector<std::string> overrides;
  std::string data_url;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (arg == "--expected" && i + 1 < argc) {
      expected_file = argv[++i];
    } else if (arg == "--set" && i + 1 < argc) {
      overrides.push_back(argv[++i]);
    } else if (arg == "--data-url" && i + 1 < argc) {
      data_url = argv[++i];
    } else {
      dir = arg;
    }
  }
  std::vector<cntkio::conformance::CaseResult> results =
      cntkio::conformance::run_cases(dir, filter, overrides, data_url);
  size_t passed = 0, failed = 0, skipped = 0, cntk_passed = 0, cntk_total = 0;
  std::set<std::string> passing, not_run;
  for (const auto& r : results) {
    if (r.skipped) {
      std::cout << "SKIP " << r.name << " [" << r.kind << "/" << r.mode << "]: " << r.detail << '\n';
      ++skipped;
      not_run.insert(r.name);
      continue;
    }
    std::cout << (r.passed ? "PASS " : "FAIL ") << r.name << " [" << r.kind << "/" << r.mode << "]";
    if (!r.passed) std::cout << ": " << r.detail;
    std::cout << '\n';
    (r.passed ? passed : failed)++;
    if (!r.generated) {
      ++cntk_total;
      if (r.passed) ++cntk_passed;
    }
    if (r.passed) passing.insert(r.name);
  }
  std::cout << "CNTK's own cases: " << cntk_passed << " of " << cntk_total << " runnable cases pass\n";
  int status = 0;
  if (!expected_file.empty()) {
    std::ifstream in(expected_file);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      if (!passing.count(line) && !not_run.count(line)) {
        std::cout << "REGRESSION: expected to pass: " << line << '\n';
        status = 1;
      }
    }
  }
  std::cout << "conformance: " << passed << " passed, " << failed << " failed";
  if (skipped > 0)
    std::cout << ", " << skipped << (data_url.empty() ? " not run (format not built)" : " not run");
  std::cout << '\n';
  return status;
}
