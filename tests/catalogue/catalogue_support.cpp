// Helpers of the malformed-input catalogue: running an action, capturing its error, rendering data.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "catalogue/catalogue.hpp"
#include "cntkio/config.hpp"
#include "cntkio/minibatch_source.hpp"

namespace fs = std::filesystem;

namespace cntkio::catalogue {

const char* to_string(Kind kind) {
  switch (kind) {
    case Kind::kNone:
      return "no error";
    case Kind::kConfig:
      return "ConfigError";
    case Kind::kFormat:
      return "FormatError";
    case Kind::kIo:
      return "IoError";
    case Kind::kUsage:
      return "UsageError";
    case Kind::kOther:
      return "another exception";
  }
  return "?";
}

Expect format_error(std::string cntk_text, std::string file, uint64_t line, uint64_t column,
                    std::optional<uint64_t> offset, std::string stream, std::string key) {
  Expect e;
  e.kind = Kind::kFormat;
  e.text = std::move(cntk_text);
  e.location.file = std::move(file);
  if (line != 0) e.location.line = line;
  if (column != 0) e.location.column = column;
  e.location.byte_offset = offset;
  e.location.stream = std::move(stream);
  e.location.sequence_key = std::move(key);
  return e;
}

Expect format_error_at(std::string cntk_text, std::string file, uint64_t offset) {
  return format_error(std::move(cntk_text), std::move(file), 0, 0, offset);
}

Expect config_error(std::string text, std::string key_path, std::string file, uint64_t line,
                    uint64_t column) {
  Expect e;
  e.kind = Kind::kConfig;
  e.text = std::move(text);
  e.text_exact = false;
  e.key_path = std::move(key_path);
  e.config_file = std::move(file);
  e.line = line;
  e.column = column;
  return e;
}

Expect io_error(std::string text, std::string path, int error_number) {
  Expect e;
  e.kind = Kind::kIo;
  e.text = std::move(text);
  e.text_exact = false;
  e.path = std::move(path);
  e.error_number = error_number;
  return e;
}

Expect ok(std::string data, Skips skips) {
  Expect e;
  e.data = std::move(data);
  e.skips = std::move(skips);
  return e;
}

namespace {

// Removes "<dir>/" from every occurrence in `text`.
std::string relative(std::string text, const std::string& dir) {
  const std::string prefix = dir + "/";
  for (size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) {
    text.erase(at, prefix.size());
  }
  return text;
}

}  // namespace

Outcome capture(const std::string& dir, const std::function<void(Outcome&)>& fn) {
  Outcome o;
  try {
    fn(o);
  } catch (const ConfigError& e) {
    o.kind = Kind::kConfig;
    o.what = e.what();
    o.cntk_text = e.cntk_text();
    o.key_path = e.key_path();
    o.config_file = e.file();
    o.line = e.line();
    o.column = e.column();
  } catch (const FormatError& e) {
    o.kind = Kind::kFormat;
    o.what = e.what();
    o.cntk_text = e.cntk_text();
    o.location = e.location();
  } catch (const IoError& e) {
    o.kind = Kind::kIo;
    o.what = e.what();
    o.cntk_text = e.cntk_text();
    o.path = e.path();
    o.error_number = e.error_number();
  } catch (const UsageError& e) {
    o.kind = Kind::kUsage;
    o.what = e.what();
    o.cntk_text = e.cntk_text();
  } catch (const Error& e) {
    o.kind = Kind::kOther;
    o.what = e.what();
    o.cntk_text = e.cntk_text();
  } catch (const std::exception& e) {
    o.kind = Kind::kOther;
    o.what = std::string("std::exception: ") + e.what();
    o.cntk_text = o.what;
  }
  o.what = relative(o.what, dir);
  o.cntk_text = relative(o.cntk_text, dir);
  o.location.file = relative(o.location.file, dir);
  o.config_file = relative(o.config_file, dir);
  o.path = relative(o.path, dir);
  for (std::string& l : o.skips.first_locations) l = relative(l, dir);
  return o;
}

std::string write_file(const std::string& dir, const std::string& name, const std::string& content) {
  fs::path p = fs::path(dir) / name;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  return p.string();
}

std::vector<CtfStreamOptions> ctf_streams(const std::string& spec) {
  std::vector<CtfStreamOptions> out;
  std::stringstream all(spec);
  std::string one;
  while (std::getline(all, one, ',')) {
    std::stringstream parts(one);
    std::string field;
    CtfStreamOptions s;
    std::getline(parts, s.name, ':');
    std::getline(parts, field, ':');
    s.storage = field == "sparse" ? StorageFormat::kSparseCsc : StorageFormat::kDense;
    std::getline(parts, field, ':');
    s.dim = std::stoull(field);
    while (std::getline(parts, field, ':')) {
      if (field == "def") s.defines_mb_size = true;
      if (field.rfind("alias=", 0) == 0) s.alias = field.substr(6);
    }
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.9g", v);
  return buffer;
}

template <typename T>
void render_stream(std::string& out, const SequenceData& d, const StreamInfo& s) {
  const T* values = static_cast<const T*>(d.values);
  size_t at = 0;
  for (uint32_t k = 0; k < d.number_of_samples; ++k) {
    out += '[';
    const size_t n = s.storage == StorageFormat::kDense ? s.sample_dim() : d.nnz_counts[k];
    for (size_t i = 0; i < n; ++i, ++at) {
      if (i > 0) out += ' ';
      if (s.storage != StorageFormat::kDense) out += std::to_string(d.indices[at]) + ':';
      out += number(static_cast<double>(values[at]));
    }
    out += ']';
  }
}

}  // namespace

std::string render_all(Deserializer& d) {
  std::string out;
  const std::vector<StreamInfo>& streams = d.streams();
  for (const ChunkInfo& c : d.chunk_infos()) {
    std::vector<SequenceInfo> infos;
    d.sequence_infos_for_chunk(c.id, infos);
    ChunkPtr chunk = d.load_chunk(c.id);
    for (const SequenceInfo& info : infos) {
      std::vector<SequenceData> data;
      chunk->get_sequence(info.index_in_chunk, data);
      if (!out.empty()) out += "; ";
      out += d.key_to_string(info.key);
      for (size_t s = 0; s < streams.size(); ++s) {
        out += ' ' + streams[s].name + '=';
        if (streams[s].element_type == ElementType::kDouble) {
          render_stream<double>(out, data[s], streams[s]);
        } else {
          render_stream<float>(out, data[s], streams[s]);
        }
      }
    }
  }
  return out;
}

Outcome run_ctf(const std::string& dir, const CtfCase& c) {
  std::shared_ptr<Deserializer> d;
  Outcome o = capture(dir, [&](Outcome& out) {
    CtfOptions options;
    options.file = write_file(dir, "data.ctf", c.content);
    options.streams = ctf_streams(c.streams);
    options.max_errors = c.max_errors;
    options.skip_sequence_ids = c.skip_ids;
    options.element_type = c.doubles ? ElementType::kDouble : ElementType::kFloat;
    options.chunk_size_in_bytes = c.chunk_bytes;
    options.trace_level = 0;
    options.log_sink = [](int, std::string_view) {};
    if (c.damage_cache) {
      options.cache_index = true;
      (void)make_ctf_deserializer(options);
      c.damage_cache(ctf_cache_file_name(options));
    }
    d = make_ctf_deserializer(options);
    out.data = render_all(*d);
  });
  if (d) {
    o.skips = ctf_error_summary(*d);
    for (std::string& l : o.skips.first_locations) l = relative(l, dir);
  }
  return o;
}

Outcome run_reader(const std::string& dir, const std::string& config,
                   const std::map<std::string, std::string>& files, size_t mb_size) {
  for (const auto& [name, content] : files) write_file(dir, name, content);
  std::unique_ptr<MinibatchSource> source;
  Outcome o = capture(dir, [&](Outcome& out) {
    const std::string config_file = write_file(dir, "reader.cntk", config);
    // Relative `file = data.ctf` paths resolve against the case folder.
    Config root = Config::from_files({config_file}, {"dir=" + dir});
    source = MinibatchSource::from_config(root.get_block("Train").get_block("reader"));
    source->start_epoch(mb_size, 0, kFullSweep);
    Minibatch mb;
    while (source->next_minibatch(mb)) {
      if (!out.data.empty()) out.data += " | ";
      for (size_t k = 0; k < mb.keys.size(); ++k) out.data += (k ? " " : "") + mb.keys[k];
    }
  });
  if (source) {
    SkipReport report = source->skip_report();
    o.skips.errors = report.errors;
    o.skips.rows_skipped = report.rows_skipped;
    o.skips.samples_skipped = report.samples_skipped;
    o.skips.first_locations.clear();
    for (const std::string& l : report.first_locations) o.skips.first_locations.push_back(relative(l, dir));
    o.sequences_dropped = report.sequences_skipped;
  }
  return o;
}

}  // namespace cntkio::catalogue
