// `cntkio convert IN OUT`: converts between CTF, CBF and legacy CBF v1 (docs/formats/cbf.md).
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "cntkio/cbf.hpp"
#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "commands.hpp"

namespace cntkio::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string from;
  std::string to;
  std::string config_file;
  std::string section;
  std::string reader_section = "reader";
  std::vector<std::string> overrides;
  std::vector<std::string> streams;
  uint64_t chunk_size = 32ull << 20;
  std::string precision;
  bool quiet = false;
};

DataFormat format_arg(const std::string& text, const char* option) {
  const std::optional<DataFormat> f = parse_data_format(text);
  if (!f) throw UsageError(std::string(option) + " is '" + text + "'; expected ctf, cbf or cbf1.");
  return *f;
}

// The deserializer section of `reader` that reads `from` (a composite reader's first matching one).
Config source_section(const Config& reader, DataFormat from) {
  const std::string wanted =
      from == DataFormat::kCtf ? "CNTKTextFormatDeserializer" : "CNTKBinaryFormatDeserializer";
  if (!reader.exists("deserializers")) return reader;
  for (Config d : reader.get_block_array("deserializers")) {
    if (d.get_string("type") != wanted) continue;
    d.set("precision", reader.get_string("precision", "float"));  // as the composite reader does
    return d;
  }
  throw ConfigError("The reader " + reader.path() + " has no " + wanted + " to take the streams from.",
                    reader.path() + ".deserializers");
}

// Draws "[#####.....] 45% 1234/5678 sequences" on stderr, overwriting itself.
void draw_progress(uint64_t done, uint64_t total) {
  const int width = 30;
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  std::fprintf(stderr, "\r[%s] %3d%% %llu/%llu sequences", bar.c_str(), static_cast<int>(fraction * 100),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
  std::fflush(stderr);
}

int run_convert(const ConvertArgs& a) {
  const DataFormat from = a.from.empty() ? detect_data_format(a.input) : format_arg(a.from, "--from");
  const DataFormat to = a.to.empty() ? data_format_for_output(a.output) : format_arg(a.to, "--to");
  ConvertOptions options;
  options.to = to;
  options.chunk_size_in_bytes = a.chunk_size;
  if (a.chunk_size == 0) throw UsageError("--chunk-size must be greater than 0.");
  if (!a.precision.empty()) {
    if (a.precision != "float" && a.precision != "double") {
      throw UsageError("--precision is '" + a.precision + "'; expected float or double.");
    }
    options.element_type = a.precision == "float" ? ElementType::kFloat : ElementType::kDouble;
  }
  const bool show_progress = !a.quiet && ::isatty(STDERR_FILENO) == 1;
  if (show_progress) options.progress = draw_progress;

  ConvertSummary summary;
  if (!a.config_file.empty()) {
    if (!a.streams.empty())
      throw UsageError("Give the streams either with --stream or with --config, not both.");
    if (a.section.empty()) throw UsageError("--config needs --section.");
    const Config root = Config::from_files({a.config_file}, a.overrides);
    const Config section = source_section(root.get_block(a.section).get_block(a.reader_section), from);
    std::shared_ptr<Deserializer> source;
    if (from == DataFormat::kCtf) {
      CtfOptions ctf = ctf_options_from_config(section, section.exists_current("type"));
      ctf.file = a.input;
      if (options.element_type) ctf.element_type = *options.element_type;
      source = make_ctf_deserializer(ctf);
    } else {
      CbfOptions cbf = cbf_options_from_config(section);
      cbf.file = a.input;
      cbf.element_type = std::nullopt;  // keep the stored types unless --precision says otherwise
      source = make_cbf_deserializer(cbf);
    }
    summary = convert_deserializer(*source, a.output, options);
  } else {
    for (const std::string& spec : a.streams) options.streams.push_back(parse_convert_stream(spec));
    summary = convert_file(a.input, from, a.output, options);
  }
  if (show_progress) std::fputc('\n', stderr);
  std::cout << "wrote " << a.output << " (" << to_string(to) << "): " << summary.sequences << " sequences, "
            << summary.samples << " samples";
  if (to != DataFormat::kCtf) std::cout << ", " << summary.chunks << " chunk(s)";
  std::cout << ", " << summary.bytes << " bytes\n";
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert between CTF, CBF and legacy CBF v1 (lossless; see docs/formats/cbf.md). The input format is "
      "detected from its first bytes, the output format from its extension (.bin/.cbf: CBF, .cbf1: legacy, "
      "else CTF) unless --from/--to say otherwise.");
  cmd->add_option("IN", args->input, "Input file")->required();
  cmd->add_option("OUT", args->output, "Output file (written as OUT.partial, renamed when complete)")
      ->required();
  cmd->add_option("--from", args->from, "Input format: ctf, cbf or cbf1 (default: detected)");
  cmd->add_option("--to", args->to, "Output format: ctf, cbf or cbf1 (default: from OUT's extension)");
  cmd->add_option("--config", args->config_file,
                  "CNTK config file whose reader describes the input's streams");
  cmd->add_option("--section", args->section, "Top-level block that holds the reader");
  cmd->add_option("--reader-section", args->reader_section, "Reader block inside the section")
      ->default_val("reader");
  cmd->add_option("--set", args->overrides, "Config override key=value (repeatable, applied in order)");
  cmd->add_option(
      "--stream", args->streams,
      "Stream name:alias:dim:dense|sparse (repeatable, in output order): name in OUT, alias = name in "
      "IN. CTF input needs all four fields; CBF input accepts name or name:alias and converts only "
      "the streams given (default: all).");
  cmd->add_option("--chunk-size", args->chunk_size, "CBF output: largest chunk body in bytes")
      ->default_val(32ull << 20);
  cmd->add_option("--precision", args->precision,
                  "Value type of the output: float or double (default: the input's; CTF input: float)");
  cmd->add_flag("--quiet", args->quiet, "No progress bar (it is shown only when stderr is a terminal)");
  return Command{cmd, [args]() { return run_convert(*args); }};
}

}  // namespace cntkio::cli
