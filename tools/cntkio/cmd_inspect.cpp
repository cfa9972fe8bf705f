// `cntkio inspect`: describe a reader section (files, index, streams, first minibatches).
#include <iostream>
#include <memory>

#include "cmd_inspect_file.hpp"
#include "cntkio/config.hpp"
#include "cntkio/minibatch_source.hpp"
#include "commands.hpp"

namespace cntkio::cli {
namespace {

struct InspectOptions {
  std::string file;  // a CBF file whose header is printed (no config needed)
  std::string config_file;
  std::string section;
  std::string reader_section = "reader";
  std::vector<std::string> overrides;
  size_t minibatches = 3;
  size_t mb_size = 32;
};

void run_inspect(const InspectOptions& o) {
  Config root = Config::from_files({o.config_file}, o.overrides);
  Config reader = root.get_block(o.section).get_block(o.reader_section);
  std::cout << "reader " << reader.path() << '\n';
  if (!reader.exists("deserializers")) {
    std::cout << "readerType " << reader.get_string("readerType", "CNTKTextFormatReader") << '\n';
  }
  auto source = MinibatchSource::from_config(reader);
  for (const std::string& line : source->describe()) std::cout << line << '\n';
  std::cout << "streams:\n";
  for (const StreamInfo& s : source->streams()) {
    std::cout << "  " << s.id << " " << s.name << " (alias '" << s.alias << "'): " << to_string(s.storage)
              << ", dim " << s.sample_dim() << ", " << to_string(s.element_type)
              << (s.defines_mb_size ? ", defines the minibatch size" : "") << '\n';
  }
  source->start_epoch(o.mb_size, 0, kFullSweep);
  Minibatch mb;
  for (size_t i = 0; i < o.minibatches && source->next_minibatch(mb); ++i) {
    std::cout << "minibatch " << i << ": " << mb.keys.size() << " sequences"
              << (mb.end_of_sweep ? ", end of sweep" : "") << (mb.end_of_epoch ? ", end of epoch" : "")
              << '\n';
    for (const StreamBatch& b : mb.streams) {
      std::cout << "  " << b.info.name << ": " << b.layout.num_samples() << " samples in "
                << b.layout.num_parallel << " parallel rows x " << b.layout.num_time_steps << " steps";
      if (b.info.storage == StorageFormat::kSparseCsc) std::cout << ", " << b.nnz() << " non-zeros";
      std::cout << '\n';
    }
    std::cout << "  keys:";
    for (size_t k = 0; k < mb.keys.size() && k < 12; ++k) std::cout << ' ' << mb.keys[k];
    if (mb.keys.size() > 12) std::cout << " ...";
    std::cout << '\n';
  }
  std::cout << "position after these minibatches: sample " << source->current_sample_position() << '\n';
  const SkipReport skipped = source->skip_report();
  if (!skipped.empty()) std::cerr << "warning: " << skipped.to_string() << '\n';
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  auto inspect = std::make_shared<InspectOptions>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Describe a reader section: its files, index, streams and first minibatches");
  cmd->add_option("FILE", inspect->file,
                  "A CBF file (either layout): print its header, chunk table and counts");
  cmd->add_option("--config", inspect->config_file, "CNTK config file (required unless FILE is given)");
  cmd->add_option("--section", inspect->section, "Top-level block that holds the reader (with --config)");
  cmd->add_option("--reader-section", inspect->reader_section, "Reader block inside the section")
      ->default_val("reader");
  cmd->add_option("--set", inspect->overrides, "Config override key=value (repeatable)");
  cmd->add_option("--minibatches", inspect->minibatches, "Minibatches to describe")
      ->default_val(3)
      ->check(count_validator());
  cmd->add_option("--mb-size", inspect->mb_size, "Samples per minibatch")
      ->default_val(32)
      ->check(positive_count_validator());
  return Command{cmd, [inspect]() {
                   if (!inspect->file.empty()) inspect_data_file(inspect->file, std::cout);
                   if (inspect->file.empty() || !inspect->config_file.empty()) {
                     if (inspect->config_file.empty() || inspect->section.empty()) {
                       throw UsageError("inspect needs a FILE, or --config and --section.");
                     }
                     run_inspect(*inspect);
                   }
                   return 0;
                 }};
}

}  // namespace cntkio::cli
