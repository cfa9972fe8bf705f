// The `cntkio` command line: registers the verbs (cmd_*.cpp) and maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cntkio/errors.hpp"
#include "commands.hpp"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitOther = 1;
constexpr int kExitUsage = 2;
constexpr int kExitConfig = 3;
constexpr int kExitData = 4;
constexpr int kExitIo = 5;

const char* kExitCodes =
    "Exit codes: 0 success, 1 other error, 2 bad command line or API use, 3 configuration error, "
    "4 malformed input data, 5 I/O error. Errors are printed as one line 'error: <message>' on stderr.";

int report(const char* message, int code) {
  std::cerr << "error: " << message << '\n';
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"cntkio: reads CNTK datasets (CTF and more) with CNTK's exact reader semantics.", "cntkio"};
  app.footer(kExitCodes);
  app.set_version_flag("--version", std::string("cntkio ") + CNTKIO_VERSION);
  app.require_subcommand(1);

  std::vector<cntkio::cli::Command> commands = {
      cntkio::cli::add_dump_command(app),
      cntkio::cli::add_inspect_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) return command.run();
    }
    return kExitOk;
  } catch (const cntkio::ConfigError& e) {
    return report(e.what(), kExitConfig);
  } catch (const cntkio::FormatError& e) {
    return report(e.what(), kExitData);
  } catch (const cntkio::IoError& e) {
    return report(e.what(), kExitIo);
  } catch (const cntkio::UsageError& e) {
    return report(e.what(), kExitUsage);
  } catch (const std::exception& e) {
    return report(e.what(), kExitOther);
  }
}
