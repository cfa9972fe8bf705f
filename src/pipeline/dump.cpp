#include "pipeline/dump.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::pipeline {
namespace {

void append_number(std::string& line, double value) {
  char buffer[32];
  int n = std::snprintf(buffer, sizeof buffer, "%.6g", value);
  line.append(buffer, static_cast<size_t>(n));
}

void append_index(std::string& line, int32_t index) {
  char buffer[16];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, index);
  line.append(buffer, end);
}

void write_line(std::string& line, std::ostream& out) {
  line.push_back('\n');
  out.write(line.data(), static_cast<std::streamsize>(line.size()));
  line.clear();
}

std::string densify_refusal(const StreamInfo& stream) {
  return "Stream '" + stream.name + "' is sparse with dim " + std::to_string(stream.sample_dim()) +
         ", above the largest dim dump writes as dense rows (" + std::to_string(kMaxDensifiedDim) +
         "): write its samples as index:value entries (cntkio dump --sparse-entries), or leave it out.";
}

// Whether each column lies in a gap (Layout::is_gap), from one pass over the entries: asking is_gap for
// each column would cost columns times entries.
std::vector<char> gap_columns(const Layout& layout) {
  std::vector<char> gap(layout.num_columns(), 0);
  const auto steps = static_cast<ptrdiff_t>(layout.num_time_steps);
  for (const Layout::Entry& e : layout.entries) {
    if (!e.is_gap || e.row >= layout.num_parallel) continue;
    for (ptrdiff_t t = std::max<ptrdiff_t>(e.t_begin, 0); t < std::min(e.t_end, steps); ++t) {
      gap[static_cast<size_t>(t) * layout.num_parallel + e.row] = 1;
    }
  }
  return gap;
}

template <typename T>
void write_columns(const StreamBatch& batch, bool sparse_entries, std::ostream& out) {
  const std::vector<char> gap = gap_columns(batch.layout);
  const size_t dim = batch.info.sample_dim();
  const T* const values = batch.data<T>();
  std::string line;
  if (batch.info.storage == StorageFormat::kDense) {
    if (batch.values.size() < gap.size() * dim * sizeof(T)) {
      throw UsageError("Stream '" + batch.info.name + "' holds fewer values than its minibatch's columns");
    }
    for (size_t i = 0; i < gap.size(); ++i) {
      if (gap[i]) continue;
      for (size_t j = 0; j < dim; ++j) {
        if (j > 0) line.push_back(' ');
        append_number(line, static_cast<double>(values[i * dim + j]));
      }
      write_line(line, out);
    }
    return;
  }
  if (batch.col_starts.size() != gap.size() + 1) {
    throw UsageError("Stream '" + batch.info.name + "' holds no sparse column starts");
  }
  const size_t stored = std::min(batch.row_indices.size(), batch.values.size() / sizeof(T));
  // Dense rows of a sparse stream: its entries set into a row of zeros, which they then reset.
  std::vector<double> row(sparse_entries ? 0 : dim);
  for (size_t i = 0; i < gap.size(); ++i) {
    if (gap[i]) continue;
    const auto begin = static_cast<size_t>(batch.col_starts[i]);
    const auto end = static_cast<size_t>(batch.col_starts[i + 1]);
    if (begin > end || end > stored) {
      throw UsageError("Stream '" + batch.info.name + "' has sparse column starts outside its entries");
    }
    for (size_t k = begin; k < end; ++k) {
      if (static_cast<uint64_t>(batch.row_indices[k]) >= dim) {
        throw UsageError("Stream '" + batch.info.name + "' holds index " +
                         std::to_string(batch.row_indices[k]) + ", outside its dim " + std::to_string(dim));
      }
    }
    if (sparse_entries) {
      for (size_t k = begin; k < end; ++k) {
        if (k > begin) line.push_back(' ');
        append_index(line, batch.row_indices[k]);
        line.push_back(':');
        append_number(line, static_cast<double>(values[k]));
      }
    } else {
      for (size_t k = begin; k < end; ++k) row[static_cast<size_t>(batch.row_indices[k])] = values[k];
      for (size_t j = 0; j < dim; ++j) {
        if (j > 0) line.push_back(' ');
        append_number(line, row[j]);
      }
      for (size_t k = begin; k < end; ++k) row[static_cast<size_t>(batch.row_indices[k])] = 0.0;
    }
    write_line(line, out);
  }
}

}  // namespace

void write_stream_batch(const StreamBatch& batch, std::ostream& out, bool sparse_entries) {
  if (batch.info.storage == StorageFormat::kSparseCsc && !sparse_entries &&
      batch.info.sample_dim() > kMaxDensifiedDim) {
    throw UsageError(densify_refusal(batch.info));
  }
  if (batch.info.element_type == ElementType::kFloat) {
    write_columns<float>(batch, sparse_entries, out);
  } else {
    write_columns<double>(batch, sparse_entries, out);
  }
}

void run_dump(const DumpOptions& options, std::ostream& out) {
  Config root = Config::from_files({options.config_file}, options.overrides);
  // As CNTK's reader-test helper: every $name$ of the file must resolve, in sections not read too.
  root.validate_variables();
  Config reader = root.get_block(options.section).get_block(options.reader_section);
  std::unique_ptr<MinibatchSource> source = MinibatchSource::from_config(reader);
  // Reports what was skipped however the run ends.
  struct ReportSkips {
    const MinibatchSource& source;
    SkipReport* report;
    ~ReportSkips() {
      if (report != nullptr) *report = source.skip_report();
    }
  } report_skips{*source, options.skip_report};

  std::map<std::string, size_t> stream_index;
  for (size_t i = 0; i < source->streams().size(); ++i) stream_index[source->streams()[i].name] = i;
  std::vector<std::string> requested = options.features;
  requested.insert(requested.end(), options.labels.begin(), options.labels.end());
  if (requested.empty()) {
    for (const StreamInfo& s : source->streams()) requested.push_back(s.name);
  }
  std::vector<size_t> order;
  for (const std::string& name : requested) {
    auto it = stream_index.find(name);
    if (it == stream_index.end()) {
      std::string known;
      for (const StreamInfo& s : source->streams()) known += (known.empty() ? "" : ", ") + s.name;
      throw UsageError("The reader has no stream named '" + name + "' (its streams: " + known + ").");
    }
    order.push_back(it->second);
  }
  if (!options.keys && !options.sparse_entries) {
    for (size_t index : order) {
      const StreamInfo& stream = source->streams()[index];
      if (stream.storage == StorageFormat::kSparseCsc && stream.sample_dim() > kMaxDensifiedDim) {
        throw UsageError(densify_refusal(stream));
      }
    }
  }

  const size_t max_minibatches = options.keys ? std::numeric_limits<size_t>::max() : options.max_minibatches;
  Minibatch mb;
  for (size_t epoch = 0; epoch < options.epochs; ++epoch) {
    source->start_epoch(options.minibatch_size, epoch, options.epoch_size, options.subset, options.subsets);
    size_t written = 0;
    // CNTK's harness asks for a minibatch before it counts: with more than the cap it reads one more and
    // drops it, so an error in that minibatch (a malformed row, a check of the packer) still fails the run.
    while (source->next_minibatch(mb)) {
      if (options.shared_layout) {
        for (size_t k = 1; k < order.size(); ++k) {
          if (!(mb.streams[order[k]].layout == mb.streams[order[0]].layout)) {
            throw UsageError("Inputs '" + requested[0] + "' and '" + requested[k] +
                             "' share one dynamic axis layout, but their sequences have different lengths in "
                             "this minibatch. Read them with separate layouts (--separate-layouts).");
          }
        }
      }
      if (written == max_minibatches) break;
      if (options.keys) {
        const Layout& layout = mb.streams[order[0]].layout;
        for (const Layout::Entry& e : layout.entries) {
          if (!e.is_gap) out << mb.keys[e.sequence_index] << '\n';
        }
      } else {
        for (size_t index : order) write_stream_batch(mb.streams[index], out, options.sparse_entries);
      }
      ++written;
    }
  }
  out.flush();
}

}  // namespace cntkio::pipeline
