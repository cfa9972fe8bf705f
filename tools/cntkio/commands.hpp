// The verbs of the `cntkio` command line. Each verb lives in its own cmd_<verb>.cpp and registers itself
// in main.cpp's list: it adds its subcommand (with --help text) to the app and returns what runs when the
// user picked it. Actions report failures by throwing cntkio errors; main maps them to exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"

namespace cntkio::cli {

struct Command {
  CLI::App* app = nullptr;   ///< the subcommand
  std::function<int()> run;  ///< runs the verb; returns the exit code on success (normally 0)
};

Command add_dump_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_convert_command(CLI::App& app);
Command add_convert_htk_command(CLI::App& app);
Command add_bench_command(CLI::App& app);

/// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> split_commas(const std::string& text);

/// Validators of whole-number options: base-10 digits only, within 64 bits (CLI11 alone lets "-1" wrap to
/// 2^64 - 1 and takes an overflowing number as the largest one).
CLI::Validator count_validator();           ///< 0 or more
CLI::Validator positive_count_validator();  ///< 1 or more
/// A byte size as chunkCacheBytes takes it (4294967296, 4GiB, 512MB).
CLI::Validator byte_size_validator();

/// Runs `make`, which builds a reader from command-line options: a ConfigError it throws names config keys
/// the user never wrote, so it becomes a UsageError (exit 2) naming `options`.
template <typename Make>
auto from_options(const std::string& options, Make&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const ConfigError& e) {
    throw UsageError(options + ": " + e.cntk_text());
  }
}

}  // namespace cntkio::cli
