// `cntkio convert-htk IN.ctf OUT.scp`: writes a dense CTF stream as HTK feature files plus an SCP list that
// an HTKFeatureDeserializer reads back (one utterance per CTF sequence, keyed by its sequence id).
#include <charconv>
#include <iostream>
#include <memory>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "commands.hpp"
#include "core/text.hpp"

namespace cntkio::cli {
namespace {

struct ConvertHtkArgs {
  std::string input;
  std::string scp;
  std::string stream;
  std::string output_dir;
  std::string extension = "fea";
  std::string kind = "user";
  std::string qualifiers;
  uint32_t period = 100000;
  bool archive = false;
  bool big_endian = false;
  bool compressed = false;
};

HtkBaseKind parse_kind(const std::string& text) {
  const std::string k = core::to_lower(text);
  if (k == "user") return HtkBaseKind::kUser;
  if (k == "mfcc") return HtkBaseKind::kMfcc;
  if (k == "fbank") return HtkBaseKind::kFbank;
  if (k == "plp") return HtkBaseKind::kPlp;
  throw UsageError("--kind is '" + text + "'; expected user, mfcc, fbank or plp.");
}

uint16_t parse_qualifiers(const std::string& text) {
  uint16_t bits = 0;
  for (const std::string& q : split_commas(text)) {
    const std::string u = core::to_lower(q);
    if (u == "e")
      bits |= 0100;
    else if (u == "n")
      bits |= 0200;
    else if (u == "d")
      bits |= 0400;
    else if (u == "a")
      bits |= 01000;
    else if (u == "z")
      bits |= 04000;
    else if (u == "0")
      bits |= 020000;
    else if (u == "t")
      bits |= 0100000;
    else
      throw UsageError("--qualifiers: unknown qualifier '" + q +
                       "' (E, N, D, A, Z, 0, T; use --compressed for C).");
  }
  return bits;
}

int run_convert_htk(const ConvertHtkArgs& a) {
  // --stream name:dim[:alias]
  std::vector<std::string> fields;
  size_t start = 0;
  while (true) {
    const size_t colon = a.stream.find(':', start);
    fields.push_back(a.stream.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (fields.size() < 2 || fields.size() > 3 || fields[0].empty() || fields[1].empty()) {
    throw UsageError("--stream is '" + a.stream + "'; expected name:dim or name:dim:alias.");
  }
  CtfOptions ctf;
  ctf.file = a.input;
  CtfStreamOptions s;
  s.name = fields[0];
  uint64_t dim = 0;
  const char* end = fields[1].data() + fields[1].size();
  const auto [stop, ec] = std::from_chars(fields[1].data(), end, dim);
  if (ec != std::errc() || stop != end || dim == 0 || dim > 0x7FFFFFFFu) {
    throw UsageError("--stream is '" + a.stream + "'; its dim must be a whole number from 1 to 2147483647.");
  }
  s.dim = static_cast<size_t>(dim);
  s.alias = fields.size() == 3 ? fields[2] : fields[0];
  ctf.streams.push_back(s);
  std::shared_ptr<Deserializer> source = from_options("--stream", [&] { return make_ctf_deserializer(ctf); });

  HtkConvertOptions options;
  options.scp_file = a.scp;
  options.output_dir = a.output_dir;
  options.extension = a.extension;
  options.archive = a.archive;
  options.write.kind = parse_kind(a.kind);
  options.write.qualifiers = parse_qualifiers(a.qualifiers);
  options.write.sample_period = a.period;
  options.write.big_endian = a.big_endian;
  options.write.compressed = a.compressed;
  const HtkConvertResult r = convert_to_htk(*source, 0, options);
  std::cout << "wrote " << a.scp << ": " << r.utterances << " utterances, " << r.frames << " frames of "
            << s.dim << " values\n";
  return 0;
}

}  // namespace

Command add_convert_htk_command(CLI::App& app) {
  auto args = std::make_shared<ConvertHtkArgs>();
  CLI::App* cmd = app.add_subcommand(
      "convert-htk",
      "Write a dense CTF stream as HTK feature files plus an SCP list (one utterance per sequence, keyed by "
      "its id) for HTKFeatureDeserializer; read them back with `cntkio dump` and an HTK reader config.");
  cmd->add_option("IN", args->input, "CTF input file")->required();
  cmd->add_option("OUT", args->scp, "SCP file to write")->required();
  cmd->add_option("--stream", args->stream,
                  "The dense stream: name:dim or name:dim:alias (alias = name in IN)")
      ->required();
  cmd->add_option(
      "--out-dir", args->output_dir,
      "Folder for the feature files (default: OUT.d; a failed conversion removes what it created and "
      "changes nothing that was there)");
  cmd->add_flag("--archive", args->archive, "One archive file with a frame range per utterance");
  cmd->add_option("--ext", args->extension, "Extension of the logical names in the SCP")->default_val("fea");
  cmd->add_option("--kind", args->kind, "HTK base kind: user, mfcc, fbank or plp")->default_val("user");
  cmd->add_option("--qualifiers", args->qualifiers, "HTK qualifiers, e.g. E,D,A");
  cmd->add_option("--period", args->period, "Frame period in 100 ns units")->default_val(100000);
  cmd->add_flag("--big-endian", args->big_endian, "Standard HTK byte order (default: little-endian)");
  cmd->add_flag("--compressed", args->compressed, "HTK _C compression (int16 values, lossy)");
  return Command{cmd, [args]() { return run_convert_htk(*args); }};
}

}  // namespace cntkio::cli
