// The `cntkio` command line.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/dump.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 3;
constexpr int kExitData = 4;
constexpr int kExitIo = 5;
constexpr int kExitOther = 1;

const char* kExitCodes =
    "Exit codes: 0 success, 1 other error, 2 bad command line or API use, 3 configuration error, "
    "4 malformed input data, 5 I/O error.";

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cntkio: reads CNTK datasets (CTF and more) with CNTK's exact reader semantics.", "cntkio"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("cntkio ") + CNTKIO_VERSION);
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose, "Print the full error chain on failure");

  cntkio::pipeline::DumpOptions dump;
  std::string epoch_size = "sweep";
  std::string features, labels, output;
  bool separate_layouts = false;
  CLI::App* dump_cmd = app.add_subcommand(
      "dump", "Read a reader section and write its minibatches as text, as CNTK's reader tests do");
  dump_cmd->footer(
      "Values are written one sample per line (%.6g), time-major over parallel sequences, gaps skipped; "
      "features first, then labels.");
  dump_cmd->add_option("--config", dump.config_file, "CNTK config file")->required();
  dump_cmd->add_option("--section", dump.section, "Top-level block that holds the reader")->required();
  dump_cmd->add_option("--reader-section", dump.reader_section, "Reader block inside the section")
      ->default_val("reader");
  dump_cmd->add_option("--epoch-size", epoch_size, "Samples per epoch, or 'sweep' for one pass over the data")
      ->default_val("sweep");
  dump_cmd->add_option("--mb-size", dump.minibatch_size, "Samples per minibatch")->required();
  dump_cmd->add_option("--epochs", dump.epochs, "Number of epochs")->default_val(1);
  dump_cmd->add_option("--features", features, "Comma-separated streams written first (default: all)");
  dump_cmd->add_option("--labels", labels, "Comma-separated streams written after the features");
  dump_cmd->add_option("--subset", dump.subset, "This worker's rank")->default_val(0);
  dump_cmd->add_option("--subsets", dump.subsets, "Number of workers")->default_val(1);
  dump_cmd->add_flag("--separate-layouts", separate_layouts, "Give each stream its own layout");
  dump_cmd->add_option("--set", dump.overrides, "Config override key=value (repeatable, applied in order)");
  dump_cmd->add_option("--max-minibatches", dump.max_minibatches, "Minibatches written per epoch")->default_val(10);
  dump_cmd->add_flag("--keys", dump.keys, "Write the sequence keys of each minibatch instead of values");
  dump_cmd->add_option("--output", output, "Output file (default: standard output)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*dump_cmd) {
      if (epoch_size == "sweep") {
        dump.epoch_size = cntkio::kFullSweep;
      } else {
        dump.epoch_size = cntkio::Config::to_uint(epoch_size, "--epoch-size");
      }
      dump.features = split_commas(features);
      dump.labels = split_commas(labels);
      dump.shared_layout = !separate_layouts;
      if (output.empty()) {
        std::ios::sync_with_stdio(false);
        cntkio::pipeline::run_dump(dump, std::cout);
      } else {
        std::ofstream out(output, std::ios::binary);
        if (!out) throw cntkio::IoError("cannot create output file", output, errno);
        cntkio::pipeline::run_dump(dump, out);
        if (!out) throw cntkio::IoError("cannot write output file", output, errno);
      }
    }
    return kExitOk;
  } catch (const cntkio::ConfigError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitConfig;
  } catch (const cntkio::FormatError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitData;
  } catch (const cntkio::IoError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitIo;
  } catch (const cntkio::UsageError& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << '\n';
    return kExitOther;
  }
}
