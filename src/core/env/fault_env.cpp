#include "core/env/fault_env.hpp"

#include <unistd.h>

#include <algorithm>

#include "cntkio/errors.hpp"

namespace cntkio::core {
namespace {

std::string range(uint64_t offset, uint64_t n) {
  return std::to_string(offset) + ".." + std::to_string(offset + n);
}

class FaultRandomAccessFile final : public RandomAccessFile {
 public:
  FaultRandomAccessFile(FaultEnv& env, std::unique_ptr<RandomAccessFile> base)
      : env_(env), base_(std::move(base)) {}
  const std::string& path() const override { return base_->path(); }
  const FileIdentity& identity() const override { return base_->identity(); }
  uint64_t current_size() const override { return base_->current_size(); }
  std::unique_ptr<FileMapping> map() const override { return env_.allow_map ? base_->map() : nullptr; }

  size_t read_at(uint64_t offset, void* buffer, size_t n) const override {
    const Fault* fault = env_.next(Fault::Op::kRead, path());
    if (fault == nullptr) return base_->read_at(offset, buffer, n);
    switch (fault->kind) {
      case Fault::Kind::kShortRead: {
        const size_t got = base_->read_at(offset, buffer, n);
        return got == 0 ? 0 : std::min(got - 1, n / 2);
      }
      case Fault::Kind::kTruncate:
        if (::truncate(path().c_str(), static_cast<off_t>(fault->truncate_to)) != 0) {
          throw IoError("FaultEnv cannot truncate", path(), errno);
        }
        return base_->read_at(offset, buffer, n);
      default:
        throw IoError("cannot read bytes " + range(offset, n) + " of input file", path(), fault->error);
    }
  }

 private:
  FaultEnv& env_;
  std::unique_ptr<RandomAccessFile> base_;
};

class FaultSequentialFile final : public SequentialFile {
 public:
  FaultSequentialFile(FaultEnv& env, std::unique_ptr<SequentialFile> base)
      : env_(env), base_(std::move(base)) {}
  const std::string& path() const override { return base_->path(); }
  size_t read(void* buffer, size_t n) override {
    const Fault* fault = env_.next(Fault::Op::kRead, path());
    if (fault != nullptr && fault->kind == Fault::Kind::kError) {
      throw IoError("cannot read bytes " + range(position_, n) + " of input file", path(), fault->error);
    }
    size_t got = base_->read(buffer, n);
    if (fault != nullptr && fault->kind == Fault::Kind::kShortRead && got > 0) got = std::min(got - 1, n / 2);
    position_ += got;
    return got;
  }
  void skip(uint64_t n) override {
    base_->skip(n);
    position_ += n;
  }

 private:
  FaultEnv& env_;
  std::unique_ptr<SequentialFile> base_;
  uint64_t position_ = 0;
};

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(FaultEnv& env, std::unique_ptr<WritableFile> base, bool durable)
      : env_(env), base_(std::move(base)), durable_(durable) {}
  const std::string& path() const override { return base_->path(); }
  const std::string& temp_path() const override { return base_->temp_path(); }
  uint64_t position() const override { return base_->position(); }
  void flush() override { base_->flush(); }
  void abandon() noexcept override { base_->abandon(); }

  void append(const void* data, size_t n) override {
    if (const Fault* fault = env_.next(Fault::Op::kWrite, path())) {
      throw IoError("cannot write bytes " + range(position(), n) + " of output file", temp_path(),
                    fault->error);
    }
    base_->append(data, n);
  }
  void write_at(uint64_t offset, const void* data, size_t n) override {
    if (const Fault* fault = env_.next(Fault::Op::kWrite, path())) {
      throw IoError("cannot write bytes " + range(offset, n) + " of output file", temp_path(), fault->error);
    }
    base_->write_at(offset, data, n);
  }
  void sync() override {
    if (const Fault* fault = env_.next(Fault::Op::kSync, path())) {
      throw IoError("cannot sync output file", temp_path(), fault->error);
    }
    base_->sync();
  }
  void commit() override {
    try {
      if (durable_) {
        sync();
      } else {
        flush();
      }
    } catch (...) {
      base_->abandon();
      throw;
    }
    const Fault* fault = env_.next(Fault::Op::kRename, path());
    if (fault == nullptr) return base_->commit();
    if (fault->kind == Fault::Kind::kCrash) {
      // The base writer removes its temporary when it is destroyed; a dead process would not: put the
      // bytes back under the temporary's name.
      const std::string temp = temp_path();
      std::string bytes(static_cast<size_t>(position()), '\0');
      {
        const auto file = env_.base().new_random_access_file(temp);
        bytes.resize(file->read_at(0, bytes.data(), bytes.size()));
      }
      base_->abandon();
      WritableFileOptions options;
      options.temp_path = temp + ".crash";
      options.durable = false;
      const auto copy = env_.base().new_writable_file(temp, options);
      copy->append(bytes.data(), bytes.size());
      copy->commit();
      throw SimulatedCrash(path());
    }
    base_->abandon();
    throw IoError("cannot rename output file to", path(), fault->error);
  }

 private:
  FaultEnv& env_;
  std::unique_ptr<WritableFile> base_;
  bool durable_;
};

}  // namespace

FaultEnv::FaultEnv(std::shared_ptr<Env> base) : base_(base ? std::move(base) : Env::default_env()) {}

FaultEnv& FaultEnv::add(const Fault& fault) {
  std::lock_guard<std::mutex> lock(mutex_);
  faults_.push_back(fault);
  seen_.push_back(0);
  return *this;
}

const Fault* FaultEnv::next(Fault::Op op, const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Fault* found = nullptr;
  // Each fault counts the operations on the paths it watches; counters_ counts them all.
  counters_[static_cast<int>(op)].fetch_add(1);
  for (size_t i = 0; i < faults_.size(); ++i) {
    Fault& f = faults_[i];
    if (f.op != op || (!f.path_contains.empty() && path.find(f.path_contains) == std::string::npos)) continue;
    const uint64_t seen = ++seen_[i];
    if (found == nullptr && seen >= f.nth && seen - f.nth < f.times) found = &f;
  }
  if (found != nullptr) fired_.fetch_add(1);
  return found;
}

std::unique_ptr<RandomAccessFile> FaultEnv::new_random_access_file(const std::string& path,
                                                                   std::string_view open_failure) {
  return std::make_unique<FaultRandomAccessFile>(*this, base_->new_random_access_file(path, open_failure));
}

std::unique_ptr<SequentialFile> FaultEnv::new_sequential_file(const std::string& path) {
  return std::make_unique<FaultSequentialFile>(*this, base_->new_sequential_file(path));
}

std::unique_ptr<WritableFile> FaultEnv::new_writable_file(const std::string& path,
                                                          const WritableFileOptions& options) {
  return std::make_unique<FaultWritableFile>(*this, base_->new_writable_file(path, options), options.durable);
}

void FaultEnv::rename_file(const std::string& from, const std::string& to) {
  if (const Fault* fault = next(Fault::Op::kRename, to)) {
    if (fault->kind == Fault::Kind::kCrash) throw SimulatedCrash(to);
    throw IoError("cannot rename '" + from + "' to", to, fault->error);
  }
  base_->rename_file(from, to);
}

void FaultEnv::sync_folder(const std::string& dir) {
  if (const Fault* fault = next(Fault::Op::kSync, dir))
    throw IoError("cannot sync the folder", dir, fault->error);
  base_->sync_folder(dir);
}

void FaultEnv::sync_storage(const std::string& path) {
  if (const Fault* fault = next(Fault::Op::kSync, path)) {
    throw IoError("cannot sync the storage of", path, fault->error);
  }
  base_->sync_storage(path);
}

}  // namespace cntkio::core
