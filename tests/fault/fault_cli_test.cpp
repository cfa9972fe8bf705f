// The command line under a fault of the storage (`cntkio_faults`, the CLI with a FaultEnv scripted by
// CNTKIO_TEST_FAULTS, tests/fault/cli_faults_hook.cpp): a located IoError, exit status 5, and nothing left at
// the output's name; the same command without the fault writes the output.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "config/config_test_util.hpp"

using cntkio::config_test::TempDir;
namespace fs = std::filesystem;

namespace {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun run(const std::string& faults, const std::string& arguments) {
  const fs::path cli = fs::read_symlink("/proc/self/exe").parent_path() / "cntkio_faults";
  const std::string command =
      "(CNTKIO_TEST_FAULTS='" + faults + "' " + cli.string() + " " + arguments + ") 2>&1";
  CliRun r;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST(FaultCli, AnInjectedFaultIsExitStatusFiveWithTheFileNamedAndNothingAtTheOutput) {
  TempDir dir;
  std::string text;
  for (int s = 0; s < 100; ++s) text += std::to_string(s) + " |x " + std::to_string(s) + " 1\n";
  const std::string ctf = dir.write("d.ctf", text);
  const std::string out = dir.path("out.bin");
  const std::string convert = "convert " + ctf + " " + out + " --stream x:x:2:dense";
  struct Case {
    std::string faults, named;
  };
  for (const Case& c :
       {Case{"write,1,28,out.bin", out + ".partial"}, Case{"sync,1,5,out.bin", out + ".partial"},
        Case{"rename,1,5,out.bin", out}, Case{"read,1,5,d.ctf", ctf}}) {
    SCOPED_TRACE(c.faults);
    const CliRun r = run(c.faults, convert);
    EXPECT_EQ(r.exit_code, 5) << r.output;
    EXPECT_NE(r.output.find("error: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("'" + c.named + "'"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out));
    EXPECT_FALSE(fs::exists(out + ".partial"));
  }
  // dump --output through the same writer.
  const std::string config =
      dir.write("r.cntk", "r = [ reader = [ readerType = CNTKTextFormatReader ; file = \"" + ctf +
                              "\" ; input = [ x = [ dim = 2 ; format = dense ] ] ] ]\n");
  const std::string dumped = dir.path("dump.txt");
  const std::string dump = "dump --config " + config + " --section r --mb-size 8 --output " + dumped;
  const CliRun full_disk = run("write,1,28,dump.txt", dump);
  EXPECT_EQ(full_disk.exit_code, 5) << full_disk.output;
  EXPECT_NE(full_disk.output.find("No space left on device"), std::string::npos) << full_disk.output;
  EXPECT_FALSE(fs::exists(dumped));
  EXPECT_EQ(run("", dump).exit_code, 0);
  EXPECT_TRUE(fs::exists(dumped));
  const CliRun clean = run("", convert);
  EXPECT_EQ(clean.exit_code, 0) << clean.output;
  EXPECT_TRUE(fs::exists(out));
}
