// Catalogue: whole readers built from config (stand-alone and composite), missing and unreadable files,
// and what maxErrors lets through end to end (MinibatchSource::skip_report).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#if CNTKIO_WITH_IMAGES
#include <opencv2/imgcodecs.hpp>
#endif

#include "catalogue/catalogue.hpp"
#include "cntkio/config.hpp"
#include "cntkio/ctf.hpp"
#if CNTKIO_WITH_IMAGES
#include "image/base64_encode.hpp"
#endif

namespace cntkio::catalogue {
namespace {

// A stand-alone CTF reader section; `extra` goes into the reader block, `input` replaces the streams.
std::string reader_config(const std::string& file, const std::string& extra = "",
                          const std::string& input = "a = [ dim = 1 ; format = dense ]") {
  return "Train = [\n"
         "  reader = [\n"
         "    readerType = CNTKTextFormatReader\n"
         "    file = \"$dir$/" +
         file +
         "\"\n"
         "    randomize = false\n" +
         extra + "    input = [ " + input +
         " ]\n"
         "  ]\n"
         "]\n";
}

Case reader(std::string name, std::string config, std::map<std::string, std::string> files, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [config = std::move(config), files = std::move(files)](const std::string& dir) {
    return run_reader(dir, config, files);
  };
  c.expect = std::move(expect);
  return c;
}

Case config_file_case(std::string name, std::function<std::vector<std::string>(const std::string&)> files,
                      Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [files = std::move(files)](const std::string& dir) {
    return capture(dir, [&](Outcome&) { Config::from_files(files(dir)); });
  };
  c.expect = std::move(expect);
  return c;
}

Case ctf_file_case(std::string name, std::function<std::string(const std::string&)> path, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [path = std::move(path)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      CtfOptions options;
      options.file = path(dir);
      options.streams = ctf_streams("a:dense:1");
      make_ctf_deserializer(options);
    });
  };
  c.expect = std::move(expect);
  return c;
}

const std::string kGood = "0 |a 1\n1 |a 2\n2 |a 3\n";

#if CNTKIO_WITH_IMAGES
// A base64-encoded 3x2 PNG, for base64 image maps.
std::string tiny_png_base64() {
  std::vector<unsigned char> bytes;
  cv::imencode(".png", cv::Mat(2, 3, CV_8UC3, cv::Scalar(40, 40, 40)), bytes);
  return testing_support::base64(bytes);
}
#endif

}  // namespace

std::vector<Case> io_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };

  // ---- files that are missing or not files (tests run as root: permissions cannot make them unreadable)
  // ----
  add(ctf_file_case(
      "io_ctf_missing_file", [](const std::string& d) { return d + "/missing.ctf"; },
      io_error("cannot open input file", "missing.ctf", ENOENT)));
  add(ctf_file_case(
      "io_ctf_file_is_a_directory",
      [](const std::string& d) {
        std::filesystem::create_directories(d + "/folder");
        return d + "/folder";
      },
      io_error("it is a directory", "folder", EISDIR)));
  add(ctf_file_case(
      "io_ctf_path_through_a_file",
      [](const std::string& d) { return write_file(d, "plain", "x") + "/data.ctf"; },
      io_error("cannot open input file", "plain/data.ctf", ENOTDIR)));
  add(ctf_file_case(
      "io_ctf_fifo_does_not_block",
      [](const std::string& d) {
        ::mkfifo((d + "/pipe").c_str(), 0600);
        return d + "/pipe";
      },
      io_error("not a regular file", "pipe", 0)));
  add(ctf_file_case(
      "io_ctf_empty_path", [](const std::string&) { return std::string(); },
      config_error("The CTF deserializer needs a 'file'.", "file", "", 0, 0)));
  add(config_file_case(
      "io_config_missing_file", [](const std::string& d) { return std::vector{d + "/none.cntk"}; },
      io_error("cannot open config file", "none.cntk", ENOENT)));
  add(config_file_case(
      "io_config_file_is_a_directory",
      [](const std::string& d) {
        std::filesystem::create_directories(d + "/conf");
        return std::vector{d + "/conf"};
      },
      io_error("cannot open config file (it is a directory)", "conf", EISDIR)));
  add(config_file_case(
      "io_config_fifo_does_not_block",
      [](const std::string& d) {
        ::mkfifo((d + "/pipe.cntk").c_str(), 0600);
        return std::vector{d + "/pipe.cntk"};
      },
      io_error("not a regular file", "pipe.cntk", 0)));
  add(config_file_case(
      "io_config_include_missing",
      [](const std::string& d) {
        return std::vector{write_file(d, "main.cntk", "a = 1\ninclude=" + d + "/gone.cntk\n")};
      },
      io_error("cannot open config file", "gone.cntk", ENOENT)));
  add(config_file_case(
      "io_config_include_directory",
      [](const std::string& d) {
        std::filesystem::create_directories(d + "/inc");
        return std::vector{write_file(d, "main.cntk", "include=" + d + "/inc\n")};
      },
      io_error("it is a directory", "inc", EISDIR)));
  add(config_file_case(
      "io_config_same_file_twice",
      [](const std::string& d) {
        std::string f = write_file(d, "c.cntk", "a = 1\n");
        return std::vector{f, f};
      },
      config_error("Cannot specify same config file multiple times", "", "c.cntk", 0, 0)));
  add(config_file_case(
      "io_config_include_cycle_read_once",
      [](const std::string& d) {
        write_file(d, "b.cntk", "include=" + d + "/a.cntk\nb = 2\n");
        return std::vector{write_file(d, "a.cntk", "include=" + d + "/b.cntk\na = 1\nn = x\n")};
      },
      ok("")));
  add(reader("io_reader_missing_data_file", reader_config("nothere.ctf"), {},
             io_error("cannot open input file", "nothere.ctf", ENOENT)));
  add(reader("io_reader_data_file_is_a_directory", reader_config("sub"), {{"sub/x", "1"}},
             io_error("it is a directory", "sub", EISDIR)));

  // ---- reader configs: every error names the key and where it was written ----
  add(reader("reader_dim_zero", reader_config("d.ctf", "", "a = [ dim = 0 ; format = dense ]"),
             {{"d.ctf", kGood}},
             config_error("Stream 'a' needs a dimension 'dim' greater than 0.",
                          "global.Train.reader.input.a.dim", "reader.cntk", 6, 27)));
  add(reader("reader_dim_2_pow_31_dense",
             reader_config("d.ctf", "", "a = [ dim = 2147483648 ; format = dense ]"), {{"d.ctf", kGood}},
             config_error("has dim 2147483648, above the maximum 2147483647.",
                          "global.Train.reader.input.a.dim", "reader.cntk", 6, 27)));
  add(reader("reader_dim_2_pow_31_sparse",
             reader_config("d.ctf", "", "a = [ dim = 2147483648 ; format = sparse ]"), {{"d.ctf", kGood}},
             config_error("has dim 2147483648, above the maximum 2147483647.",
                          "global.Train.reader.input.a.dim", "reader.cntk", 6, 27)));
  add(reader("reader_dim_minus_one", reader_config("d.ctf", "", "a = [ dim = -1 ; format = dense ]"),
             {{"d.ctf", kGood}},
             config_error("has dim 18446744073709551615, above the maximum",
                          "global.Train.reader.input.a.dim", "reader.cntk", 6, 27)));
  add(reader(
      "reader_dim_not_a_number", reader_config("d.ctf", "", "a = [ dim = 3x ; format = dense ]"),
      {{"d.ctf", kGood}},
      config_error("invalid input string '3x'", "global.Train.reader.input.a.dim", "reader.cntk", 6, 27)));
  add(reader(
      "reader_dim_missing", reader_config("d.ctf", "", "a = [ format = dense ]"), {{"d.ctf", kGood}},
      config_error("Stream 'a' has no 'dim'.", "global.Train.reader.input.a.dim", "reader.cntk", 6, 19)));
  add(reader("reader_format_misspelt", reader_config("d.ctf", "", "a = [ dim = 1 ; format = dens ]"),
             {{"d.ctf", kGood}},
             config_error("has format 'dens'; expected 'dense' or 'sparse'.",
                          "global.Train.reader.input.a.format", "reader.cntk", 6, 40)));
  add(reader("reader_no_input_block",
             reader_config("d.ctf", "", "").replace(reader_config("d.ctf", "", "").find("    input"), 15, ""),
             {{"d.ctf", kGood}},
             config_error("has no 'input' block", "global.Train.reader.input", "reader.cntk", 2, 12)));
  add(reader("reader_empty_alias",
             reader_config("d.ctf", "", "a = [ dim = 1 ; format = dense ; alias = \"\" ]"),
             {{"d.ctf", kGood}},
             config_error("required parameter missing: global.Train.reader.input.a:alias",
                          "global.Train.reader.input.a.alias", "reader.cntk", 6, 19)));
  add(reader("reader_duplicate_alias",
             reader_config("d.ctf", "",
                           "a = [ dim = 1 ; format = dense ] ; b = [ dim = 1 ; format = dense ; alias = a ]"),
             {{"d.ctf", kGood}},
             config_error("Two streams use the alias 'a'", "global.Train.reader.input.b.alias", "reader.cntk",
                          6, 91)));
  add(reader("reader_two_defining_streams",
             reader_config("d.ctf", "",
                           "a = [ dim = 1 ; format = dense ; definesMBSize = true ] ; "
                           "b = [ dim = 1 ; format = dense ; definesMBSize = true ]"),
             {{"d.ctf", "0 |a 1 |b 1\n"}},
             config_error("Only one stream may set definesMBSize=true ('b' is the second).",
                          "global.Train.reader.input.b.definesMBSize", "reader.cntk", 6, 122)));
  add(reader("reader_precision_misspelt", reader_config("d.ctf", "    precision = flaot\n"),
             {{"d.ctf", kGood}},
             config_error("precision must be exactly 'float' or 'double'", "global.Train.reader.precision",
                          "reader.cntk", 6, 17)));
  add(reader(
      "reader_max_errors_not_a_number", reader_config("d.ctf", "    maxErrors = many\n"), {{"d.ctf", kGood}},
      config_error("invalid input string 'many'", "global.Train.reader.maxErrors", "reader.cntk", 6, 17)));
  add(reader("reader_chunk_size_zero", reader_config("d.ctf", "    chunkSizeInBytes = 0\n"),
             {{"d.ctf", kGood}},
             config_error("chunkSizeInBytes must be greater than 0.", "global.Train.reader.chunkSizeInBytes",
                          "reader.cntk", 6, 24)));
  add(reader("reader_randomize_not_a_bool",
             reader_config("d.ctf", "").replace(reader_config("d.ctf", "").find("false"), 5, "sometimes"),
             {{"d.ctf", kGood}},
             config_error("boolean argument expected, got 'sometimes'", "global.Train.reader.randomize",
                          "reader.cntk", 5, 17)));

  // ---- maxErrors end to end: what is skipped is reported, never silent ----
  {
    Expect e = ok("0 1 2");
    e.skips = Skips{3, 1, 1, {"d.ctf:2:6", "d.ctf:2:1", "d.ctf:2:1"}};
    e.sequences_dropped = 0;
    add(reader("reader_skip_report_counts_rows_and_samples", reader_config("d.ctf", "    maxErrors = 5\n"),
               {{"d.ctf", "0 |a 1\n1 |a x\n1 |a 2\n2 |a 3\n"}}, e));
  }
  {
    Expect e =
        format_error("Reached the maximum number of allowed errors while reading the input file (d.ctf).",
                     "d.ctf", 2, 1, 7, "", "1");
    e.skips = Skips{1, 0, 1, {"d.ctf:2:6"}};
    add(reader("reader_skip_report_when_the_budget_runs_out", reader_config("d.ctf", "    maxErrors = 1\n"),
               {{"d.ctf", "0 |a 1\n1 |a x\n1 |a 2\n2 |a 3\n"}}, e));
  }
  {
    // Composite reader: the secondary has no sequence 1, so the bundler leaves it out (as CNTK does, but not
    // silently: the report counts it and names its key).
    const std::string config =
        "Train = [\n"
        "  reader = [\n"
        "    randomize = false\n"
        "    maxErrors = 1\n"
        "    deserializers = (\n"
        "      [ type = CNTKTextFormatDeserializer ; module = CNTKTextFormatReader ; file = \"$dir$/p.ctf\"\n"
        "        input = [ a = [ dim = 1 ; format = dense ] ] ]:\n"
        "      [ type = CNTKTextFormatDeserializer ; module = CNTKTextFormatReader ; file = \"$dir$/s.ctf\"\n"
        "        input = [ b = [ dim = 1 ; format = dense ] ] ]\n"
        "    )\n"
        "  ]\n"
        "]\n";
    Expect e = ok("0 2");
    e.skips = Skips{0, 0, 0, {"sequence 1 (its key is missing in another deserializer)"}};
    e.sequences_dropped = 1;
    add(reader("reader_skip_report_counts_dropped_sequences", config,
               {{"p.ctf", "0 |a 1\n1 |a 2\n2 |a 3\n"}, {"s.ctf", "0 |b 1\n2 |b 3\n"}}, e));
  }
  {
    // The secondary holds key 1 twice: the composite reader joins on the first record, and the second is
    // never read. CNTK returns one of them, unspecified which, silently; cntkio warns and counts it.
    const std::string config =
        "Train = [\n"
        "  reader = [\n"
        "    randomize = false\n"
        "    deserializers = (\n"
        "      [ type = CNTKTextFormatDeserializer ; module = CNTKTextFormatReader ; file = \"$dir$/p.ctf\"\n"
        "        input = [ a = [ dim = 1 ; format = dense ] ] ]:\n"
        "      [ type = CNTKTextFormatDeserializer ; module = CNTKTextFormatReader ; file = \"$dir$/s.ctf\"\n"
        "        input = [ b = [ dim = 1 ; format = dense ] ] ]\n"
        "    )\n"
        "  ]\n"
        "]\n";
    Expect e = ok("0 1 2");
    e.skips = Skips{
        0,
        0,
        0,
        {"s.ctf:4:1 (sequence 1: its key repeats s.ctf:2:1; a composite reader joins on the first only)"}};
    e.sequences_dropped = 1;
    add(reader("reader_secondary_key_held_twice", config,
               {{"p.ctf", "0 |a 1\n1 |a 2\n2 |a 3\n"}, {"s.ctf", "0 |b 1\n1 |b 2\n2 |b 3\n1 |b 9\n"}}, e));
  }
#if CNTKIO_WITH_IMAGES  // a base64 record that does not decode is an invalid sequence
  {
    // With maxErrors = 0, an invalid sequence at the end of a sweep (and a file whose sequences are all
    // invalid) only warned in CNTK, whose check runs on batches that keep data: cntkio stops with an error
    // naming it. A base64 record that does not decode is an invalid sequence.
    const std::string config =
        "Train = [\n"
        "  reader = [\n"
        "    randomize = false\n"
        "    deserializers = (\n"
        "      [ type = Base64ImageDeserializer ; module = ImageReader ; file = \"$dir$/map.txt\"\n"
        "        input = [ features = [ transforms = ( [ type = Scale ; width = 3 ; height = 2 ; channels = "
        "3 ] ) ]\n"
        "                  labels = [ labelDim = 5 ] ] ]\n"
        "    )\n"
        "  ]\n"
        "]\n";
    const std::string message =
        "Number of invalid sequences '1' in the input exceeded the specified maximum number '0'";
    // Minibatches of 4: the fifth record, invalid, is alone in the sweep's last batch.
    std::string map;
    for (int k = 0; k < 4; ++k) map += std::to_string(k) + "\t" + tiny_png_base64() + "\n";
    Expect last = format_error(message, "map.txt", 5, 0, map.size(), "", "4");
    last.data = "0 1 2 3";
    add(reader("reader_invalid_sequence_at_the_end_of_the_sweep", config, {{"map.txt", map + "4\tAAAA\n"}},
               last));
    Expect all = format_error(message, "map.txt", 1, 0, 0, "", "0");
    all.data = "";
    add(reader("reader_every_sequence_invalid", config, {{"map.txt", "0\tAAAA\n"}}, all));
  }
#endif
  {
    const std::string config =
        "Train = [\n"
        "  reader = [\n"
        "    deserializers = (\n"
        "      [ type = CNTKTextFormatDeserialiser ; file = \"$dir$/p.ctf\"\n"
        "        input = [ a = [ dim = 1 ; format = dense ] ] ]\n"
        "    )\n"
        "  ]\n"
        "]\n";
    add(reader("reader_unknown_deserializer_type", config, {{"p.ctf", kGood}},
               config_error("Unknown deserializer type 'CNTKTextFormatDeserialiser'",
                            "global.Train.reader.deserializers[0].type", "reader.cntk", 4, 16)));
  }
  return cases;
}

}  // namespace cntkio::catalogue
