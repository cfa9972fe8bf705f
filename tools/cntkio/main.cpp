// The `cntkio` command line.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/dump.hpp"
#include "pipeline/registry.hpp"

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

struct InspectOptions {
  std::string config_file;
  std::string section;
  std::string reader_section = "reader";
  std::vector<std::string> overrides;
  size_t minibatches = 3;
  size_t mb_size = 32;
};

void print_ctf_summary(const cntkio::Config& section, bool composite) {
  cntkio::CtfOptions options = cntkio::ctf_options_from_config(section, composite);
  options.trace_level = 0;
  auto deserializer = cntkio::make_ctf_deserializer(options);
  cntkio::CtfIndexSummary summary = cntkio::ctf_index_summary(*deserializer);
  std::cout << "  CTF file " << options.file << ": " << summary.file_size << " bytes, " << summary.sequences
            << " sequences, " << summary.samples << " samples, " << summary.chunks << " chunk(s)"
            << (summary.line_mode ? ", one sequence per line" : ", sequence ids") << '\n';
  if (!summary.cache_file.empty()) {
    std::cout << "  index cache " << summary.cache_file
              << (summary.loaded_from_cache ? " (used)" : " (written)") << '\n';
  }
}

void run_inspect(const InspectOptions& o) {
  cntkio::Config root = cntkio::Config::from_files({o.config_file}, o.overrides);
  cntkio::Config reader = root.get_block(o.section).get_block(o.reader_section);
  std::cout << "reader " << reader.path() << '\n';
  if (reader.exists("deserializers")) {
    for (const cntkio::Config& d : reader.get_block_array("deserializers")) {
      std::string type = d.get_string("type");
      std::cout << "deserializer " << type << '\n';
      if (type == "CNTKTextFormatDeserializer") print_ctf_summary(d, true);
    }
  } else {
    std::string type = reader.get_string("readerType", "CNTKTextFormatReader");
    std::cout << "readerType " << type << '\n';
    if (cntkio::pipeline::deserializer_type_for_reader(type) == "CNTKTextFormatDeserializer") {
      print_ctf_summary(reader, false);
    }
  }
  auto source = cntkio::MinibatchSource::from_config(reader);
  std::cout << "streams:\n";
  for (const cntkio::StreamInfo& s : source->streams()) {
    std::cout << "  " << s.id << " " << s.name << " (alias '" << s.alias
              << "'): " << cntkio::to_string(s.storage) << ", dim " << s.sample_dim() << ", "
              << cntkio::to_string(s.element_type)
              << (s.defines_mb_size ? ", defines the minibatch size" : "") << '\n';
  }
  source->start_epoch(o.mb_size, 0, cntkio::kFullSweep);
  cntkio::Minibatch mb;
  for (size_t i = 0; i < o.minibatches && source->next_minibatch(mb); ++i) {
    std::cout << "minibatch " << i << ": " << mb.keys.size() << " sequences"
              << (mb.end_of_sweep ? ", end of sweep" : "") << (mb.end_of_epoch ? ", end of epoch" : "")
              << '\n';
    for (const cntkio::StreamBatch& b : mb.streams) {
      std::cout << "  " << b.info.name << ": " << b.layout.num_samples() << " samples in "
                << b.layout.num_parallel << " parallel rows x " << b.layout.num_time_steps << " steps";
      if (b.info.storage == cntkio::StorageFormat::kSparseCsc) std::cout << ", " << b.nnz() << " non-zeros";
      std::cout << '\n';
    }
    std::cout << "  keys:";
    for (size_t k = 0; k < mb.keys.size() && k < 12; ++k) std::cout << ' ' << mb.keys[k];
    if (mb.keys.size() > 12) std::cout << " ...";
    std::cout << '\n';
  }
  std::cout << "position after these minibatches: sample " << source->current_sample_position() << '\n';
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
  dump_cmd->add_option("--max-minibatches", dump.max_minibatches, "Minibatches written per epoch")
      ->default_val(10);
  dump_cmd->add_flag("--keys", dump.keys, "Write the sequence keys of each minibatch instead of values");
  dump_cmd->add_option("--output", output, "Output file (default: standard output)");

  InspectOptions inspect;
  CLI::App* inspect_cmd = app.add_subcommand(
      "inspect", "Describe a reader section: its files, index, streams and first minibatches");
  inspect_cmd->add_option("--config", inspect.config_file, "CNTK config file")->required();
  inspect_cmd->add_option("--section", inspect.section, "Top-level block that holds the reader")->required();
  inspect_cmd->add_option("--reader-section", inspect.reader_section, "Reader block inside the section")
      ->default_val("reader");
  inspect_cmd->add_option("--set", inspect.overrides, "Config override key=value (repeatable)");
  inspect_cmd->add_option("--minibatches", inspect.minibatches, "Minibatches to describe")->default_val(3);
  inspect_cmd->add_option("--mb-size", inspect.mb_size, "Samples per minibatch")->default_val(32);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (*inspect_cmd) run_inspect(inspect);
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
