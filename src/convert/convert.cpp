// Conversions between CTF, CBF and legacy CBF v1: read with a deserializer, write with CbfWriter/CtfWriter.
#include "cntkio/convert.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cntkio/ctf.hpp"
#include "cntkio/errors.hpp"
#include "core/text.hpp"

namespace cntkio {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

void default_log(std::string_view line) {
  std::cerr << line << '\n';
}

// Writes every sequence of `source`, restricted to the streams `selected` (indices into its streams).
ConvertSummary run(Deserializer& source, const std::vector<size_t>& selected, const std::string& output,
                   const ConvertOptions& options) {
  const auto log = options.log ? options.log : std::function<void(std::string_view)>(default_log);
  const std::vector<StreamInfo>& streams = source.streams();
  std::vector<ElementType> in_types;
  std::vector<ElementType> out_types;
  for (size_t index : selected) {
    in_types.push_back(streams[index].element_type);
    out_types.push_back(options.element_type.value_or(streams[index].element_type));
  }
  std::unique_ptr<CbfWriter> cbf;
  std::unique_ptr<CtfWriter> ctf;
  if (options.to == DataFormat::kCtf) {
    std::vector<CtfWriterStream> out;
    for (size_t index : selected) {
      out.push_back(
          CtfWriterStream{streams[index].name, streams[index].storage, streams[index].sample_dim()});
    }
    ctf = std::make_unique<CtfWriter>(output, std::move(out));
  } else {
    std::vector<CbfWriterStream> out;
    for (size_t i = 0; i < selected.size(); ++i) {
      const StreamInfo& s = streams[selected[i]];
      out.push_back(CbfWriterStream{s.name, s.storage, out_types[i], s.sample_dim()});
    }
    CbfWriterOptions writer_options;
    writer_options.layout = options.to == DataFormat::kCbf ? CbfLayout::kCurrent : CbfLayout::kLegacyV1;
    writer_options.chunk_size_in_bytes = options.chunk_size_in_bytes;
    cbf = std::make_unique<CbfWriter>(output, std::move(out), writer_options);
  }

  const std::vector<ChunkInfo> chunks = source.chunk_infos();
  uint64_t total = 0;
  for (const ChunkInfo& c : chunks) total += c.number_of_sequences;
  ConvertSummary summary;
  uint64_t length_differs = 0;
  std::vector<SequenceInfo> infos;
  std::vector<SequenceData> all;
  std::vector<SequenceData> data(selected.size());
  for (const ChunkInfo& c : chunks) {
    infos.clear();
    source.sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = source.load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      all.clear();
      chunk->get_sequence(info.index_in_chunk, all);
      uint32_t longest = 0;
      for (size_t i = 0; i < selected.size(); ++i) {
        data[i] = all[selected[i]];
        longest = std::max(longest, data[i].number_of_samples);
      }
      // The scheduling length counts samples of the streams written: a longer one (a stream left out held
      // them) is cut to the longest written stream, which a reader requires.
      const uint32_t length = std::min(info.number_of_samples, longest);
      try {
        if (ctf) {
          std::string id = source.key_to_string(info.key);
          if (!all_digits(id)) id = std::to_string(summary.sequences);
          ctf->add_sequence(id, data, in_types);
          if (info.number_of_samples != longest) ++length_differs;
        } else {
          cbf->add_sequence(data, in_types, length);
        }
      } catch (const UsageError& e) {  // what the output cannot hold: say which input sequence it is
        SourceLocation where = source.sequence_location(info.key);
        if (where.sequence_key.empty()) where.sequence_key = source.key_to_string(info.key);
        throw UsageError(e.cntk_text(), where.describe() + " (writing '" + output + "')");
      }
      ++summary.sequences;
      summary.samples += ctf ? info.number_of_samples : length;
    }
    if (options.progress) options.progress(summary.sequences, total);
  }
  if (ctf) {
    ctf->finish();
    summary.bytes = ctf->bytes_written();
    summary.inexact_values = ctf->inexact_values();
    if (length_differs > 0) {
      log("note: " + std::to_string(length_differs) +
          " sequence(s) have a scheduling length different from their longest stream; CTF stores only the "
          "rows, "
          "so reading the output schedules them by their longest stream.");
    }
    if (summary.inexact_values > 0) {
      log("warning: " + std::to_string(summary.inexact_values) +
          " value(s) have no decimal spelling that CNTK's CTF number parser reads back exactly; they were "
          "written "
          "with 17 significant digits and read back within an ulp or two.");
    }
  } else {
    cbf->finish();
    summary.bytes = cbf->bytes_written();
    summary.chunks = cbf->chunks();
    summary.overflowed_values = cbf->overflowed_values();
    if (summary.overflowed_values > 0) {
      log("warning: " + std::to_string(summary.overflowed_values) +
          " double value(s) lie beyond float's range (about 3.4e38) and were written as infinity; convert "
          "with --precision double to keep them.");
    }
  }
  source.add_skips(summary.skipped);  // not written, so the caller must be told
  return summary;
}

}  // namespace

const char* to_string(DataFormat format) {
  switch (format) {
    case DataFormat::kCtf:
      return "ctf";
    case DataFormat::kCbf:
      return "cbf";
    case DataFormat::kCbfLegacy:
      return "cbf1";
  }
  return "?";
}

std::optional<DataFormat> parse_data_format(std::string_view text) {
  const std::string lower = core::to_lower(text);
  if (lower == "ctf") return DataFormat::kCtf;
  if (lower == "cbf") return DataFormat::kCbf;
  if (lower == "cbf1") return DataFormat::kCbfLegacy;
  return std::nullopt;
}

DataFormat detect_data_format(const std::string& path) {
  const std::optional<CbfLayout> layout = detect_cbf_layout(path);
  if (!layout) return DataFormat::kCtf;
  return *layout == CbfLayout::kCurrent ? DataFormat::kCbf : DataFormat::kCbfLegacy;
}

DataFormat data_format_for_output(const std::string& path) {
  const size_t dot = path.find_last_of('.');
  const size_t slash = path.find_last_of('/');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return DataFormat::kCtf;
  const std::string ext = core::to_lower(path.substr(dot + 1));
  if (ext == "bin" || ext == "cbf") return DataFormat::kCbf;
  if (ext == "cbf1") return DataFormat::kCbfLegacy;
  return DataFormat::kCtf;
}

ConvertStream parse_convert_stream(std::string_view spec) {
  std::vector<std::string> fields;
  size_t begin = 0;
  while (true) {
    const size_t colon = spec.find(':', begin);
    fields.emplace_back(
        spec.substr(begin, colon == std::string_view::npos ? std::string_view::npos : colon - begin));
    if (colon == std::string_view::npos) break;
    begin = colon + 1;
  }
  const std::string quoted = "'" + std::string(spec) + "'";
  if (fields.size() == 3 || fields.size() > 4) {
    throw UsageError("Stream " + quoted + " must be name, name:alias or name:alias:dim:dense|sparse.");
  }
  ConvertStream s;
  s.name = fields[0];
  if (s.name.empty()) throw UsageError("Stream " + quoted + " has no name.");
  s.alias = fields.size() > 1 && !fields[1].empty() ? fields[1] : s.name;
  if (fields.size() == 4) {
    if (!fields[2].empty()) {
      if (fields[2].find_first_not_of("0123456789") != std::string::npos || fields[2].size() > 19) {
        throw UsageError("Stream " + quoted + " has dimension '" + fields[2] +
                         "'; expected a positive integer.");
      }
      s.dim = std::stoull(fields[2]);
      if (s.dim == 0) throw UsageError("Stream " + quoted + " has dimension 0.");
    }
    const std::string format = core::to_lower(fields[3]);
    if (format == "dense") {
      s.storage = StorageFormat::kDense;
    } else if (format == "sparse") {
      s.storage = StorageFormat::kSparseCsc;
    } else if (!format.empty()) {
      throw UsageError("Stream " + quoted + " has format '" + fields[3] + "'; expected dense or sparse.");
    }
  }
  return s;
}

ConvertSummary convert_file(const std::string& input, DataFormat from, const std::string& output,
                            const ConvertOptions& options) {
  const auto log = options.log ? options.log : std::function<void(std::string_view)>(default_log);
  for (size_t i = 0; i < options.streams.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (options.streams[k].name == options.streams[i].name) {
        throw UsageError("Two streams are named '" + options.streams[i].name +
                         "': the output's streams need distinct names (a reader refuses the file).");
      }
    }
  }
  std::shared_ptr<Deserializer> source;
  std::vector<size_t> selected;
  if (from == DataFormat::kCtf) {
    if (options.streams.empty()) {
      throw UsageError(
          "Converting the CTF file '" + input +
          "' needs its streams: give --stream name:alias:dim:dense|sparse, or --config and --section.");
    }
    CtfOptions ctf;
    ctf.file = input;
    ctf.element_type = options.element_type.value_or(ElementType::kFloat);
    ctf.log_sink = [log](int, std::string_view line) { log(line); };
    for (const ConvertStream& s : options.streams) {
      if (s.dim == 0 || !s.storage) {
        throw UsageError("Stream '" + s.name +
                         "' of the CTF input needs a dimension and a format (name:alias:dim:dense|sparse).");
      }
      CtfStreamOptions o;
      o.name = s.name;
      o.alias = s.alias.empty() ? s.name : s.alias;
      o.dim = s.dim;
      o.storage = *s.storage;
      ctf.streams.push_back(std::move(o));
      selected.push_back(selected.size());
    }
    source = make_ctf_deserializer(ctf);
  } else {
    CbfOptions cbf;
    cbf.file = input;
    cbf.element_type = std::nullopt;  // keep each stream's stored type
    cbf.log_sink = [log](int, std::string_view line) { log(line); };
    for (const ConvertStream& s : options.streams)
      cbf.renames.emplace_back(s.alias.empty() ? s.name : s.alias, s.name);
    source = make_cbf_deserializer(cbf);
    const std::vector<StreamInfo>& streams = source->streams();
    if (options.streams.empty()) {
      for (size_t i = 0; i < streams.size(); ++i) selected.push_back(i);
    }
    for (const ConvertStream& s : options.streams) {
      const std::string alias = s.alias.empty() ? s.name : s.alias;
      size_t found = streams.size();
      for (size_t i = 0; i < streams.size(); ++i) {
        if (streams[i].alias == alias) found = i;
      }
      if (found == streams.size()) {
        std::string names;
        for (const StreamInfo& info : streams) names += (names.empty() ? "'" : ", '") + info.alias + "'";
        throw UsageError("'" + input + "' has no stream '" + alias + "' (it has " + names + ").");
      }
      if (std::find(selected.begin(), selected.end(), found) != selected.end()) {
        throw UsageError("Stream '" + alias + "' of '" + input + "' is selected twice.");
      }
      if (s.dim != 0 && s.dim != streams[found].sample_dim()) {
        throw UsageError("Stream '" + alias + "' of '" + input + "' has dimension " +
                         std::to_string(streams[found].sample_dim()) + ", not " + std::to_string(s.dim) +
                         ".");
      }
      if (s.storage && *s.storage != streams[found].storage) {
        throw UsageError("Stream '" + alias + "' of '" + input + "' is " + to_string(streams[found].storage) +
                         ", not " + to_string(*s.storage) + ".");
      }
      selected.push_back(found);
    }
  }
  return run(*source, selected, output, options);
}

ConvertSummary convert_deserializer(Deserializer& source, const std::string& output,
                                    const ConvertOptions& options) {
  std::vector<size_t> selected;
  for (size_t i = 0; i < source.streams().size(); ++i) selected.push_back(i);
  return run(source, selected, output, options);
}

}  // namespace cntkio
