// Catalogue: HTK feature lists (SCP) and MLF label files (spec htk.md). SCP errors name the list's line;
// MLF errors name the byte offset of the offending line (CNTK's "Offset 'N': ..." texts). Every input of the
// two deserializers (SCP, feature file, MLF, MLF list, state list) is refused when it is a FIFO, a directory
// or a device, and tiny inputs that claim billions of frames fail before anything is sized by them.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "catalogue/catalogue.hpp"
#include "cntkio/config.hpp"
#include "cntkio/htk.hpp"

namespace cntkio::catalogue {
namespace {

// An HTK feature file of USER kind, little-endian: a header declaring `declared_frames` frames of `dim`
// values, then `stored_frames` frames whose values are frame * 10 + k.
std::string htk_bytes(uint32_t declared_frames, uint32_t stored_frames, uint16_t dim) {
  std::string out(12, '\0');
  const uint32_t period = 100000;
  const uint16_t sample_size = static_cast<uint16_t>(4 * dim);
  const uint16_t user_kind = 9;
  std::memcpy(&out[0], &declared_frames, 4);
  std::memcpy(&out[4], &period, 4);
  std::memcpy(&out[8], &sample_size, 2);
  std::memcpy(&out[10], &user_kind, 2);
  for (uint32_t t = 0; t < stored_frames; ++t) {
    for (uint16_t k = 0; k < dim; ++k) {
      const float value = static_cast<float>(t * 10 + k);
      out.append(reinterpret_cast<const char*>(&value), 4);
    }
  }
  return out;
}

std::string fifo(const std::string& dir, const std::string& name) {
  ::mkfifo((dir + "/" + name).c_str(), 0600);
  return dir + "/" + name;
}

std::string folder(const std::string& dir, const std::string& name) {
  std::filesystem::create_directories(dir + "/" + name);
  return dir + "/" + name;
}

MlfOptions quiet_mlf_options(const std::string& mlf_path, bool frame_mode = true) {
  MlfOptions options;
  options.name = "labels";
  options.mlf_files = {mlf_path};
  options.label_dim = 10;
  options.frame_mode = frame_mode;
  options.trace_level = 0;
  options.log_sink = [](int, std::string_view) {};
  return options;
}

HtkFeatureOptions quiet_feature_options(const std::string& scp_path, bool frame_mode) {
  HtkFeatureOptions options;
  options.name = "features";
  options.scp_file = scp_path;
  options.dim = 3;
  options.frame_mode = frame_mode;
  options.trace_level = 0;
  options.log_sink = [](int, std::string_view) {};
  return options;
}

// An HTK feature deserializer over the SCP `scp(dir)` names; in frame mode it lists the frames of chunk 0
// (one description per frame), in sequence mode it loads chunk 0.
Case features_case(std::string name, bool frame_mode, std::function<std::string(const std::string&)> scp,
                   Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [frame_mode, scp = std::move(scp)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      auto d = make_htk_feature_deserializer(quiet_feature_options(scp(dir), frame_mode));
      if (frame_mode) {
        std::vector<SequenceInfo> frames;
        d->sequence_infos_for_chunk(0, frames);
      } else {
        d->load_chunk(0);
      }
    });
  };
  c.expect = std::move(expect);
  return c;
}

// An MLF deserializer: `setup(dir, options)` writes the files and fills in the options.
Case mlf_setup_case(std::string name, std::function<void(const std::string&, MlfOptions&)> setup,
                    Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [setup = std::move(setup)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      MlfOptions options = quiet_mlf_options(write_file(dir, "data.mlf", "#!MLF!#\n\"a.lab\"\n0 1 s 1\n.\n"));
      setup(dir, options);
      make_mlf_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

// The MLF options of a config whose label stream lists its MLF files in the file `list(dir)`.
Case mlf_list_case(std::string name, std::function<std::string(const std::string&)> list, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [list = std::move(list)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      const Config section =
          Config::from_text("input = [ labels = [ labelDim = 10 ; mlfFileList = \"" + list(dir) + "\" ] ]\n");
      mlf_options_from_config(section);
    });
  };
  c.expect = std::move(expect);
  return c;
}

// 1000 utterances "u0".."u999" of 4194304 frames each (the most an utterance may cover), one label line each
// with class i % 10: 4.2 billion frames in 40 KB of text.
std::string long_utterances_mlf() {
  std::string text = "#!MLF!#\n";
  for (int i = 0; i < 1000; ++i) {
    text += "\"u" + std::to_string(i) + ".lab\"\n0 419430400000 s " + std::to_string(i % 10) + "\n.\n";
  }
  return text;
}

// Loads the chunk of utterance `key` and renders its label at frame `frame` (frame mode) or its length and
// last label (sequence mode) as "key:frame=class".
std::string label_at(Deserializer& d, KeyTable& keys, const std::string& key, uint32_t frame,
                     bool frame_mode) {
  const std::optional<SequenceInfo> info = d.sequence_info_by_key(SequenceKey{keys.id_of(key), frame});
  if (!info) return key + ":missing";
  const ChunkPtr chunk = d.load_chunk(info->chunk_id);
  std::vector<SequenceData> data;
  chunk->get_sequence(info->index_in_chunk, data);
  if (!data.at(0).valid) return key + ":invalid";
  const SequenceData& s = data[0];
  if (frame_mode) return key + ":" + std::to_string(frame) + "=" + std::to_string(s.indices[0]);
  return key + ":" + std::to_string(s.number_of_samples - 1) + "=" +
         std::to_string(s.indices[s.total_nnz - 1]) + " of " + std::to_string(s.number_of_samples);
}

Case mlf(std::string name, std::string content, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [content = std::move(content)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      MlfOptions options;
      options.name = "labels";
      options.mlf_files = {write_file(dir, "data.mlf", content)};
      options.label_dim = 10;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      make_mlf_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

Case scp(std::string name, std::string content, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [content = std::move(content)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      HtkFeatureOptions options;
      options.name = "features";
      options.scp_file = write_file(dir, "data.scp", content);
      options.dim = 3;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      make_htk_feature_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

}  // namespace

std::vector<Case> htk_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };
  add(mlf("mlf_empty_file", "", format_error_at("Input file is empty", "data.mlf", 0)));
  add(mlf("mlf_missing_header", "\"a.rec\"\n0 100000 s 1\n.\n",
          format_error_at("Expected MLF header was not found.", "data.mlf", 0)));
  add(mlf("mlf_start_not_a_number", "#!MLF!#\n\"a.rec\"\nx 100000 s 1\n.\n",
          format_error_at("Offset '16': cannot parse start frame of range.", "data.mlf", 16)));
  add(mlf("mlf_one_column", "#!MLF!#\n\"a.rec\"\n100000\n.\n",
          format_error_at("Offset '16': do not support frame range format with less than two columns.",
                          "data.mlf", 16)));
  add(scp("scp_no_frame_range", "a.feat=x.htk\n",
          format_error("parsedpath: this mode requires an input script with start and end frames given",
                       "data.scp", 1, 0, std::nullopt)));
  add(scp("scp_start_after_end", "a.feat=x.htk[0,2]\nb.feat=x.htk[5,2]\n",
          format_error("open: start frame 5 > end frame 2 in 'x.htk'", "data.scp", 2, 0, std::nullopt)));
  add(scp("scp_garbage_after_range", "a.feat=x.htk[0,2]zz\n",
          format_error("parsedpath: malformed path 'a.feat=x.htk[0,2]zz'", "data.scp", 1, 0, std::nullopt)));
  {
    Case c;
    c.name = "scp_missing_list";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        HtkFeatureOptions options;
        options.name = "features";
        options.scp_file = dir + "/none.scp";
        options.dim = 3;
        make_htk_feature_deserializer(options);
      });
    };
    c.expect = io_error("", "none.scp", ENOENT);
    add(std::move(c));
  }

  // ---- inputs that are not regular files: refused, never waited on (FIFO) or read forever (device)
  add(features_case(
      "htk_scp_fifo_does_not_block", false, [](const std::string& d) { return fifo(d, "pipe.scp"); },
      io_error("Failed to open input file (it is a FIFO", "pipe.scp", 0)));
  add(features_case(
      "htk_scp_is_a_directory", false, [](const std::string& d) { return folder(d, "lists"); },
      io_error("Failed to open input file (it is a directory)", "lists", EISDIR)));
  add(features_case(
      "htk_scp_is_a_device", false, [](const std::string&) { return std::string("/dev/zero"); },
      io_error("Failed to open input file (it is a device", "/dev/zero", 0)));
  add(features_case(
      "htk_feature_file_fifo_does_not_block", false,
      [](const std::string& d) {
        return write_file(d, "data.scp", "a.f=" + fifo(d, "pipe.htk") + "[0,0]\n");
      },
      io_error("error opening file (it is a FIFO", "pipe.htk", 0)));
  add(features_case(
      "htk_feature_file_is_a_directory", false,
      [](const std::string& d) { return write_file(d, "data.scp", "a.f=" + folder(d, "feats") + "[0,0]\n"); },
      io_error("error opening file (it is a directory)", "feats", EISDIR)));
  add(features_case(
      "htk_feature_file_is_a_device", false,
      [](const std::string& d) { return write_file(d, "data.scp", "a.f=/dev/zero[0,0]\n"); },
      io_error("error opening file (it is a device", "/dev/zero", 0)));
  // A later utterance's file is opened when its chunk is described (frame mode) or loaded.
  add(features_case(
      "htk_second_feature_file_fifo_does_not_block", true,
      [](const std::string& d) {
        const std::string good = write_file(d, "a.htk", htk_bytes(3, 3, 3));
        return write_file(d, "data.scp", "a.f=" + good + "[0,2]\nb.f=" + fifo(d, "pipe.htk") + "[0,0]\n");
      },
      io_error("error opening file (it is a FIFO", "pipe.htk", 0)));
  add(mlf_setup_case(
      "mlf_fifo_does_not_block",
      [](const std::string& d, MlfOptions& o) { o.mlf_files = {fifo(d, "pipe.mlf")}; },
      io_error("error opening file (it is a FIFO", "pipe.mlf", 0)));
  add(mlf_setup_case(
      "mlf_is_a_directory", [](const std::string& d, MlfOptions& o) { o.mlf_files = {folder(d, "mlfs")}; },
      io_error("error opening file (it is a directory)", "mlfs", EISDIR)));
  add(mlf_setup_case(
      "mlf_is_a_device", [](const std::string&, MlfOptions& o) { o.mlf_files = {"/dev/zero"}; },
      io_error("error opening file (it is a device", "/dev/zero", 0)));
  add(mlf_setup_case(
      "mlf_state_list_fifo_does_not_block",
      [](const std::string& d, MlfOptions& o) { o.label_mapping_file = fifo(d, "states.pipe"); },
      io_error("error opening file (it is a FIFO", "states.pipe", 0)));
  add(mlf_setup_case(
      "mlf_state_list_is_a_directory",
      [](const std::string& d, MlfOptions& o) { o.label_mapping_file = folder(d, "states"); },
      io_error("error opening file (it is a directory)", "states", EISDIR)));
  add(mlf_setup_case(
      "mlf_state_list_is_a_device",
      [](const std::string&, MlfOptions& o) { o.label_mapping_file = "/dev/zero"; },
      io_error("error opening file (it is a device", "/dev/zero", 0)));
  add(mlf_list_case(
      "mlf_file_list_fifo_does_not_block", [](const std::string& d) { return fifo(d, "list.pipe"); },
      io_error("error opening file (it is a FIFO", "list.pipe", 0)));
  add(mlf_list_case(
      "mlf_file_list_is_a_directory", [](const std::string& d) { return folder(d, "list"); },
      io_error("error opening file (it is a directory)", "list", EISDIR)));
  add(mlf_list_case(
      "mlf_file_list_names_no_file", [](const std::string& d) { return write_file(d, "list.txt", "\r\n\n"); },
      config_error("HTKMLFDeserializer: No mlf files were specified (the list file 'list.txt' names none)",
                   "global.input.labels.mlfFileList", "<text>", 1, 53)));
  add(mlf_list_case(
      "mlf_file_list_is_a_device", [](const std::string&) { return std::string("/dev/zero"); },
      io_error("error opening file (it is a device", "/dev/zero", 0)));

  // ---- tiny inputs that claim billions of frames: located errors before anything is sized by them
  add(features_case(
      "htk_scp_range_past_the_file_frame_mode", true,
      [](const std::string& d) {
        return write_file(d, "data.scp",
                          "a.f=" + write_file(d, "x.htk", htk_bytes(3, 3, 3)) + "[0,3999999999]\n");
      },
      format_error("open: end frame exceeds archive's total number of frames 3 in 'x.htk'", "data.scp", 1, 0,
                   std::nullopt, "", "a")));
  add(features_case(
      "htk_scp_range_past_the_file_sequence_mode", false,
      [](const std::string& d) {
        return write_file(d, "data.scp",
                          "a.f=" + write_file(d, "x.htk", htk_bytes(3, 3, 3)) + "[0,3999999999]\n");
      },
      format_error("open: end frame exceeds archive's total number of frames 3 in 'x.htk'", "data.scp", 1, 0,
                   std::nullopt, "", "a")));
  // The header claims a billion frames, the file holds 3.
  add(features_case(
      "htk_header_claims_more_frames_than_the_file_holds", true,
      [](const std::string& d) {
        return write_file(d, "data.scp",
                          "a.f=" + write_file(d, "x.htk", htk_bytes(1000000000, 3, 3)) + "[0,999999999]\n");
      },
      format_error_at("HTK file 'x.htk' ends before frame 1000000000 (its header declares 1000000000 frames, "
                      "the file has 48 bytes).",
                      "x.htk", 12)));
  add(mlf(
      "mlf_utterance_claims_a_billion_frames", "#!MLF!#\n\"a.lab\"\n0 100000000000000 s 1\n.\n",
      format_error("MLF utterance 'a' ends at frame 1000000000, past the 4194304 frames (11 h 39 min of 10 "
                   "ms frames) an utterance may cover.",
                   "data.mlf", 3, 0, 16, "", "a")));
  // 4.2 billion frames in 40 KB: frame mode keeps the label ranges, sequence mode expands only the utterances
  // asked for.
  for (const bool frame_mode : {true, false}) {
    Case c;
    c.name =
        frame_mode ? "mlf_billions_of_label_frames_frame_mode" : "mlf_billions_of_label_frames_sequence_mode";
    c.run = [frame_mode](const std::string& dir) {
      return capture(dir, [&](Outcome& o) {
        MlfOptions options =
            quiet_mlf_options(write_file(dir, "data.mlf", long_utterances_mlf()), frame_mode);
        options.keys = std::make_shared<KeyTable>(KeyMode::kString);
        auto d = make_mlf_deserializer(options);
        o.data = label_at(*d, *options.keys, "u0", 0, frame_mode) + " " +
                 label_at(*d, *options.keys, "u997", 4194303, frame_mode);
      });
    };
    c.expect = ok(frame_mode ? "u0:0=0 u997:4194303=7" : "u0:4194303=0 of 4194304 u997:4194303=7 of 4194304");
    add(std::move(c));
  }

  // ---- errors that must say which file
  add(mlf("mlf_holds_only_its_header", "#!MLF!#\n",
          format_error(
              "HTKMLFDeserializer: No utterances to process: the MLF file holds no complete utterance (a "
              "quoted key line, label lines and a '.' line).",
              "data.mlf", 0, 0, 8, "labels")));
  {
    // The composite reader: CNTK says only "Could not reconcile data between different deserializers".
    Case c;
    c.name = "htk_reader_with_an_mlf_of_only_its_header";
    c.run = [](const std::string& dir) {
      return run_reader(
          dir,
          "Train = [ reader = [\n"
          "  randomize = false\n"
          "  deserializers = (\n"
          "    [ type = \"HTKFeatureDeserializer\" ; module = \"HTKDeserializers\"\n"
          "      input = [ features = [ dim = 3 ; scpFile = \"$dir$/data.scp\" ] ] ]:\n"
          "    [ type = \"HTKMLFDeserializer\" ; module = \"HTKDeserializers\"\n"
          "      input = [ labels = [ labelDim = 4 ; mlfFile = \"$dir$/data.mlf\" ] ] ]\n"
          "  )\n"
          "] ]\n",
          {{"x.htk", htk_bytes(3, 3, 3)}, {"data.scp", "a.f=.../x.htk[0,2]\n"}, {"data.mlf", "#!MLF!#\n"}});
    };
    c.expect = format_error(
        "HTKMLFDeserializer: No utterances to process: the MLF file holds no complete utterance (a quoted "
        "key "
        "line, label lines and a '.' line).",
        "data.mlf", 0, 0, 8, "labels");
    add(std::move(c));
  }
  {
    // Features (3 frames each) joined with an MLF: one holds utterance a twice, the other labels a with more
    // frames than its features have.
    const std::string config =
        "Train = [ reader = [\n"
        "  randomize = false\n"
        "  deserializers = (\n"
        "    [ type = \"HTKFeatureDeserializer\" ; module = \"HTKDeserializers\"\n"
        "      input = [ features = [ dim = 3 ; scpFile = \"$dir$/data.scp\" ] ] ]:\n"
        "    [ type = \"HTKMLFDeserializer\" ; module = \"HTKDeserializers\"\n"
        "      input = [ labels = [ labelDim = 4 ; mlfFile = \"$dir$/data.mlf\" ] ] ]\n"
        "  )\n"
        "] ]\n";
    const std::map<std::string, std::string> features = {
        {"x.htk", htk_bytes(6, 6, 3)}, {"data.scp", "a.f=.../x.htk[0,2]\nb.f=.../x.htk[3,5]\n"}};
    Case twice;
    twice.name = "htk_reader_with_an_utterance_twice_in_the_mlf";
    twice.run = [config, features](const std::string& dir) {
      std::map<std::string, std::string> files = features;
      files["data.mlf"] =
          "#!MLF!#\n\"a.lab\"\n0 300000 s 1\n.\n\"b.lab\"\n0 300000 s 2\n.\n\"a.lab\"\n0 300000 s 3\n.\n";
      return run_reader(dir, config, files);
    };
    twice.expect = ok("a | b");
    twice.expect.skips = Skips{
        0,
        0,
        0,
        {"data.mlf:8 (utterance a: its key repeats data.mlf:2; a composite reader joins on the first only)"}};
    twice.expect.sequences_dropped = 1;
    add(std::move(twice));
    // CNTK packs the 4-frame label sequence next to the 3 feature frames (a few bytes can claim billions).
    Case longer;
    longer.name = "htk_reader_with_labels_longer_than_their_features";
    longer.run = [config, features](const std::string& dir) {
      std::map<std::string, std::string> files = features;
      files["data.mlf"] = "#!MLF!#\n\"a.lab\"\n0 400000 s 1\n.\n\"b.lab\"\n0 300000 s 2\n.\n";
      return run_reader(dir, config, files);
    };
    longer.expect = format_error(
        "The labels of sequence 'a' cover 4 frames, but its features have 3: labels must not run past the "
        "frames they label.",
        "data.mlf", 2, 0, 8, "labels", "a");
    longer.expect.data = "";
    add(std::move(longer));
  }
  add(mlf("mlf_ends_inside_its_only_utterance", "#!MLF!#\n\"a.lab\"\n0 1 s 1\n",
          format_error(
              "HTKMLFDeserializer: No utterances to process: the MLF file holds no complete utterance (a "
              "quoted key line, label lines and a '.' line).",
              "data.mlf", 0, 0, 24, "labels")));
  return cases;
}

}  // namespace cntkio::catalogue
