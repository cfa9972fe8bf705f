#include "runner.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/registry.hpp"
#include "pipeline/dump.hpp"

namespace cntkio::conformance {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<std::string> tokens_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string token;
  while (in >> token) out.push_back(token);
  return out;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};  // a missing control reads as zero tokens (README §3)
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// CNTK's CheckFilesEquivalent: whitespace-separated tokens, exact or with relative tolerance 1e-5f.
std::string compare_tokens(const std::string& expected, const std::string& actual, bool tolerance) {
  std::vector<std::string> e = tokens_of(expected), a = tokens_of(actual);
  const double tol = static_cast<double>(1e-5f);
  for (size_t i = 0; i < std::min(e.size(), a.size()); ++i) {
    bool same = e[i] == a[i];
    if (!same && tolerance) {
      char* end1 = nullptr;
      char* end2 = nullptr;
      double x = std::strtod(e[i].c_str(), &end1), y = std::strtod(a[i].c_str(), &end2);
      if (*end1 == '\0' && *end2 == '\0') {
        double diff = std::fabs(x - y);
        same = diff <= tol * std::fabs(x) && diff <= tol * std::fabs(y);
      }
    }
    if (!same) {
      return "token " + std::to_string(i) + ": expected '" + e[i] + "', got '" + a[i] + "'";
    }
  }
  if (e.size() != a.size()) {
    return "expected " + std::to_string(e.size()) + " tokens, got " + std::to_string(a.size());
  }
  return {};
}

class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) { fs::current_path(dir); }
  ~WorkingDirectory() { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

std::vector<std::string> string_list(const json& j) {
  std::vector<std::string> out;
  if (j.is_array()) {
    for (const auto& v : j) out.push_back(v.get<std::string>());
  }
  return out;
}

pipeline::DumpOptions dump_options(const json& c, const fs::path& root) {
  pipeline::DumpOptions o;
  o.config_file = fs::absolute(root / c["config"].get<std::string>()).string();
  o.section = c["section"].get<std::string>();
  o.reader_section = c.value("readerSection", std::string("reader"));
  std::string abs_root = fs::absolute(root).string();
  for (std::string override_text : string_list(c["overrides"])) {
    const std::string marker = "@ABSOLUTE_ROOT@";
    for (size_t at; (at = override_text.find(marker)) != std::string::npos;) {
      override_text.replace(at, marker.size(), abs_root);
    }
    o.overrides.push_back(override_text);
  }
  if (c["epochSize"].is_null()) {
    o.epoch_size = kFullSweep;
  } else if (c["epochSize"].is_string()) {
    o.epoch_size = kFullSweep;  // "randomizeAuto"
  } else {
    o.epoch_size = c["epochSize"].get<size_t>();
  }
  if (c["mbSize"].is_null() || c["epochs"].is_null()) {
    // An error case that CNTK only wraps around reader construction: build the reader, read nothing.
    if (c["mode"] != "error" || c.value("errorStage", std::string()) != "construction") {
      throw std::runtime_error(
          "case has no minibatch size or epoch count (it cannot be run from this folder)");
    }
    o.minibatch_size = 1;
    o.epochs = 0;
  } else {
    o.minibatch_size = c["mbSize"].get<size_t>();
    o.epochs = c["epochs"].get<size_t>();
  }
  o.features = string_list(c["featureStreams"]);
  o.labels = string_list(c["labelStreams"]);
  o.subset = c["subsetNum"].is_null() ? 0 : c["subsetNum"].get<size_t>();
  o.subsets = c["numSubsets"].is_null() ? 1 : c["numSubsets"].get<size_t>();
  o.shared_layout = c["sharedLayout"].is_null() ? true : c["sharedLayout"].get<bool>();
  return o;
}

std::string run_parser_case(const json& c, const fs::path& root) {
  const json& p = c["parser"];
  fs::path dir = root / c["cwd"].get<std::string>();
  fs::path temp;
  if (p.contains("inlineContent")) {
    temp = fs::temp_directory_path() / ("cntkio_conformance_" + std::to_string(::getpid()));
    fs::create_directories(temp);
    std::ofstream(temp / p["file"].get<std::string>(), std::ios::binary)
        << p["inlineContent"].get<std::string>();
    dir = temp;
  }
  std::string detail;
  {
    WorkingDirectory cwd(dir);
    CtfOptions options;
    options.file = p["file"].get<std::string>();
    for (const auto& s : p["streams"]) {
      CtfStreamOptions stream;
      stream.name = s["name"].get<std::string>();
      stream.alias = s["alias"].get<std::string>();
      stream.dim = s["dim"].get<size_t>();
      stream.storage =
          s["storage"].get<std::string>() == "sparse" ? StorageFormat::kSparseCsc : StorageFormat::kDense;
      options.streams.push_back(stream);
    }
    options.element_type =
        c.value("elemType", std::string("float")) == "double" ? ElementType::kDouble : ElementType::kFloat;
    options.max_errors = p["maxErrors"].get<uint64_t>();
    const std::string level = p.value("traceLevel", std::string("Warning"));
    options.trace_level = level == "Info" ? 2 : level == "Warning" ? 1 : 0;
    options.chunk_size_in_bytes = ~uint64_t{0};
    std::string log;
    options.log_sink = [&log](int, std::string_view line) {
      log.append(line);
      log.push_back('\n');
    };
    std::shared_ptr<Deserializer> d = make_ctf_deserializer(options);
    const std::string expected_error =
        c["errorMessage"].is_string() ? c["errorMessage"].get<std::string>() : "";
    try {
      ChunkPtr chunk = d->load_chunk(0);
      if (!expected_error.empty()) {
        detail = "expected the chunk load to throw '" + expected_error + "'";
      } else if (p.contains("expectedValue")) {
        std::vector<SequenceData> data;
        chunk->get_sequence(0, data);
        double value = options.element_type == ElementType::kFloat
                           ? static_cast<double>(static_cast<const float*>(data[0].values)[0])
                           : static_cast<const double*>(data[0].values)[0];
        double expected = p["expectedValue"].get<double>();
        double tolerance = p.value("relativeTolerance", 1e-7);
        if (std::fabs(value - expected) > tolerance * std::fabs(expected)) {
          detail = "value " + std::to_string(value) + " differs from " + std::to_string(expected);
        }
      } else if (c["control"].is_string()) {
        detail = compare_tokens(read_file(root / c["control"].get<std::string>()), log, false);
      }
    } catch (const Error& e) {
      if (expected_error.empty()) {
        detail = std::string("unexpected error: ") + e.what();
      } else if (e.cntk_text() != expected_error) {
        detail = "error text '" + e.cntk_text() + "' differs from '" + expected_error + "'";
      }
    }
  }
  if (!temp.empty()) fs::remove_all(temp);
  return detail;
}

// The cntkio binary next to this runner's build folder (build/tests/conformance/cntkio_conformance ->
// build/cntkio).
fs::path cli_path() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : self.parent_path().parent_path().parent_path() / "cntkio";
}

// The command line of `cntkio dump --keys` for the options of a keys case.
std::vector<std::string> keys_command(const fs::path& cli, const pipeline::DumpOptions& o) {
  auto join = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names) out += (out.empty() ? "" : ",") + name;
    return out;
  };
  std::vector<std::string> args = {cli.string(),
                                   "dump",
                                   "--keys",
                                   "--config",
                                   o.config_file,
                                   "--section",
                                   o.section,
                                   "--reader-section",
                                   o.reader_section,
                                   "--epoch-size",
                                   o.epoch_size == kFullSweep ? "sweep" : std::to_string(o.epoch_size),
                                   "--mb-size",
                                   std::to_string(o.minibatch_size),
                                   "--epochs",
                                   "1",
                                   "--subset",
                                   std::to_string(o.subset),
                                   "--subsets",
                                   std::to_string(o.subsets)};
  if (!o.features.empty()) args.insert(args.end(), {"--features", join(o.features)});
  if (!o.labels.empty()) args.insert(args.end(), {"--labels", join(o.labels)});
  if (!o.shared_layout) args.push_back("--separate-layouts");
  for (const std::string& text : o.overrides) args.insert(args.end(), {"--set", text});
  return args;
}

// Runs `args` in `dir` (without a shell); returns its exit status, standard output and standard error.
struct ChildRun {
  int status = -1;
  std::string out, err;
};
ChildRun run_child(const std::vector<std::string>& args, const fs::path& dir) {
  const fs::path err_file =
      fs::temp_directory_path() / ("cntkio_conformance_stderr_" + std::to_string(::getpid()));
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error("pipe() failed");
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork() failed");
  if (pid == 0) {
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (::chdir(dir.c_str()) != 0 || err < 0 || ::dup2(pipe_fds[1], 1) < 0 || ::dup2(err, 2) < 0) _exit(126);
    ::close(pipe_fds[0]);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  ::close(pipe_fds[1]);
  ChildRun r;
  char buffer[65536];
  for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buffer, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  std::error_code ignored;
  fs::remove(err_file, ignored);
  return r;
}

// A keys case (README §1.4: one epoch read to its end, the key of every sequence of the features layout)
// through `cntkio dump --keys`: returns the keys it wrote, one per line.
std::string run_keys_case(const pipeline::DumpOptions& options, const fs::path& dir) {
  const fs::path cli = cli_path();
  if (cli.empty() || !fs::exists(cli)) {
    throw std::runtime_error("the cntkio binary is not built next to the runner (" + cli.string() + ")");
  }
  ChildRun r = run_child(keys_command(cli, options), dir);
  if (r.status != 0) {
    throw std::runtime_error("cntkio dump --keys exited with " + std::to_string(r.status) + ": " + r.err);
  }
  return r.out;
}

// The build lacks a format the case needs (src/spec/registry.cpp, left_out_format_note).
bool left_out_of_build(const std::string& message) {
  return message.find("left out of this build of cntkio") != std::string::npos;
}

}  // namespace

std::vector<CaseResult> run_cases(const std::string& conformance_dir, const std::string& filter,
                                  const std::vector<std::string>& extra_overrides,
                                  const std::string& data_url) {
  const fs::path root = fs::absolute(conformance_dir);
  json cases = json::parse(read_file(root / "cases.json"));
  std::map<std::string, std::string> outputs;  // reference outputs for differential cases
  std::vector<CaseResult> results;
  for (const json& c : cases) {
    if (!c.value("included", false)) continue;
    CaseResult r;
    r.name = c["name"].get<std::string>();
    if (!filter.empty() && r.name.find(filter) == std::string::npos &&
        (c["mode"] != "reference" || filter.find("two_files") == std::string::npos)) {
      continue;
    }
    r.kind = c["kind"].get<std::string>();
    r.mode = c["mode"].get<std::string>();
    r.generated = c.value("generated", false);
    if (r.kind == "image" && !find_deserializer_type("ImageDeserializer")) {
      r.skipped = true;
      r.detail = "the image format is not built (CNTKIO_WITH_IMAGES=OFF)";
      results.push_back(std::move(r));
      continue;
    }
    if (!data_url.empty()) {
      const std::vector<std::string> files = string_list(c["dataFiles"]);
      if ((r.kind != "ctf" && r.kind != "cbf") || r.mode == "parser" || r.mode == "keys" ||
          files.size() != 1) {
        r.skipped = true;
        r.detail = "not a CTF or CBF case that reads one data file through its reader section";
        results.push_back(std::move(r));
        continue;
      }
    }
    try {
      if (r.mode == "parser") {
        r.detail = run_parser_case(c, root);
      } else {
        pipeline::DumpOptions options = dump_options(c, root);
        options.overrides.insert(options.overrides.end(), extra_overrides.begin(), extra_overrides.end());
        if (!data_url.empty()) {  // the reader's file, read from the server that serves `root`
          const std::string url = data_url + "/" + string_list(c["dataFiles"]).front();
          options.overrides.push_back(options.section + "=[" + options.reader_section + "=[file=\"" + url +
                                      "\"]]");
        }
        std::ostringstream out;
        std::string expected_error;
        if (r.mode == "error") {
          expected_error = c["errorMessage"].is_string() ? c["errorMessage"].get<std::string>() : "";
        }
        try {
          if (r.mode == "keys") {
            out << run_keys_case(options, root / c["cwd"].get<std::string>());
          } else {
            WorkingDirectory cwd(root / c["cwd"].get<std::string>());
            pipeline::run_dump(options, out);
          }
          if (r.mode == "error") r.detail = "expected an error, the read succeeded";
        } catch (const Error& e) {
          if (r.mode != "error" || left_out_of_build(e.what())) throw;
          std::string text = e.cntk_text();
          if (!data_url.empty()) {  // the text names the URL where CNTK named the config's relative path
            const std::string file = string_list(c["dataFiles"]).front();
            const std::string url = data_url + "/" + file;
            const std::string local =
                (root / file).lexically_relative(root / c["cwd"].get<std::string>()).string();
            for (size_t at; (at = text.find(url)) != std::string::npos;) text.replace(at, url.size(), local);
          }
          if (!expected_error.empty() && text != expected_error) {
            r.detail = "error text '" + text + "' differs from '" + expected_error + "'";
          }
        }
        if (r.mode == "compare") {
          r.detail = compare_tokens(read_file(root / c["control"].get<std::string>()), out.str(),
                                    c.value("tolerance", false) == true);
        } else if (r.mode == "reference") {
          outputs[r.name] = out.str();
        } else if (r.mode == "differential") {
          auto it = outputs.find(c["compareWithCase"].get<std::string>());
          r.detail = it == outputs.end() ? "reference case did not run"
                                         : compare_tokens(it->second, out.str(), false);
        } else if (r.mode == "keys") {
          std::vector<std::string> expected = string_list(c["expectedKeys"]);
          std::vector<std::string> actual = tokens_of(out.str());
          std::sort(expected.begin(), expected.end());
          std::sort(actual.begin(), actual.end());
          if (expected != actual) {
            r.detail = "keys differ: expected " + std::to_string(expected.size()) + ", got " +
                       std::to_string(actual.size());
          }
        }
      }
    } catch (const std::exception& e) {
      r.detail = std::string("error: ") + e.what();
      // A composite case that joins an image deserializer to another format: not run, as above.
      r.skipped = left_out_of_build(e.what());
    }
    r.passed = r.detail.empty();
    results.push_back(r);
  }
  return results;
}

}  // namespace cntkio::conformance
