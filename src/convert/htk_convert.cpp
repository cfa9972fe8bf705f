// convert_to_htk: any deserializer's dense stream -> HTK feature files + SCP (cntkio convert-htk).
#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_set>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/htk.hpp"
#include "core/output_file.hpp"
#include "core/output_path.hpp"
#include "formats/htk/htk_file.hpp"

namespace cntkio {
namespace {

namespace fs = std::filesystem;

// Calls `visit(key, frames, count)` for every sequence of `stream`, in chunk order, with float frames.
template <typename Visit>
void for_each_sequence(Deserializer& source, size_t stream, Visit&& visit) {
  const StreamInfo& info = source.streams().at(stream);
  const size_t dim = info.sample_dim();
  std::vector<SequenceInfo> infos;
  std::vector<SequenceData> data;
  std::vector<float> frames;
  for (const ChunkInfo& c : source.chunk_infos()) {
    infos.clear();
    source.sequence_infos_for_chunk(c.id, infos);
    if (infos.empty()) continue;
    const ChunkPtr chunk = source.load_chunk(c.id);
    for (const SequenceInfo& s : infos) {
      data.clear();
      chunk->get_sequence(s.index_in_chunk, data);
      const SequenceData& d = data.at(stream);
      const std::string key = source.key_to_string(s.key);
      if (!d.valid || d.number_of_samples == 0) {
        throw UsageError("Sequence '" + key + "' has no samples in stream '" + info.name +
                         "'; an HTK utterance needs at least one frame.");
      }
      const size_t values = static_cast<size_t>(d.number_of_samples) * dim;
      frames.resize(values);
      if (info.element_type == ElementType::kFloat) {
        std::copy_n(static_cast<const float*>(d.values), values, frames.begin());
      } else {
        const auto* v = static_cast<const double*>(d.values);
        for (size_t i = 0; i < values; ++i) frames[i] = static_cast<float>(v[i]);
      }
      visit(key, frames.data(), static_cast<size_t>(d.number_of_samples));
    }
  }
}

// The feature files of a conversion, written first into a fresh folder of its own inside the output folder
// and moved to their places only once every one of them is complete. Until commit() succeeds, destroying it
// removes that folder and every folder it created, so a failed conversion leaves nothing behind, and it
// never removes or changes a file that was there before.
class StagedFiles {
 public:
  explicit StagedFiles(fs::path dir) : dir_(std::move(dir)) {
    create_folders(dir_);
    // A fresh folder of this conversion's own: another one's (running, or dead) is never touched.
    std::random_device random;
    const char* letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100 && staging_.empty(); ++attempt) {
      std::string name = ".cntkio-partial-";
      for (int i = 0; i < 6; ++i) name += letters[random() % 62];
      const fs::path candidate = dir_ / name;
      try {
        if (env_.create_dir(candidate.string())) staging_ = candidate;
      } catch (const IoError& e) {
        if (e.error_number() != EEXIST)
          throw IoError("cannot create a folder in", dir_.string(), e.error_number());
      }
    }
    if (staging_.empty()) throw IoError("cannot create a folder in", dir_.string(), EEXIST);
  }
  ~StagedFiles() {
    if (!committed_) roll_back();
  }
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  /// Where to write the file that commit() moves to `dir/relative`.
  fs::path stage(const fs::path& relative) {
    const fs::path staged = staging_ / relative;
    std::vector<fs::path> missing;
    for (fs::path p = staged.parent_path(); p != staging_ && !env_.is_dir(p.string()); p = p.parent_path()) {
      missing.push_back(p);
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      try {
        env_.create_dir(it->string());
      } catch (const IoError& e) {
        throw IoError("cannot create output folder", it->string(), e.error_number());
      }
    }
    files_.push_back(relative);
    return staged;
  }

  /// Moves every staged file into place (creating its folders), then calls `finish` (the SCP's rename).
  /// `before_replacing` runs before the first move when a move replaces an existing file (the caller removes
  /// the list that names the old files: interrupted midway, no list names a mix of old and new files).
  /// The staged files were written without a sync each: one sync of their storage makes them durable before
  /// they are moved, and one sync of each folder they are moved to makes the moves durable.
  void commit(const std::function<void()>& finish, const std::function<void()>& before_replacing) {
    // Everything that can fail without touching an existing file comes first: the folders, and targets that
    // a file cannot replace.
    for (const fs::path& relative : files_) {
      const fs::path target = dir_ / relative;
      create_folders(target.parent_path());
      if (env_.is_dir(target.string())) {
        throw IoError("cannot replace a folder with a feature file", target.string(), EISDIR);
      }
    }
    Env& env = env_;
    env.sync_storage(staging_.string());
    for (const fs::path& relative : files_) {
      if (env.file_exists((dir_ / relative).string())) {
        before_replacing();
        break;
      }
    }
    std::set<std::string> folders;
    for (const fs::path& relative : files_) {
      const fs::path target = dir_ / relative;
      folders.insert(target.parent_path().string());
      const bool existed = env.file_exists(target.string());
      try {
        env.rename_file((staging_ / relative).string(), target.string());
      } catch (const IoError& e) {
        throw IoError("cannot move a feature file into place", target.string(), e.error_number());
      }
      if (!existed) moved_.push_back(target);
    }
    for (const std::string& folder : folders) env.sync_folder(folder);
    finish();
    committed_ = true;
    remove_tree(staging_);  // only its (now empty) folders are left
  }

 private:
  // Creates `dir` and its missing parents, remembering which it created.
  void create_folders(const fs::path& dir) {
    std::vector<fs::path> missing;
    for (fs::path p = dir; !p.empty() && !env_.file_exists(p.string()); p = p.parent_path()) {
      missing.push_back(p);
      if (p == p.parent_path()) break;
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
      bool created = false;
      try {
        created = env_.create_dir(it->string());
      } catch (const IoError& e) {
        throw IoError("cannot create output folder", it->string(), e.error_number());
      }
      if (created) created_.push_back(*it);  // else another process made it meanwhile: not ours
    }
  }

  // Removes `dir` and everything in it (this conversion's staging folder only). Never throws.
  void remove_tree(const fs::path& dir) noexcept {
    try {
      for (const std::string& name : env_.list_dir(dir.string())) {
        const fs::path entry = dir / name;
        if (env_.is_dir(entry.string())) {
          remove_tree(entry);
        } else {
          env_.remove_file(entry.string());
        }
      }
      env_.remove_dir(dir.string());
    } catch (const Error&) {
      // what cannot be removed stays; the conversion's outcome does not depend on it
    }
  }

  void roll_back() noexcept {
    if (!staging_.empty()) remove_tree(staging_);
    for (const fs::path& file : moved_) {
      try {
        env_.remove_file(file.string());
      } catch (const Error&) {
        // already gone: nothing to undo
      }
    }
    // Newest first, and only while empty: what another process put there stays.
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
      try {
        env_.remove_dir(it->string());
      } catch (const Error&) {
        // not empty (another process's files) or gone
      }
    }
  }

  std::shared_ptr<Env> env_owner_ = Env::current();  // the Env of the whole conversion
  Env& env_ = *env_owner_;
  fs::path dir_;
  fs::path staging_;
  std::vector<fs::path> files_;    // relative to dir_ and to staging_
  std::vector<fs::path> created_;  // folders this conversion created, parents first
  std::vector<fs::path> moved_;    // files moved into place where none was before
  bool committed_ = false;
};

// HTK stores the period as a signed 32-bit count, and readers (CNTK's and cntkio's) take the byte order from
// it: a period whose byte reversal is smaller is read as big-endian. A period the reader would misread is
// refused here rather than written into files that read back wrong.
void check_sample_period(uint32_t period, bool big_endian) {
  if (period == 0 || period > 0x7FFFFFFFu) {
    throw UsageError("The HTK frame period " + std::to_string(period) +
                     " is out of range: it must be 1 to 2147483647 (100 ns units).");
  }
  const uint32_t reversed = __builtin_bswap32(period);
  const bool read_back_right = big_endian ? period < reversed : reversed >= period;
  if (!read_back_right) {
    throw UsageError("The HTK frame period " + std::to_string(period) + " cannot be written " +
                     (big_endian ? "big" : "little") +
                     "-endian: HTK readers guess the byte order from the period and would read these files "
                     "the other way round. Write them " +
                     (big_endian ? "little" : "big") + "-endian or choose another period.");
  }
}

void check_key(const std::string& key) {
  bool bad = key.empty() || key.find_first_of(std::string_view("=\r\n\0", 4)) != std::string::npos ||
             key.find("...") != std::string::npos || key.front() == '/';
  for (const auto& part : fs::path(key)) bad = bad || part == "..";
  if (bad) {
    throw UsageError(
        "Sequence key '" + key +
        "' cannot be written to an SCP file (it is empty, absolute, or holds '=', '...', '..', a NUL byte "
        "or a line break).");
  }
}

// The SCP spelling of `file`: `.../relative` below the SCP's directory, else relative to the working
// directory (SCP without a directory), else absolute.
std::string scp_path_of(const fs::path& file, const std::string& scp_file) {
  const fs::path absolute = fs::absolute(file).lexically_normal();
  const fs::path scp_dir = fs::path(scp_file).parent_path();
  const fs::path base = scp_dir.empty() ? fs::current_path() : fs::absolute(scp_dir).lexically_normal();
  const fs::path relative = absolute.lexically_relative(base);
  if (!relative.empty() && *relative.begin() != "..") {
    return scp_dir.empty() ? relative.generic_string() : ".../" + relative.generic_string();
  }
  return absolute.generic_string();
}

}  // namespace

HtkConvertResult convert_to_htk(Deserializer& source, size_t stream, const HtkConvertOptions& options) {
  if (stream >= source.streams().size()) {
    throw UsageError("convert_to_htk: the source has " + std::to_string(source.streams().size()) +
                     " streams; " + std::to_string(stream) + " does not exist.");
  }
  const StreamInfo& info = source.streams()[stream];
  if (info.storage != StorageFormat::kDense) {
    throw UsageError("Stream '" + info.name + "' is sparse; HTK feature files hold dense frames only.");
  }
  if (options.scp_file.empty()) throw UsageError("convert_to_htk needs an SCP file name.");
  if (options.extension.empty() ||
      options.extension.find_first_of(std::string_view("./=[\r\n\0", 8)) != std::string::npos) {
    throw UsageError("The SCP extension '" + options.extension +
                     "' must be non-empty, without '.', '/', '=', '[', a line end or a NUL byte.");
  }
  check_sample_period(options.write.sample_period, options.write.big_endian);
  const size_t dim = info.sample_dim();
  const fs::path dir =
      options.output_dir.empty() ? fs::path(options.scp_file + ".d") : fs::path(options.output_dir);
  if (dir.string().find('[') != std::string::npos) {
    throw UsageError("The output folder '" + dir.string() + "' holds '[', which an SCP line cannot carry.");
  }
  if (dir.string().find("...") != std::string::npos) {  // a reader expands it to the SCP's folder
    throw UsageError("The output folder '" + dir.string() +
                     "' holds '...', which readers of an SCP line replace by the SCP's folder.");
  }
  core::check_output_name(options.scp_file);
  core::check_output_name(dir.string());
  core::check_output_path(options.scp_file);
  // The feature files are staged until all are written; the SCP (in a folder that may have to be created
  // with theirs) is written next to its path and renamed into place last.
  StagedFiles staged(dir);
  core::OutputFile scp_out(options.scp_file);

  HtkConvertResult result;
  std::string scp;
  // The HTK reader drops every utterance whose key repeats (and one file per key would be overwritten).
  std::unordered_set<std::string> keys;
  auto check_unique = [&keys](const std::string& key) {
    if (!keys.insert(key).second) {
      throw UsageError(
          "Sequence key '" + key +
          "' appears twice in the input: an SCP list needs distinct keys (HTKFeatureDeserializer "
          "drops every utterance whose key repeats). Renumber the sequences first.");
    }
  };
  auto add_line = [&](const std::string& key, const fs::path& file, uint64_t first, uint64_t count) {
    scp += key + "." + options.extension + "=" + scp_path_of(file, options.scp_file) + "[" +
           std::to_string(first) + "," + std::to_string(first + count - 1) + "]\n";
    ++result.utterances;
    result.frames += count;
  };

  if (options.archive) {
    const fs::path file = dir / "features.htk";
    const fs::path staged_file = staged.stage("features.htk");
    std::vector<float> a, b;
    if (options.write
            .compressed) {  // one pair of A/B vectors for the whole archive: a first pass for the range
      std::vector<float> lo(dim, std::numeric_limits<float>::infinity());
      std::vector<float> hi(dim, -std::numeric_limits<float>::infinity());
      for_each_sequence(source, stream, [&](const std::string&, const float* frames, size_t count) {
        htk::widen_range(frames, count, dim, lo, hi);
      });
      htk::compression_vectors(lo, hi, a, b);
    }
    htk::HtkWriter writer(staged_file.string(), dim, options.write, std::move(a), std::move(b), false);
    for_each_sequence(source, stream, [&](const std::string& key, const float* frames, size_t count) {
      check_key(key);
      check_unique(key);
      const uint64_t first = writer.frames();
      writer.append(frames, count);
      add_line(key, file, first, count);
    });
    writer.finish();
  } else {
    for_each_sequence(source, stream, [&](const std::string& key, const float* frames, size_t count) {
      check_key(key);
      check_unique(key);
      const fs::path file = dir / (key + ".htk");
      htk::write_file(staged.stage(key + ".htk").string(), frames, count, dim, options.write, false);
      add_line(key, file, 0, count);
    });
  }
  scp_out.write(scp.data(), scp.size());
  scp_out.flush();
  const std::shared_ptr<Env> env_owner = Env::current();
  Env& env = *env_owner;
  staged.commit([&scp_out] { scp_out.commit(); },
                [&env, &options] {
                  // The old list goes first: a run stopped while the files are moved leaves no list that
                  // names old and new files together (reading then fails, it does not mix them).
                  if (env.file_exists(options.scp_file)) {
                    env.remove_file(options.scp_file);
                    env.sync_folder(fs::path(options.scp_file).parent_path().empty()
                                        ? std::string(".")
                                        : fs::path(options.scp_file).parent_path().string());
                  }
                });
  return result;
}

}  // namespace cntkio
