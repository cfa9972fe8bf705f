// `cntkio dump`: write a reader's minibatches as text (the conformance runner's code path).
#include <charconv>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <streambuf>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/reader_spec.hpp"
#include "commands.hpp"
#include "core/output_file.hpp"
#include "pipeline/dump.hpp"

namespace cntkio::cli {
namespace {

// A std::streambuf that writes to a core::OutputFile in blocks of 64 KiB.
class OutputFileBuffer final : public std::streambuf {
 public:
  explicit OutputFileBuffer(core::OutputFile& file) : file_(file) { setp(block_, block_ + sizeof block_); }

 protected:
  int_type overflow(int_type c) override {
    drain();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override {
    drain();
    return 0;
  }

 private:
  void drain() {
    file_.write(pbase(), static_cast<size_t>(pptr() - pbase()));
    setp(block_, block_ + sizeof block_);
  }

  core::OutputFile& file_;
  char block_[65536];
};

}  // namespace

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

namespace {
CLI::Validator count_at_least(uint64_t least) {
  return CLI::Validator(
      [least](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, value);
        if (text.empty() || ec != std::errc() || stop != end) {
          return "'" + text + "' is not a whole number from " + std::to_string(least) + " to 2^64-1";
        }
        if (value < least) return "'" + text + "' is below " + std::to_string(least);
        return {};
      },
      least == 0 ? "" : "POSITIVE");
}
}  // namespace

CLI::Validator count_validator() {
  return count_at_least(0);
}
CLI::Validator positive_count_validator() {
  return count_at_least(1);
}
CLI::Validator byte_size_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<uint64_t> bytes = parse_byte_size(text);
        if (!bytes || *bytes > SIZE_MAX)
          return "'" + text + "' is not a byte size such as 4294967296, 4GiB or 512MB";
        return {};
      },
      "");
}

namespace {
struct DumpArgs {
  pipeline::DumpOptions dump;
  std::string epoch_size = "sweep";
  std::string features, labels, output;
  std::string chunk_cache;
  bool separate_layouts = false;
};
}  // namespace

Command add_dump_command(CLI::App& app) {
  auto args = std::make_shared<DumpArgs>();
  pipeline::DumpOptions& dump = args->dump;
  CLI::App* cmd = app.add_subcommand(
      "dump", "Read a reader section and write its minibatches as text, as CNTK's reader tests do");
  cmd->footer(
      "Values are written one sample per line (%.6g), time-major over parallel sequences, gaps skipped; "
      "features first, then labels. A sparse sample is written as a dense row of its dim values; a sparse "
      "stream above dim " +
      std::to_string(pipeline::kMaxDensifiedDim) +
      " (2^20) is refused unless --sparse-entries, which writes every sparse sample as its index:value "
      "entries "
      "in stored order (an empty line for none).");
  cmd->add_option("--config", dump.config_file, "CNTK config file")->required();
  cmd->add_option("--section", dump.section, "Top-level block that holds the reader")->required();
  cmd->add_option("--reader-section", dump.reader_section, "Reader block inside the section")
      ->default_val("reader");
  cmd->add_option("--epoch-size", args->epoch_size,
                  "Samples per epoch, or 'sweep' for one pass over the data")
      ->default_val("sweep");
  cmd->add_option("--mb-size", dump.minibatch_size, "Samples per minibatch")
      ->required()
      ->check(positive_count_validator());
  cmd->add_option("--epochs", dump.epochs, "Number of epochs")->default_val(1)->check(count_validator());
  cmd->add_option("--features", args->features,
                  "Comma-separated streams written first (default, with no --labels either: all streams)");
  cmd->add_option("--labels", args->labels, "Comma-separated streams written after the features");
  cmd->add_option("--subset", dump.subset, "This worker's rank")->default_val(0)->check(count_validator());
  cmd->add_option("--subsets", dump.subsets, "Number of workers")
      ->default_val(1)
      ->check(positive_count_validator());
  cmd->add_flag("--separate-layouts", args->separate_layouts, "Give each stream its own layout");
  cmd->add_option("--set", dump.overrides, "Config override key=value (repeatable, applied in order)");
  CLI::Option* max_minibatches =
      cmd->add_option("--max-minibatches", dump.max_minibatches, "Minibatches of values written per epoch")
          ->default_val(10)
          ->check(count_validator());
  cmd->add_flag("--keys", dump.keys,
                "Write the sequence key of every sequence instead of values, for the whole epoch (no "
                "minibatch cap)");
  cmd->add_flag("--sparse-entries", dump.sparse_entries,
                "Write sparse samples as their index:value entries instead of dense rows");
  cmd->add_option("--output", args->output, "Output file (default: standard output)");
  cmd->add_option("--chunk-cache", args->chunk_cache,
                  "Keep decoded chunks in memory for later epochs, up to SIZE bytes of data (e.g. 4GiB; the "
                  "reader's chunkCacheBytes)")
      ->type_name("SIZE")
      ->check(byte_size_validator());
  return Command{
      cmd, [args, max_minibatches]() {
        pipeline::DumpOptions& dump = args->dump;
        if (dump.keys && max_minibatches->count() > 0) {
          throw UsageError(
              "--max-minibatches caps value dumps only: --keys writes the keys of whole epochs (use "
              "--epoch-size to read fewer samples).");
        }
        if (args->epoch_size != "sweep" && !count_validator()(std::string(args->epoch_size)).empty()) {
          throw UsageError("--epoch-size is '" + args->epoch_size +
                           "'; expected a number of samples or 'sweep'.");
        }
        dump.epoch_size =
            args->epoch_size == "sweep" ? kFullSweep : Config::to_uint(args->epoch_size, "--epoch-size");
        dump.features = split_commas(args->features);
        dump.labels = split_commas(args->labels);
        dump.shared_layout = !args->separate_layouts;
        // Set last, at the top: the reader section inherits it unless it sets chunkCacheBytes itself.
        if (!args->chunk_cache.empty()) dump.overrides.push_back("chunkCacheBytes=" + args->chunk_cache);
        SkipReport skipped;
        dump.skip_report = &skipped;
        // What maxErrors let through is never silent: one line on stderr at the end.
        struct PrintSkips {
          const SkipReport& report;
          ~PrintSkips() {
            if (!report.empty()) std::cerr << "warning: " << report.to_string() << '\n';
          }
        } print_skips{skipped};
        if (args->output.empty()) {
          std::ios::sync_with_stdio(false);
          pipeline::run_dump(dump, std::cout);
        } else {
          // Through the Env's atomic writer: a failed dump leaves nothing under the output's name.
          core::OutputFile file(args->output);
          OutputFileBuffer buffer(file);
          std::ostream out(&buffer);
          out.exceptions(std::ios::badbit);  // the IoError of a failed write propagates as it is
          pipeline::run_dump(dump, out);
          out.flush();
          file.commit();
        }
        return 0;
      }};
}

}  // namespace cntkio::cli
