// Helpers of the fault-injection suite (tests/fault/): read a whole reader into text, run it under a
// FaultEnv, and check what every fault must give (docs/robustness.md, "Faults of the storage").
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "core/env/fault_env.hpp"
#include "pipeline/dump.hpp"

namespace cntkio::fault_test {

using core::Fault;
using core::FaultEnv;

/// Every minibatch of one sweep of the reader `reader_text` (a config holding `reader = [...]`), as text.
inline std::string read_all(const std::string& reader_text) {
  auto source = MinibatchSource::from_config(Config::from_text(reader_text).get_block("reader"));
  std::ostringstream out;
  source->start_epoch(7, 0, kFullSweep);
  Minibatch batch;
  while (source->next_minibatch(batch)) {
    for (const StreamBatch& s : batch.streams) {
      out << s.info.name << '\n';
      pipeline::write_stream_batch(s, out);
    }
  }
  return out.str();
}

/// A fault of `kind` on the nth `op` of the files whose path holds `path_contains`.
inline Fault fault(Fault::Op op, Fault::Kind kind, uint64_t nth, const std::string& path_contains,
                   int error = EIO) {
  Fault f;
  f.op = op;
  f.kind = kind;
  f.nth = nth;
  f.error = error;
  f.path_contains = path_contains;
  return f;
}

/// What a run under a fault gave.
struct Outcome {
  bool fired = false;         ///< the fault happened
  bool io_error = false;      ///< the run ended with an IoError
  bool format_error = false;  ///< the run ended with a FormatError (a file cut before it was opened again)
  std::string what;           ///< its text
  std::string path;           ///< its path
  int error_number = 0;       ///< its errno
  std::string data;           ///< what was read when it ran to the end
};

/// Runs `body` (which returns the data it read) with `f` injected; any other exception fails the test.
template <typename Body>
Outcome run_with(const Fault& f, Body body) {
  auto env = std::make_shared<FaultEnv>();
  env->add(f);
  Outcome out;
  {
    ScopedEnv scoped(env);
    try {
      out.data = body();
    } catch (const IoError& e) {
      out.io_error = true;
      out.what = e.what();
      out.path = e.path();
      out.error_number = e.error_number();
    } catch (const FormatError& e) {
      out.format_error = true;
      out.what = e.what();
      out.path = e.location().file;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an IoError: " << e.what();
    }
  }
  out.fired = env->fired() > 0;
  return out;
}

/// Fails the read of `file` at each of its reads in turn (the 1st, the 2nd, ... until a run reads it all
/// without the fault firing) with `kind` and `error`; each run must end in an IoError naming `file` with
/// `expect_in_what` in its text, and a clean run afterwards must read `clean` again. Returns the runs made.
template <typename Body>
int sweep_read_faults(Fault::Kind kind, int error, const std::string& file, const std::string& expect_in_what,
                      const std::string& clean, Body body) {
  int n = 1;
  for (; n <= 64; ++n) {
    const Outcome o = run_with(fault(Fault::Op::kRead, kind, static_cast<uint64_t>(n), file, error), body);
    if (!o.fired) {
      EXPECT_FALSE(o.io_error) << o.what;
      EXPECT_EQ(o.data, clean);
      break;
    }
    EXPECT_FALSE(o.format_error) << o.what;
    EXPECT_TRUE(o.io_error) << "read " << n << " of " << file << " failed and the reader went on";
    if (!o.io_error) continue;
    EXPECT_EQ(o.path, file) << o.what;
    EXPECT_NE(o.what.find(expect_in_what), std::string::npos) << o.what;
    if (kind == Fault::Kind::kError) {
      EXPECT_EQ(o.error_number, error) << o.what;
    }
    EXPECT_EQ(body(), clean) << "the clean run after fault " << n;
  }
  EXPECT_GT(n, 1) << "no read of " << file << " went through the Env";
  EXPECT_LE(n, 64);
  return n - 1;
}

/// Files in `dir` whose name holds `part` (temporaries left behind).
inline int files_holding(const std::string& dir, const std::string& part) {
  int count = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().filename().string().find(part) != std::string::npos) ++count;
  }
  return count;
}

}  // namespace cntkio::fault_test
