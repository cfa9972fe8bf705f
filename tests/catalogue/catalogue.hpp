// The malformed-input catalogue: small inputs that a reader meets in the wild (truncated downloads,
// half-written files, wrong configs, hostile bytes), each with the outcome cntkio must give: the error kind
// and its exact location, or, under maxErrors, exactly which data survives and what was counted.
//
// A case runs one action in a fresh temporary folder and turns what happened into an Outcome; the driver
// (catalogue_test.cpp) compares it field by field with the case's Expect. File paths in outcomes are
// written relative to the case's folder ("data.ctf", not "/tmp/.../data.ctf").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::catalogue {

enum class Kind { kNone, kConfig, kFormat, kIo, kUsage, kOther };
const char* to_string(Kind kind);

/// What a case's action did.
struct Outcome {
  Kind kind = Kind::kNone;
  std::string what;       ///< what() of the error
  std::string cntk_text;  ///< cntk_text() of the error
  // FormatError
  SourceLocation location;
  // ConfigError
  std::string key_path;
  std::string config_file;
  uint64_t line = 0;
  uint64_t column = 0;
  // IoError
  std::string path;
  int error_number = 0;
  // success (or the part read before a late error): the data delivered, rendered as text, and what the
  // reader counted under maxErrors
  std::string data;
  CtfErrorSummary skips;
  uint64_t sequences_dropped = 0;  ///< sequences removed by the pipeline (MinibatchSource::skip_report)
};

/// Expected skip counts and first locations under maxErrors.
struct Skips {
  uint64_t errors = 0;
  uint64_t rows = 0;
  uint64_t samples = 0;
  std::vector<std::string> first_locations;  ///< "file:line:column", in order (all of them, at most 10)
};

struct Expect {
  Kind kind = Kind::kNone;
  std::string text;  ///< must equal cntk_text() (FormatError, UsageError, other) or be found in what()
  bool text_exact = true;
  // FormatError: the whole location must be equal
  SourceLocation location;
  // ConfigError: all four must be equal
  std::string key_path;
  std::string config_file;
  uint64_t line = 0;
  uint64_t column = 0;
  // IoError
  std::string path;
  int error_number = 0;
  // success
  std::optional<std::string> data;  ///< checked when set (also on errors: the data read before it)
  std::optional<Skips> skips;       ///< checked when set
  std::optional<uint64_t> sequences_dropped;
};

/// A case: `run` gets a fresh folder (absolute path, no trailing slash) and returns what happened.
struct Case {
  std::string name;  ///< unique, [A-Za-z0-9_]
  std::function<Outcome(const std::string& dir)> run;
  Expect expect;
  /// Families (every byte value, every truncation offset) check their members themselves: `check` runs
  /// instead of the driver's comparison when set, with `run` unused.
  std::function<void(const std::string& dir)> check;
};

// ---- building expectations ----

/// FormatError at file/line/column/offset (0 = unknown) with stream and sequence key ("" = none).
Expect format_error(std::string cntk_text, std::string file, uint64_t line, uint64_t column,
                    std::optional<uint64_t> offset, std::string stream = {}, std::string key = {});
/// FormatError located by byte offset only (binary formats).
Expect format_error_at(std::string cntk_text, std::string file, uint64_t offset);
/// ConfigError whose what() holds `text`, with key path and location (file "" / 0 = unknown).
Expect config_error(std::string text, std::string key_path, std::string file, uint64_t line, uint64_t column);
/// IoError about `path` (relative to the case folder) with errno `error_number`; what() holds `text`.
Expect io_error(std::string text, std::string path, int error_number);
/// Success with this data and these counts.
Expect ok(std::string data, Skips skips = {});

// ---- running things ----

/// Runs `fn`, catching any exception into an Outcome (paths relative to `dir`).
Outcome capture(const std::string& dir, const std::function<void(Outcome&)>& fn);

/// Writes `content` to `dir/name` (creating folders) and returns the absolute path.
std::string write_file(const std::string& dir, const std::string& name, const std::string& content);

/// A CTF stream list such as "a:dense:3,b:sparse:5" (":def" after a stream sets definesMBSize, ":alias=x"
/// sets the alias).
std::vector<CtfStreamOptions> ctf_streams(const std::string& spec);

/// CTF options of a case.
struct CtfCase {
  std::string content;
  std::string streams;
  uint64_t max_errors = 0;
  bool skip_ids = false;
  bool doubles = false;
  uint64_t chunk_bytes = 32ull << 20;
  /// Set: the file is opened once with cacheIndex (which writes the index cache), this changes the cache
  /// file (its path is passed), and the file is then opened again and read with the changed cache.
  std::function<void(const std::string& cache_path)> damage_cache;
};
/// Writes data.ctf, opens it with make_ctf_deserializer and loads every chunk; data rendered as
/// "key a=[1 2][3 4] b=[0:1 3:2]; key2 ..." (one [...] per sample; sparse as index:value).
Outcome run_ctf(const std::string& dir, const CtfCase& c);
/// Renders the data of every chunk of `d`.
std::string render_all(class Deserializer& d);

/// A whole reader: `config` holds a `Train = [ reader = [...] ]` section; `files` are written first.
/// Reads one sweep with minibatches of `mb_size` samples; data rendered as the sequence keys per minibatch.
Outcome run_reader(const std::string& dir, const std::string& config,
                   const std::map<std::string, std::string>& files, size_t mb_size = 4);

// ---- the cases, by area ----
std::vector<Case> config_cases();
std::vector<Case> ctf_cases();
std::vector<Case> cbf_cases();
std::vector<Case> io_cases();
std::vector<Case> htk_cases();
std::vector<Case> image_cases();

}  // namespace cntkio::catalogue
