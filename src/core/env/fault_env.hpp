// A fault-injecting Env for tests (LevelDB's idea): it wraps another Env and fails, on a script, the Nth
// read, write, sync or rename with an errno (EIO, ENOSPC), makes a read short, truncates a file under its
// reader, or "crashes" a writer between its write and its rename. Install it for the process with
// cntkio::ScopedEnv; every file cntkio opens then goes through it.
//
// Counting: each operation kind has one counter for the whole FaultEnv, counting the operations on paths
// that contain the fault's `path_contains` (all paths when empty); a fault fires on operations nth ..
// nth + times - 1 of its kind. Reads are RandomAccessFile::read_at and SequentialFile::read; writes are
// WritableFile::append and write_at; syncs are WritableFile::sync, the sync of commit(), Env::sync_folder and
// Env::sync_storage; renames are
// commit()'s rename and Env::rename_file. Files opened through a FaultEnv are never mapped (map() gives
// nullptr) unless `allow_map`, so that readers read them with read_at, where the faults are.
//
// Thread-safety: as an Env. Faults are added before the reading starts (add() takes a lock; counters are
// atomic).
#pragma once

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cntkio/env.hpp"

namespace cntkio::core {

/// What a FaultEnv does to an operation.
struct Fault {
  enum class Op { kRead, kWrite, kSync, kRename };
  enum class Kind {
    kError,      ///< the operation fails with `error` (IoError)
    kShortRead,  ///< a read returns half of what was asked (at least one byte less), as a file cut there
    kTruncate,   ///< the file is truncated to `truncate_to` bytes, then the read runs
    kCrash,      ///< commit() stops after writing and syncing, before the rename: SimulatedCrash is thrown
                 ///< and the temporary is left as a dead process leaves it (op must be kRename)
  };
  Op op = Op::kRead;
  Kind kind = Kind::kError;
  uint64_t nth = 1;           ///< the first operation (1-based) of the kind that fails
  uint64_t times = 1;         ///< how many consecutive operations fail (UINT64_MAX: all from nth on)
  int error = EIO;            ///< kError: the errno
  uint64_t truncate_to = 0;   ///< kTruncate: the size the file is cut to
  std::string path_contains;  ///< only paths holding this text count (empty: all)
};

/// Thrown by a FaultEnv's "crash": the writer stopped as if its process had died. Not a cntkio::Error, so
/// that nothing in cntkio handles it as a failure it could recover from.
class SimulatedCrash : public std::runtime_error {
 public:
  explicit SimulatedCrash(const std::string& path)
      : std::runtime_error("simulated crash before renaming '" + path + "'") {}
};

class FaultEnv final : public Env {
 public:
  /// Wraps `base` (nullptr: Env::default_env()).
  explicit FaultEnv(std::shared_ptr<Env> base = nullptr);

  /// Adds a fault to the script.
  FaultEnv& add(const Fault& fault);
  /// Operations of `op` counted so far (those on paths matching no filter included).
  uint64_t count(Fault::Op op) const { return counters_[static_cast<int>(op)].load(); }
  /// Faults that fired so far.
  uint64_t fired() const { return fired_.load(); }
  /// Whether mapped reads are allowed (they bypass the read faults).
  bool allow_map = false;

  std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path,
                                                           std::string_view open_failure) override;
  std::unique_ptr<SequentialFile> new_sequential_file(const std::string& path) override;
  std::unique_ptr<WritableFile> new_writable_file(const std::string& path,
                                                  const WritableFileOptions& options) override;
  bool file_exists(const std::string& path) override { return base_->file_exists(path); }
  FileIdentity file_identity(const std::string& path) override { return base_->file_identity(path); }
  std::vector<std::string> list_dir(const std::string& dir) override { return base_->list_dir(dir); }
  void remove_file(const std::string& path) override { base_->remove_file(path); }
  void rename_file(const std::string& from, const std::string& to) override;
  bool create_dir(const std::string& dir) override { return base_->create_dir(dir); }
  void remove_dir(const std::string& dir) override { base_->remove_dir(dir); }
  bool is_dir(const std::string& path) override { return base_->is_dir(path); }
  void sync_folder(const std::string& dir) override;
  void sync_storage(const std::string& path) override;

  /// The fault that applies to this operation of `op` on `path`, counting it; nullptr when none.
  const Fault* next(Fault::Op op, const std::string& path);
  Env& base() { return *base_; }

 private:
  std::shared_ptr<Env> base_;
  mutable std::mutex mutex_;
  std::vector<Fault> faults_;
  std::vector<uint64_t> seen_;  // per fault: the operations it watched so far
  std::atomic<uint64_t> counters_[4] = {};
  std::atomic<uint64_t> fired_{0};
};

}  // namespace cntkio::core
