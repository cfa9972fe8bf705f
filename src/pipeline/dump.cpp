#include "pipeline/dump.hpp"

#include <cstdio>
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

}  // namespace

void write_stream_batch(const StreamBatch& batch, std::ostream& out) {
  const Layout& layout = batch.layout;
  const size_t rows = batch.info.sample_dim();
  const size_t columns = layout.num_columns();
  const bool is_float = batch.info.element_type == ElementType::kFloat;
  const bool sparse = batch.info.storage == StorageFormat::kSparseCsc;
  std::vector<double> column(rows);
  std::string line;
  for (size_t i = 0; i < columns; ++i) {
    const size_t s = i % layout.num_parallel;
    const size_t t = i / layout.num_parallel;
    if (layout.is_gap(s, t)) continue;
    if (sparse) {
      std::fill(column.begin(), column.end(), 0.0);
      for (int32_t k = batch.col_starts[i]; k < batch.col_starts[i + 1]; ++k) {
        const size_t row = static_cast<size_t>(batch.row_indices[static_cast<size_t>(k)]);
        column[row] = is_float ? static_cast<double>(batch.data<float>()[k]) : batch.data<double>()[k];
      }
    } else {
      for (size_t j = 0; j < rows; ++j) {
        column[j] = is_float ? static_cast<double>(batch.data<float>()[i * rows + j])
                             : batch.data<double>()[i * rows + j];
      }
    }
    line.clear();
    for (size_t j = 0; j < rows; ++j) {
      if (j > 0) line.push_back(' ');
      append_number(line, column[j]);
    }
    line.push_back('\n');
    out.write(line.data(), static_cast<std::streamsize>(line.size()));
  }
}

void run_dump(const DumpOptions& options, std::ostream& out) {
  Config root = Config::from_files({options.config_file}, options.overrides);
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

  Minibatch mb;
  for (size_t epoch = 0; epoch < options.epochs; ++epoch) {
    source->start_epoch(options.minibatch_size, epoch, options.epoch_size, options.subset, options.subsets);
    size_t written = 0;
    while (written < options.max_minibatches && source->next_minibatch(mb)) {
      if (options.shared_layout) {
        for (size_t k = 1; k < order.size(); ++k) {
          if (!(mb.streams[order[k]].layout == mb.streams[order[0]].layout)) {
            throw UsageError("Inputs '" + requested[0] + "' and '" + requested[k] +
                             "' share one dynamic axis layout, but their sequences have different lengths in "
                             "this minibatch. Read them with separate layouts (--separate-layouts).");
          }
        }
      }
      if (options.keys) {
        const Layout& layout = mb.streams[order[0]].layout;
        for (const Layout::Entry& e : layout.entries) {
          if (!e.is_gap) out << mb.keys[e.sequence_index] << '\n';
        }
      } else {
        for (size_t index : order) write_stream_batch(mb.streams[index], out);
      }
      ++written;
    }
  }
  out.flush();
}

}  // namespace cntkio::pipeline
