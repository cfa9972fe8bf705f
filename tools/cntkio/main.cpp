// The `cntkio` command line: registers the verbs (cmd_*.cpp) and maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <typeinfo>

#include "cntkio/errors.hpp"
#include "cntkio/version.hpp"
#include "commands.hpp"
#include "core/output_path.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitOther = 1;
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 3;
constexpr int kExitData = 4;
constexpr int kExitIo = 5;

const char* kExitCodes =
    "Exit codes: 0 success (input errors tolerated under maxErrors are reported on stderr as one "
    "'warning: skipped ...' line), 1 other error, 2 bad command line or API use, 3 configuration error, "
    "4 malformed input data, 5 I/O error (missing or unreadable file). Errors are printed as one line "
    "'error: <message>' on stderr, with the file and line/column or byte offset; -v adds the details.";

// The details of `e` (with -v): its kind and structured fields, one per line, then any nested causes.
void print_details(const std::exception& e, int depth = 0) {
  const std::string indent(2 * static_cast<size_t>(depth + 1), ' ');
  if (const auto* format = dynamic_cast<const cntkio::FormatError*>(&e)) {
    const cntkio::SourceLocation& l = format->location();
    std::cerr << indent << "kind: malformed input (FormatError)\n";
    if (!l.file.empty()) std::cerr << indent << "file: " << l.file << '\n';
    if (l.line) std::cerr << indent << "line: " << *l.line << '\n';
    if (l.column) std::cerr << indent << "column: " << *l.column << '\n';
    if (l.byte_offset) std::cerr << indent << "byte offset: " << *l.byte_offset << '\n';
    if (!l.stream.empty()) std::cerr << indent << "stream: " << l.stream << '\n';
    if (!l.sequence_key.empty()) std::cerr << indent << "sequence: " << l.sequence_key << '\n';
    std::cerr << indent << "CNTK's text: " << format->cntk_text() << '\n';
  } else if (const auto* config = dynamic_cast<const cntkio::ConfigError*>(&e)) {
    std::cerr << indent << "kind: configuration (ConfigError)\n";
    if (!config->key_path().empty()) std::cerr << indent << "key: " << config->key_path() << '\n';
    if (!config->file().empty()) std::cerr << indent << "file: " << config->file() << '\n';
    if (config->line() != 0) std::cerr << indent << "line: " << config->line() << '\n';
    if (config->column() != 0) std::cerr << indent << "column: " << config->column() << '\n';
  } else if (const auto* io = dynamic_cast<const cntkio::IoError*>(&e)) {
    std::cerr << indent << "kind: I/O (IoError)\n";
    std::cerr << indent << "path: " << io->path() << '\n';
    if (io->error_number() != 0) {
      std::cerr << indent << "errno: " << io->error_number() << " (" << std::strerror(io->error_number())
                << ")\n";
    }
  } else if (dynamic_cast<const cntkio::UsageError*>(&e) != nullptr) {
    std::cerr << indent << "kind: usage (UsageError)\n";
  } else if (const auto* error = dynamic_cast<const cntkio::Error*>(&e)) {
    std::cerr << indent << "kind: error (cntkio::Error)\n";
    std::cerr << indent << "CNTK's text: " << error->cntk_text() << '\n';
  } else {
    std::cerr << indent << "kind: " << typeid(e).name() << '\n';
  }
  try {
    std::rethrow_if_nested(e);
  } catch (const std::exception& cause) {
    std::cerr << indent << "caused by: " << cause.what() << '\n';
    print_details(cause, depth + 1);
  } catch (...) {
    std::cerr << indent << "caused by: an unknown exception\n";
  }
}

int report(const std::exception& e, int code, bool verbose) {
  std::cerr << "error: " << e.what() << '\n';
  if (verbose) print_details(e);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) then fails the write with EFBIG, which every writer reports as an IoError
  // (exit 5) and cleans up after, instead of SIGXFSZ killing the process with partial files left.
  std::signal(SIGXFSZ, SIG_IGN);
  // An output that is one of the files the command reads is refused (`convert a.ctf a.ctf`).
  cntkio::core::remember_inputs();
  CLI::App app{"cntkio: reads CNTK datasets (CTF and more) with CNTK's exact reader semantics.", "cntkio"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("cntkio ") + cntkio::version());
  app.require_subcommand(1);
  bool verbose = false;
  app.add_flag("-v,--verbose", verbose,
               "On an error, also print its kind, location fields, errno and causes");

  std::vector<cntkio::cli::Command> commands = {
      cntkio::cli::add_dump_command(app),    cntkio::cli::add_inspect_command(app),
      cntkio::cli::add_convert_command(app), cntkio::cli::add_convert_htk_command(app),
      cntkio::cli::add_bench_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help, --version
      const int code = app.exit(e);
      std::cout.flush();
      if (!std::cout) {  // a full disk or a closed pipe: the text did not arrive
        std::cerr << "error: cannot write standard output: " << std::strerror(errno) << '\n';
        return kExitIo;
      }
      return code;
    }
    // A word that is no command reads as a missing command to CLI11: name it.
    for (int i = 1; i < argc; ++i) {
      const std::string word = argv[i];
      if (word == "-v" || word == "--verbose") continue;
      const bool known =
          std::any_of(commands.begin(), commands.end(),
                      [&word](const cntkio::cli::Command& c) { return c.app->get_name() == word; });
      if (!known) {
        std::cerr << "error: '" << word << "' is not a command or option of cntkio (commands: dump, inspect, "
                  << "convert, convert-htk, bench; see 'cntkio --help')\n";
        return kExitUsage;
      }
      break;
    }
    // One line, as every other error (CLI11 prints two, without the prefix).
    std::cerr << "error: " << e.what() << " (see 'cntkio --help')\n";
    return kExitUsage;
  }

  try {
    for (const auto& command : commands) {
      if (!command.app->parsed()) continue;
      const int code = command.run();
      // Output lost on a full disk or a closed pipe must not end in success.
      std::cout.flush();
      if (!std::cout) throw cntkio::IoError("cannot write standard output", "<stdout>", errno);
      return code;
    }
    return kExitOk;
  } catch (const cntkio::ConfigError& e) {
    return report(e, kExitConfig, verbose);
  } catch (const cntkio::FormatError& e) {
    return report(e, kExitData, verbose);
  } catch (const cntkio::IoError& e) {
    return report(e, kExitIo, verbose);
  } catch (const cntkio::UsageError& e) {
    return report(e, kExitUsage, verbose);
  } catch (const std::bad_alloc&) {
    // A sample or chunk larger than the memory left (a huge dim, a huge context window): no location is
    // known here, but the user should read that memory ran out, not "std::bad_alloc".
    std::cerr << "error: out of memory (a sample, chunk or minibatch needed more memory than could be "
                 "allocated; check the configured dimensions and minibatch size)\n";
    return kExitOther;
  } catch (const std::exception& e) {
    return report(e, kExitOther, verbose);
  }
}
