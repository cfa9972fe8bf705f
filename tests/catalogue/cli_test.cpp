// The command line's side of the error model: one `error:` line, `-v` details, exit codes documented in
// --help, and the `warning: skipped ...` line of a run that tolerated errors (runs the built `cntkio`).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// The cntkio binary next to this test's build folder (build/tests/cntkio_unit_tests -> build/cntkio).
fs::path cli_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path().parent_path() / "cntkio";
}

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line (stderr joined to stdout).
CliRun run_shell(const std::string& command_line) {
  CliRun r;
  const std::string command = "(" + command_line + ") 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

CliRun run(const std::string& arguments) {
  return run_shell(cli_path().string() + " " + arguments);
}

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    true;
#else
    false;
#endif

// `run` with 4 GiB of address space and 60 s of CPU time, so that a run whose memory or time grows out of
// proportion to its input fails (the shell's exit code 137 or 152 when killed) instead of exhausting the
// machine. Sanitizer builds run unbounded: their runtimes reserve terabytes of address space and run many
// times slower.
CliRun run_bounded(const std::string& arguments) {
  const std::string limits = kSanitized ? "" : "ulimit -v 4194304 && ulimit -t 60 && ";
  return run_shell(limits + cli_path().string() + " " + arguments);
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(cli_path())) GTEST_SKIP() << "cntkio is not built next to the tests";
    dir_ = fs::temp_directory_path() / ("cntkio_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return (dir_ / name).string();
  }
  // c.cntk: section Train reads `data` in file order, one dense stream a of dim 1, plus `settings`.
  std::string reader_config(const std::string& data, const std::string& settings = "") {
    return write("c.cntk", "Train = [\n  reader = [\n    file = \"" + data + "\"\n    randomize = false\n" +
                               settings + "    input = [ a = [ dim = 1 ; format = dense ] ]\n  ]\n]\n");
  }
  fs::path dir_;
};

TEST_F(Cli, HelpDocumentsEveryExitCode) {
  CliRun r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* code : {"0 success", "1 other error", "2 bad command line", "3 configuration error",
                           "4 malformed input data", "5 I/O error", "-v"}) {
    EXPECT_NE(r.output.find(code), std::string::npos) << code << " missing in:\n" << r.output;
  }
}

TEST_F(Cli, MissingConfigIsOneErrorLineAndExitCode5) {
  const std::string missing = (dir_ / "none.cntk").string();
  CliRun r = run("dump --config " + missing + " --section Train --mb-size 1");
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_EQ(r.output, "error: cannot open config file '" + missing + "': No such file or directory\n");
  CliRun v = run("-v dump --config " + missing + " --section Train --mb-size 1");
  EXPECT_EQ(v.exit_code, 5);
  EXPECT_NE(
      v.output.find("kind: I/O (IoError)\n  path: " + missing + "\n  errno: 2 (No such file or directory)"),
      std::string::npos)
      << v.output;
}

TEST_F(Cli, ConfigErrorNamesFileLineColumnAndKeyExitCode3) {
  const std::string config = write("c.cntk", "Train = [\n  reader = [\n    precision = half\n  ]\n]\n");
  CliRun r = run("-v dump --config " + config + " --section Train --mb-size 1");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output.rfind("error: " + config +
                               ":3:17: precision must be exactly 'float' or 'double', not 'half'. "
                               "(key 'global.Train.reader.precision')\n",
                           0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("  key: global.Train.reader.precision\n  file: " + config +
                          "\n  line: 3\n  column: 17\n"),
            std::string::npos)
      << r.output;
}

TEST_F(Cli, FormatErrorExitCode4AndSkipsAreReported) {
  const std::string data = write("d.ctf", "0 |a 1\n1 |a x\n1 |a 2\n2 |a 3\n");
  const std::string config = reader_config(data);
  CliRun strict = run("-v dump --config " + config + " --section Train --mb-size 4");
  EXPECT_EQ(strict.exit_code, 4) << strict.output;
  EXPECT_NE(strict.output.find(
                "error: Reached the maximum number of allowed errors while reading the input file (" + data +
                "). [file '" + data + "', line 2, column 6 (byte offset 12), stream 'a', sequence 1]"),
            std::string::npos)
      << strict.output;
  EXPECT_NE(strict.output.find("  kind: malformed input (FormatError)\n  file: " + data +
                               "\n  line: 2\n  column: 6\n  byte offset: 12\n  stream: a\n  sequence: 1\n"),
            std::string::npos)
      << strict.output;

  CliRun tolerant = run("dump --config " + config + " --section Train --mb-size 4 --set maxErrors=5");
  EXPECT_EQ(tolerant.exit_code, 0) << tolerant.output;
  EXPECT_NE(
      tolerant.output.find("warning: skipped 1 row, 1 sample and 0 sequences (3 input errors tolerated under "
                           "maxErrors); first at " +
                           data + ":2:6, " + data + ":2:1, " + data + ":2:1\n"),
      std::string::npos)
      << tolerant.output;
}

TEST_F(Cli, ConvertReportsTheRowsItsReaderSkipped) {
  // Rows that maxErrors lets the reader skip are not written: convert says so, as dump does.
  const std::string data = write("d.ctf", "0 |a 1\n1 |a x\n1 |a 2\n2 |a 3\n");
  const std::string config = reader_config(data, "    maxErrors = 5\n    traceLevel = 0\n");
  const std::string skipped =
      "warning: skipped 1 row, 1 sample and 0 sequences (3 input errors tolerated "
      "under maxErrors); first at " +
      data + ":2:6, " + data + ":2:1, " + data + ":2:1\n";
  for (const char* out : {"out.cbf", "out.ctf", "out.scp"}) {
    CliRun r =
        run("convert " + data + " " + (dir_ / out).string() + " --config " + config + " --section Train");
    EXPECT_EQ(r.exit_code, 0) << out << r.output;
    EXPECT_NE(r.output.find(skipped), std::string::npos) << out << r.output;
  }
}

}  // namespace

// `convert --to htk`: the dense stream written as HTK features + SCP reads back with the same values.
TEST_F(Cli, ConvertToHtkWritesFeaturesThatReadBackUnchanged) {
  const std::string ctf = write("in.ctf",
                                "10 |f 0.5 -1.25 |l 1:1\n"
                                "10 |f 2 3e-3\n"
                                "11 |f 7 8 |l 0:1\n"
                                "12 |f -0.001 1e5 |l 2:1\n"
                                "12 |f 1 2\n12 |f 3 4\n");
  const std::string scp = (dir_ / "out.scp").string();
  CliRun w = run("convert " + ctf + " " + scp + " --stream f:f:2:dense --quiet");
  ASSERT_EQ(w.exit_code, 0) << w.output;
  EXPECT_NE(w.output.find("3 utterances, 6 frames of 2 values"), std::string::npos) << w.output;
  const std::string reader_ctf = write("ctf.cntk",
                                       "R = [ reader = [ randomize = false\n deserializers = ( [ type = "
                                       "\"CNTKTextFormatDeserializer\"\n file = \"" +
                                           ctf + "\"\n input = [ f = [ dim = 2 ; format = dense ] ] ] ) ] ]");
  const std::string reader_htk =
      write("htk.cntk",
            "R = [ reader = [ randomize = false\n deserializers = ( [ type = \"HTKFeatureDeserializer\"\n "
            "input = [ f = [ dim = 2 ; scpFile = \"" +
                scp + "\" ] ] ] ) ] ]");
  CliRun from_ctf = run("dump --config " + reader_ctf + " --section R --mb-size 100");
  CliRun from_htk = run("dump --config " + reader_htk + " --section R --mb-size 100");
  ASSERT_EQ(from_ctf.exit_code, 0) << from_ctf.output;
  ASSERT_EQ(from_htk.exit_code, 0) << from_htk.output;
  EXPECT_NE(from_ctf.output.find("-0.001 100000"), std::string::npos) << from_ctf.output;
  EXPECT_EQ(from_htk.output, from_ctf.output);

  // Two dense streams and none chosen: a usage error, and nothing written.
  const std::string two = write("two.ctf", "0 |f 1 2 |g 3\n");
  const std::string scp2 = (dir_ / "two.scp").string();
  CliRun bad = run("convert " + two + " " + scp2);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("error: --to htk writes one dense stream"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(scp2));
}

// Outputs are written as OUT.partial and renamed over OUT: a device, link or FIFO there would be replaced.
TEST_F(Cli, ConvertRefusesToReplaceAnOutputThatIsNotARegularFile) {
  const std::string in = write("in.ctf", "0 |a 1\n1 |a 2\n");
  const fs::path target = dir_ / "target.ctf";
  const fs::path link = dir_ / "link.cbf";
  fs::create_symlink(target, link);
  const fs::path fifo = dir_ / "fifo.cbf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& out : {link, fifo}) {
    CliRun r = run("convert " + in + " " + out.string() + " --stream a:a:1:dense");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("exists and is a "), std::string::npos) << r.output;
  }
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
  EXPECT_FALSE(fs::exists(target));
}

// Inputs a writer cannot represent are refused instead of written wrong.
TEST_F(Cli, ConvertRefusesOutputsThatWouldReadBackDifferently) {
  // definesMBSize drops sequence 1, which brings the two sequences with id 0 together: in CTF they merge.
  const std::string merged = write("m.ctf", "0 |x 1 |y 0:1\n1 |x 2\n0 |x 3 |y 1:1\n");
  const std::string config =
      write("m.cntk",
            "Train = [ reader = [ readerType = \"CNTKTextFormatReader\" ; file = \"" + merged +
                "\" ; randomize = false\n input = [ x = [ dim = 1 ; format = \"dense\" ] ; y = [ dim = 2 ; "
                "format = \"sparse\" ; definesMBSize = true ] ] ] ]\n");
  CliRun ctf =
      run("convert --config " + config + " --section Train " + merged + " " + (dir_ / "m2.ctf").string());
  EXPECT_EQ(ctf.exit_code, 2) << ctf.output;
  EXPECT_NE(ctf.output.find("Two sequences in a row have the id 0"), std::string::npos) << ctf.output;
  EXPECT_FALSE(fs::exists(dir_ / "m2.ctf"));
  // Two sequences with id 0: one SCP key twice, which the HTK reader drops (and one file would be lost).
  const std::string repeated = write("dup.ctf", "0 |f 1 2 3\n1 |f 4 5 6\n0 |f 7 8 9\n");
  CliRun htk = run("convert-htk " + repeated + " " + (dir_ / "dup.scp").string() + " --stream f:3");
  EXPECT_EQ(htk.exit_code, 2) << htk.output;
  EXPECT_NE(htk.output.find("Sequence key '0' appears twice"), std::string::npos) << htk.output;
  EXPECT_FALSE(fs::exists(dir_ / "dup.scp"));
  // Two output streams with one name: no reader accepts the file.
  CliRun names = run("convert " + repeated + " " + (dir_ / "n.cbf").string() +
                     " --stream a:f:3:dense --stream a:f:3:dense");
  EXPECT_EQ(names.exit_code, 2) << names.output;
  EXPECT_NE(names.output.find("Two streams are named 'a'"), std::string::npos) << names.output;
}

TEST_F(Cli, CountOptionsRejectNegativeAndOverflowingNumbersOnOneLine) {
  const std::string data = write("d.ctf", "0 |a 1\n1 |a 2\n");
  const std::string config = reader_config(data);
  const std::string base = "dump --config " + config + " --section Train ";
  for (const std::string& bad :
       {std::string("--mb-size -1"), std::string("--mb-size 99999999999999999999999"),
        std::string("--mb-size 0"), std::string("--mb-size 4 --epochs -1"),
        std::string("--mb-size 4 --subsets -1"), std::string("--mb-size 4 --epoch-size abc")}) {
    CliRun r = run(base + bad);
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.output;
    EXPECT_EQ(r.output.rfind("error: ", 0), 0u) << bad << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << bad << ": " << r.output;
  }
  EXPECT_EQ(run(base + "--mb-size 4").exit_code, 0);
}

// CNTK's keys mode (conformance README §1.4) reads the epoch to its end: --keys is not capped like value
// dumps (10 minibatches per epoch), and a cap given with it is refused rather than ignored.
TEST_F(Cli, DumpKeysCoversTheWholeEpochWhileValueDumpsStopAfterTenMinibatches) {
  std::string rows, all_keys;
  for (int i = 0; i < 25; ++i) {
    rows += std::to_string(i) + " |a " + std::to_string(i) + "\n";
    all_keys += std::to_string(i) + "\n";
  }
  const std::string config = reader_config(write("d.ctf", rows));
  const std::string base = "dump --config " + config + " --section Train --mb-size 1";
  CliRun keys = run(base + " --keys");
  EXPECT_EQ(keys.exit_code, 0) << keys.output;
  EXPECT_EQ(keys.output, all_keys);
  CliRun two_epochs = run(base + " --keys --epochs 2 --epoch-size 15");
  EXPECT_EQ(two_epochs.exit_code, 0) << two_epochs.output;
  EXPECT_EQ(std::count(two_epochs.output.begin(), two_epochs.output.end(), '\n'), 30) << two_epochs.output;
  CliRun values = run(base);
  EXPECT_EQ(values.exit_code, 0) << values.output;
  EXPECT_EQ(values.output, "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n");
  CliRun capped_keys = run(base + " --keys --max-minibatches 3");
  EXPECT_EQ(capped_keys.exit_code, 2) << capped_keys.output;
  EXPECT_EQ(capped_keys.output,
            "error: --max-minibatches caps value dumps only: --keys writes the keys of whole epochs (use "
            "--epoch-size to read fewer samples).\n");
}

TEST_F(Cli, LostStandardOutputIsAnError) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  const std::string data = write("d.ctf", "0 |a 1\n1 |a 2\n");
  const std::string config = reader_config(data);
  EXPECT_EQ(run("dump --config " + config + " --section Train --mb-size 4 >/dev/full").exit_code, 5);
  EXPECT_EQ(run("bench --config " + config + " --section Train --json >/dev/full").exit_code, 5);
}

TEST_F(Cli, BenchReportsTheRowsItsReaderSkipped) {
  const std::string data = write("d.ctf", "0 |a 1\n1 |a x\n1 |a 2\n2 |a 3\n");
  const std::string config = reader_config(data, "    maxErrors = 5\n    traceLevel = 0\n");
  CliRun r = run("bench --config " + config + " --section Train --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: skipped 1 row, 1 sample and 0 sequences"), std::string::npos) << r.output;
}

TEST_F(Cli, ConvertWarnsWhenDoublesOverflowFloat) {
  const std::string in = write("big.ctf", "0 |x 0.1 1e300\n1 |x -1e39 2\n");
  const std::string doubles = (dir_ / "d.cbf").string();
  CliRun to_double = run("convert " + in + " " + doubles + " --stream x:x:2:dense --precision double");
  ASSERT_EQ(to_double.exit_code, 0) << to_double.output;
  EXPECT_EQ(to_double.output.find("beyond float's range"), std::string::npos) << to_double.output;
  CliRun to_float = run("convert " + doubles + " " + (dir_ / "f.cbf").string() + " --precision float");
  EXPECT_EQ(to_float.exit_code, 0) << to_float.output;
  EXPECT_NE(to_float.output.find("warning: 2 double value(s) lie beyond float's range"), std::string::npos)
      << to_float.output;
}

// A failed conversion leaves nothing behind: no feature files, no partial SCP, no folder it created.
TEST_F(Cli, FailedConversionsToHtkLeaveNothing) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += std::to_string(i) + " |f " + std::to_string(i) + " 1\n";
  const std::string good = write("good.ctf", text);
  const std::string bad = write("bad.ctf", "0 |f 1 2\n1 |f x 2\n");
  auto contents = [this] {
    std::set<std::string> names;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) names.insert(e.path().string());
    return names;
  };
  const auto before = contents();
  // A bad record: the folder for the feature files was left, empty.
  for (const std::string& command :
       {"convert-htk " + bad + " " + (dir_ / "a.scp").string() + " --stream f:2",
        "convert " + bad + " " + (dir_ / "b.scp").string() + " --stream f:f:2:dense"}) {
    CliRun r = run(command);
    EXPECT_EQ(r.exit_code, 4) << command << "\n" << r.output;
    EXPECT_EQ(contents(), before) << command;
  }
  // A full disk (writes past RLIMIT_FSIZE fail as they would with ENOSPC): the 300 feature files were left.
  CliRun full = run_shell("ulimit -f 8; trap '' XFSZ; exec " + cli_path().string() + " convert " + good +
                          " " + (dir_ / "c.scp").string() + " --stream f:f:2:dense");
  EXPECT_EQ(full.exit_code, 5) << full.output;
  EXPECT_NE(full.output.find("File too large"), std::string::npos) << full.output;
  EXPECT_EQ(contents(), before);
}

// dump writes a sparse sample as a dense row of dim numbers; past kMaxDensifiedDim (2^20) it refuses before
// reading, without allocating a row (a dim of 2^31-1 once allocated 16 GiB per sample), and
// --sparse-entries writes the stored entries instead.
TEST_F(Cli, DumpRefusesToDensifyHugeSparseStreamsAndWritesTheirEntries) {
  const std::string data = write("d.ctf", "0 |y 2147483646:1.5\n1 |y 3:2 0:-1\n");
  const std::string config =
      write("c.cntk", "Train = [\n  reader = [\n    file = \"" + data +
                          "\"\n    randomize = false\n"
                          "    input = [ y = [ dim = 2147483647 ; format = sparse ] ]\n  ]\n]\n");
  CliRun dense = run_bounded("dump --config " + config + " --section Train --mb-size 4");
  EXPECT_EQ(dense.exit_code, 2) << dense.output;
  EXPECT_EQ(
      dense.output,
      "error: Stream 'y' is sparse with dim 2147483647, above the largest dim dump writes as dense rows "
      "(1048576): write its samples as index:value entries (cntkio dump --sparse-entries), or leave it "
      "out.\n");
  CliRun entries = run_bounded("dump --config " + config + " --section Train --mb-size 4 --sparse-entries");
  EXPECT_EQ(entries.exit_code, 0) << entries.output;
  EXPECT_EQ(entries.output, "2147483646:1.5\n3:2 0:-1\n");
}

namespace {
std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
}  // namespace

// One minibatch of 100,000 rows writes what 100,000 minibatches of one row write (gaps and sparse rows
// included); writing it once took time in rows squared (a layout search per row).
TEST_F(Cli, DumpOfOneHugeMinibatchEqualsDumpOfOneRowMinibatches) {
  std::string rows;
  for (int i = 0; i < 100000; ++i) {
    rows += std::to_string(i) + " |a " + std::to_string(i) + ".25 |b " + std::to_string(i % 5) + ":" +
            std::to_string(i % 3 + 1) + "\n";
  }
  const std::string data = write("d.ctf", rows);
  const std::string config = write(
      "c.cntk", "Train = [\n  reader = [\n    file = \"" + data +
                    "\"\n    randomize = false\n"
                    "    input = [ a = [ dim = 1 ; format = dense ] ; b = [ dim = 5 ; format = sparse ] ]\n"
                    "  ]\n]\n");
  for (const char* stream : {"a", "b"}) {
    const std::string base = "dump --config " + config + " --section Train --features " + stream +
                             " --max-minibatches 1000000 --output " + (dir_ / "out").string();
    CliRun huge = run_bounded(base + "-huge --mb-size 100000");
    ASSERT_EQ(huge.exit_code, 0) << huge.output;
    CliRun small = run_bounded(base + "-small --mb-size 1");
    ASSERT_EQ(small.exit_code, 0) << small.output;
    const std::string written = read_text(dir_ / "out-huge");
    EXPECT_EQ(std::count(written.begin(), written.end(), '\n'), 100000) << stream;
    EXPECT_TRUE(written == read_text(dir_ / "out-small")) << stream;
  }
}

// A CTF reader with 250,000 sparse streams, its rows listing them in the reverse order: set-up and read take
// time and memory linear in the streams (about 2 s and 0.7 GB here). Before, checking each stream's alias
// against every earlier one took about 100 s, each sample's stream lookup scanned all streams (minutes),
// and each row reserved room for the whole row in every sparse stream (terabytes).
TEST_F(Cli, DumpSetsUpAndReadsAQuarterMillionStreamsInLinearTimeAndMemory) {
  constexpr int kStreams = 250000;
  auto name = [](int k) {
    std::string digits = std::to_string(k);
    return "s" + std::string(6 - digits.size(), '0') + digits;  // config order is name order
  };
  std::string streams, rows;
  for (int k = 0; k < kStreams; ++k) streams += "      " + name(k) + " = [ dim = 2 ; format = sparse ]\n";
  for (int row = 0; row < 2; ++row) {
    rows += std::to_string(row);
    for (int k = kStreams - 1; k >= 0; --k)
      rows += " |" + name(k) + " " + std::to_string((k + row) % 2) + ":1";
    rows += "\n";
  }
  const std::string data = write("d.ctf", rows);
  const std::string config =
      write("c.cntk", "Train = [\n  reader = [\n    file = \"" + data +
                          "\"\n    randomize = false\n    input = [\n" + streams + "    ]\n  ]\n]\n");
  CliRun r = run_bounded("dump --config " + config + " --section Train --mb-size 2 --output " +
                         (dir_ / "out").string());
  ASSERT_EQ(r.exit_code, 0) << "(137, 152: killed at the CPU-time limit) " << r.output;
  // Stream by stream, the two rows: index 0 set is "1 0", index 1 set is "0 1".
  std::string expected;
  for (int k = 0; k < kStreams; ++k) {
    for (int row = 0; row < 2; ++row) expected += (k + row) % 2 == 0 ? "1 0\n" : "0 1\n";
  }
  EXPECT_TRUE(read_text(dir_ / "out") == expected);
}
