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
#include "cntkio/htk.hpp"
#include "commands.hpp"
#include "core/text.hpp"

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
  if (!f) {
    throw UsageError(std::string(option) + " is '" + text + "'; expected ctf, cbf or cbf1" +
                     (std::string_view(option) == "--to" ? " (or htk)." : "."));
  }
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

// The reader a config section describes, over `a.input` (CTF or CBF).
std::shared_ptr<Deserializer> deserializer_from_config(const ConvertArgs& a, DataFormat from,
                                                       std::optional<ElementType> element_type) {
  if (a.section.empty()) throw UsageError("--config needs --section.");
  const Config root = Config::from_files({a.config_file}, a.overrides);
  const Config section = source_section(root.get_block(a.section).get_block(a.reader_section), from);
  if (from == DataFormat::kCtf) {
    CtfOptions ctf = ctf_options_from_config(section, section.exists_current("type"));
    ctf.file = a.input;
    if (element_type) ctf.element_type = *element_type;
    return make_ctf_deserializer(ctf);
  }
  CbfOptions cbf = cbf_options_from_config(section);
  cbf.file = a.input;
  cbf.element_type = std::nullopt;  // keep the stored types unless --precision says otherwise
  return make_cbf_deserializer(cbf);
}

// `--to htk` (or OUT ending in .scp): the input's one dense stream as HTK feature files plus an SCP list,
// with the defaults of `cntkio convert-htk` (which has the header options).
int run_convert_to_htk(const ConvertArgs& a, DataFormat from) {
  std::shared_ptr<Deserializer> source;
  std::string wanted;  // the stream to write; empty: the only dense one
  if (!a.config_file.empty()) {
    if (!a.streams.empty()) {
      throw UsageError("Give the streams either with --stream or with --config, not both.");
    }
    source = deserializer_from_config(a, from, std::nullopt);
  } else if (a.streams.empty() && from != DataFormat::kCtf) {
    CbfOptions cbf;  // a CBF file names its streams: its one dense stream is written
    cbf.file = a.input;
    cbf.element_type = std::nullopt;
    source = make_cbf_deserializer(cbf);
  } else if (a.streams.size() != 1) {
    throw UsageError(
        "--to htk writes one dense stream: give it with one --stream (or a reader with --config).");
  } else {
    const ConvertStream stream = parse_convert_stream(a.streams[0]);
    wanted = stream.name;
    if (from == DataFormat::kCtf) {
      if (stream.dim == 0 || stream.storage != StorageFormat::kDense) {
        throw UsageError("--stream for CTF input to HTK: name:alias:dim:dense (HTK features are dense).");
      }
      CtfOptions ctf;
      ctf.file = a.input;
      ctf.streams.push_back({stream.name, stream.alias.empty() ? stream.name : stream.alias,
                             static_cast<size_t>(stream.dim), StorageFormat::kDense, false});
      source = from_options("--stream", [&] { return make_ctf_deserializer(ctf); });
    } else {
      CbfOptions cbf;
      cbf.file = a.input;
      cbf.element_type = std::nullopt;
      if (!stream.alias.empty()) cbf.renames.emplace_back(stream.alias, stream.name);
      source = make_cbf_deserializer(cbf);
    }
  }
  const std::vector<StreamInfo>& streams = source->streams();
  size_t chosen = streams.size();
  size_t dense = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (wanted.empty() ? streams[i].storage == StorageFormat::kDense : streams[i].name == wanted) chosen = i;
    dense += streams[i].storage == StorageFormat::kDense;
  }
  if (wanted.empty() && dense != 1) {
    throw UsageError("--to htk writes one dense stream and the input '" + a.input + "' has " +
                     std::to_string(dense) + "; pick one with --stream NAME (its name in the file).");
  }
  if (chosen == streams.size())
    throw UsageError("The input '" + a.input + "' has no stream '" + wanted + "'.");
  HtkConvertOptions options;
  options.scp_file = a.output;
  const HtkConvertResult r = convert_to_htk(*source, chosen, options);
  std::cout << "wrote " << a.output << " (htk): " << r.utterances << " utterances, " << r.frames
            << " frames of " << streams[chosen].sample_dim() << " values\n";
  SkipReport skipped;  // a --config reader may tolerate input errors: say what was not written
  source->add_skips(skipped);
  if (!skipped.empty()) std::cerr << "warning: " << skipped.to_string() << '\n';
  return 0;
}

int run_convert(const ConvertArgs& a) {
  const DataFormat from = a.from.empty() ? detect_data_format(a.input) : format_arg(a.from, "--from");
  if (core::iequals(a.to, "htk") ||
      (a.to.empty() && a.output.size() > 4 && core::iequals(a.output.substr(a.output.size() - 4), ".scp"))) {
    return run_convert_to_htk(a, from);
  }
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
    summary =
        convert_deserializer(*deserializer_from_config(a, from, options.element_type), a.output, options);
  } else {
    for (const std::string& spec : a.streams) options.streams.push_back(parse_convert_stream(spec));
    summary = from_options("--stream", [&] { return convert_file(a.input, from, a.output, options); });
  }
  if (show_progress) std::fputc('\n', stderr);
  std::cout << "wrote " << a.output << " (" << to_string(to) << "): " << summary.sequences << " sequences, "
            << summary.samples << " samples";
  if (to != DataFormat::kCtf) std::cout << ", " << summary.chunks << " chunk(s)";
  std::cout << ", " << summary.bytes << " bytes\n";
  // What maxErrors let through is never silent (as `dump` and `inspect` do).
  if (!summary.skipped.empty()) std::cerr << "warning: " << summary.skipped.to_string() << '\n';
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand(
      "convert",
      "Convert between CTF, CBF and legacy CBF v1 (lossless; see docs/formats/cbf.md). The input format is "
      "detected from its first bytes, the output format from its extension (.bin/.cbf: CBF, .cbf1: legacy, "
      "else CTF) unless --from/--to say otherwise. `--to htk` (or OUT ending in .scp) writes one dense "
      "stream as "
      "HTK feature files plus an SCP list (more options: convert-htk).");
  cmd->add_option("IN", args->input, "Input file")->required();
  cmd->add_option("OUT", args->output,
                  "Output file (written as OUT.partial, renamed when complete; a failed conversion leaves "
                  "nothing behind)")
      ->required();
  cmd->add_option("--from", args->from, "Input format: ctf, cbf or cbf1 (default: detected)");
  cmd->add_option("--to", args->to, "Output format: ctf, cbf, cbf1 or htk (default: from OUT's extension)");
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
      ->default_val(32ull << 20)
      ->check(positive_count_validator());
  cmd->add_option("--precision", args->precision,
                  "Value type of the output: float or double (default: the input's; CTF input: float)");
  cmd->add_flag("--quiet", args->quiet, "No progress bar (it is shown only when stderr is a terminal)");
  return Command{cmd, [args]() { return run_convert(*args); }};
}

}  // namespace cntkio::cli
