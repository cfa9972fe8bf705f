// A reader of each built-in format built from typed specs only (MinibatchSource::create) gives exactly the
// minibatches of the equivalent CNTK config (issue #22): randomized, two workers and a checkpoint restore.
#include "cntkio/reader_spec.hpp"

#include <gtest/gtest.h>

#include <cstring>
#if CNTKIO_WITH_IMAGES
#include <opencv2/imgcodecs.hpp>
#endif
#include <string>
#include <vector>

#include "cntkio/cbf.hpp"
#include "cntkio/config.hpp"
#include "cntkio/convert.hpp"
#include "cntkio/ctf.hpp"
#include "cntkio/htk.hpp"
#include "cntkio/image.hpp"
#include "cntkio/minibatch_source.hpp"
#include "cntkio/registry.hpp"
#include "htk/htk_corpus.hpp"

using namespace cntkio;

namespace {

using htk_test::TempDir;

// Every minibatch of epochs 0 and 1 of both workers, as text: keys, flags, layout and every value's bytes.
// Worker 1 restores, before its second epoch, the state it had after its first minibatch.
std::string read_all(const std::function<std::unique_ptr<MinibatchSource>()>& make, size_t mb_size = 7) {
  std::string out;
  for (size_t rank = 0; rank < 2; ++rank) {
    auto source = make();
    ReaderState after_first;
    for (size_t epoch = 0; epoch < 2; ++epoch) {
      if (epoch == 1 && rank == 1) source->restore(after_first);
      source->start_epoch(mb_size, epoch, kFullSweep, rank, 2);
      Minibatch mb;
      size_t n = 0;
      while (source->next_minibatch(mb)) {
        if (epoch == 0 && n == 0) after_first = source->state();
        out += "w" + std::to_string(rank) + " e" + std::to_string(epoch) + " mb" + std::to_string(n++) + ":";
        for (const std::string& key : mb.keys) out += " " + key;
        out += mb.end_of_sweep ? " S" : "";
        for (const StreamBatch& b : mb.streams) {
          out += " | " + b.info.name + " " + std::to_string(b.layout.num_parallel) + "x" +
                 std::to_string(b.layout.num_time_steps) + " ";
          out.append(reinterpret_cast<const char*>(b.values.data()), b.values.size());
          out.append(reinterpret_cast<const char*>(b.row_indices.data()), b.row_indices.size() * 4);
          out.append(reinterpret_cast<const char*>(b.col_starts.data()), b.col_starts.size() * 4);
        }
        out += "\n";
      }
    }
  }
  return out;
}

std::unique_ptr<MinibatchSource> from_config(const std::string& text) {
  return MinibatchSource::from_config(Config::from_text(text).get_block("reader"));
}

DeserializerSpec deserializer(std::string type, std::any options) {
  DeserializerSpec d;
  d.type = std::move(type);
  d.options = std::move(options);
  return d;
}

CtfStreamOptions ctf_stream(std::string name, size_t dim, StorageFormat storage) {
  CtfStreamOptions s;
  s.name = std::move(name);
  s.dim = dim;
  s.storage = storage;
  return s;
}

std::string ctf_corpus() {
  std::string text;
  for (int k = 0; k < 61; ++k) {
    for (int row = 0; row <= k % 4; ++row) {
      text += std::to_string(k) + " |x " + std::to_string(k) + " " + std::to_string(row) + " |y " +
              std::to_string(k % 9) + ":1\n";
    }
  }
  return text;
}

}  // namespace

TEST(ReaderSpecEquivalence, CtfCompositeAndStandAlone) {
  TempDir dir("spec");
  const std::string file = dir.write("d.ctf", ctf_corpus());
  CtfOptions options;
  options.file = file;
  options.streams = {ctf_stream("x", 2, StorageFormat::kDense),
                     ctf_stream("y", 9, StorageFormat::kSparseCsc)};
  options.chunk_size_in_bytes = 300;
  const std::string input =
      "input = [ x = [ dim = 2 ; format = dense ] ; y = [ dim = 9 ; format = sparse ] ]";

  const std::string composite = read_all([&] {
    return from_config(
        "reader = [ randomizationWindow = 100 ; deserializers = ( [ type = CNTKTextFormatDeserializer ; file "
        "= \"" +
        file + "\" ; chunkSizeInBytes = 300 ; " + input + " ] ) ]");
  });
  EXPECT_EQ(composite, read_all([&] {
              ReaderSpec spec;
              spec.source.randomization_window = 100;
              spec.deserializers = {deserializer("CNTKTextFormatDeserializer", options)};
              return MinibatchSource::create(spec);
            }));
  ASSERT_GT(composite.size(), 1000u);

  const std::string standalone = read_all([&] {
    return from_config("reader = [ readerType = CNTKTextFormatReader ; file = \"" + file +
                       "\" ; chunkSizeInBytes = 300 ; randomizationWindow = 3 ; " + input + " ]");
  });
  EXPECT_EQ(standalone, read_all([&] {
              ReaderSpec spec;
              spec.source.randomization_window = 3;
              spec.source.sample_based_window = false;
              spec.source.local_timeline = false;
              spec.deserializers = {deserializer("CNTKTextFormatDeserializer", options)};
              return MinibatchSource::create(spec);
            }));
  EXPECT_NE(standalone, composite);  // the windows and timelines differ
}

TEST(ReaderSpecEquivalence, Cbf) {
  TempDir dir("spec");
  const std::string ctf = dir.write("d.ctf", ctf_corpus());
  ConvertOptions convert;
  convert.streams = {parse_convert_stream("x:x:2:dense"), parse_convert_stream("y:y:9:sparse")};
  convert.chunk_size_in_bytes = 400;
  convert.log = [](std::string_view) {};
  const std::string cbf = dir.file("d.bin");
  convert_file(ctf, DataFormat::kCtf, cbf, convert);
  CbfOptions options;
  options.file = cbf;
  const std::string expected = read_all([&] {
    return from_config(
        "reader = [ randomizationWindow = 2 ; deserializers = ( [ type = CNTKBinaryFormatDeserializer ; file "
        "= \"" +
        cbf + "\" ] ) ]");
  });
  EXPECT_EQ(expected, read_all([&] {
              ReaderSpec spec;
              spec.source.randomization_window = 2;
              spec.deserializers = {deserializer("CNTKBinaryFormatDeserializer", options)};
              return MinibatchSource::create(spec);
            }));
  ASSERT_GT(expected.size(), 1000u);
}

TEST(ReaderSpecEquivalence, HtkFeaturesAndMlfLabelsInFramesAndSequences) {
  TempDir dir("spec");
  const htk_test::Corpus corpus = htk_test::make_corpus(dir);
  for (const bool frames : {true, false}) {
    const std::string expected = read_all(
        [&] {
          return htk_test::open_reader(htk_test::composite_reader(
              corpus,
              std::string("frameMode = ") + (frames ? "true" : "false") + "\nrandomizationWindow = 150"));
        },
        frames ? 64 : 90);
    HtkFeatureOptions features;
    features.name = "features";
    features.scp_file = corpus.scp;
    features.dim = corpus.dim;
    MlfOptions labels;
    labels.name = "labels";
    labels.mlf_files = {corpus.mlf};
    labels.label_mapping_file = corpus.states;
    labels.label_dim = corpus.num_states;
    const std::string typed = read_all(
        [&] {
          ReaderSpec spec;
          spec.source.packing = frames ? Packing::kFrames : Packing::kSequences;
          spec.source.randomization_window = 150;
          spec.deserializers = {deserializer("HTKFeatureDeserializer", features),
                                deserializer("HTKMLFDeserializer", labels)};
          return MinibatchSource::create(spec);
        },
        frames ? 64 : 90);
    EXPECT_EQ(expected, typed) << (frames ? "frames" : "sequences");
    ASSERT_GT(expected.size(), 1000u);
  }
}

#if CNTKIO_WITH_IMAGES
TEST(ReaderSpecEquivalence, ImagesWithRandomTransforms) {
  TempDir dir("spec");
  std::string map;
  for (int i = 0; i < 9; ++i) {
    cv::Mat image(5 + i, 7, CV_8UC3, cv::Scalar(10 * i, 255 - 20 * i, 3 * i));
    cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(255));
    const std::string name = "i" + std::to_string(i) + ".png";
    cv::imwrite(dir.file(name), image);
    map += dir.file(name) + "\t" + std::to_string(i % 3) + "\n";
  }
  const std::string file = dir.write("map.txt", map);
  const std::string expected = read_all([&] {
    return from_config("reader = [ deserializers = ( [ type = ImageDeserializer ; file = \"" + file +
                       "\" ; input = [ features = [ transforms = ( [ type = Crop ; cropType = RandomSide ; "
                       "sideRatio = 0.6:0.9 ] : "
                       "[ type = Scale ; width = 4 ; height = 3 ; channels = 3 ] : [ type = Color ; "
                       "brightnessRadius = 0.3 ] : "
                       "[ type = Transpose ] ) ] ; labels = [ labelDim = 3 ] ] ] ) ]");
  });
  ImageOptions options;
  options.file = file;
  options.label_dim = 3;
  ImageCropOptions crop;
  crop.type = ImageCropOptions::Type::kRandomSide;
  crop.side_ratio_min = static_cast<double>(0.6f);  // CNTK reads ratios as 32-bit floats
  crop.side_ratio_max = static_cast<double>(0.9f);
  crop.hflip = true;
  ImageScaleOptions scale;
  scale.width = 4;
  scale.height = 3;
  scale.channels = 3;
  ImageColorOptions color;
  color.brightness_radius = 0.3;
  const std::string typed = read_all([&] {
    ReaderSpec spec;
    DeserializerSpec d = deserializer("ImageDeserializer", options);
    d.transforms = {
        StreamTransforms{"features",
                         {TransformSpec{"Crop", "", crop}, TransformSpec{"Scale", "", scale},
                          TransformSpec{"Color", "", color}, TransformSpec{"Transpose", "", {}}}}};
    spec.deserializers = {d};
    return MinibatchSource::create(spec);
  });
  EXPECT_EQ(expected, typed);
  ASSERT_GT(expected.size(), 500u);
}

TEST(ReaderSpecEquivalence, Base64Images) {
  TempDir dir("spec");
  std::string map;
  for (int i = 0; i < 6; ++i) {
    std::vector<unsigned char> png;
    cv::imencode(".png", cv::Mat(3, 4, CV_8UC3, cv::Scalar(40 * i, 7, 9)), png);
    static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string text;
    for (size_t k = 0; k < png.size(); k += 3) {
      const uint32_t v = (png[k] << 16) | ((k + 1 < png.size() ? png[k + 1] : 0) << 8) |
                         (k + 2 < png.size() ? png[k + 2] : 0);
      text += kAlphabet[(v >> 18) & 63];
      text += kAlphabet[(v >> 12) & 63];
      text += k + 1 < png.size() ? kAlphabet[(v >> 6) & 63] : '=';
      text += k + 2 < png.size() ? kAlphabet[v & 63] : '=';
    }
    map += std::to_string(i) + "\t" + std::to_string(i % 2) + "\t" + text + "\n";
  }
  const std::string file = dir.write("b64.txt", map);
  const std::string expected = read_all([&] {
    return from_config(
        "reader = [ randomizationWindow = 4 ; deserializers = ( [ type = Base64ImageDeserializer ; file = "
        "\"" +
        file + "\" ; input = [ features = [ transforms = () ] ; labels = [ labelDim = 2 ] ] ] ) ]");
  });
  ImageOptions options;
  options.file = file;
  options.label_dim = 2;
  EXPECT_EQ(expected, read_all([&] {
              ReaderSpec spec;
              spec.source.randomization_window = 4;
              spec.deserializers = {deserializer("Base64ImageDeserializer", options)};
              return MinibatchSource::create(spec);
            }));
  ASSERT_GT(expected.size(), 200u);
}

#endif  // CNTKIO_WITH_IMAGES

TEST(ReaderSpec, OptionsOfTheWrongTypeAndUnknownTypesAreUsageErrors) {
  ReaderSpec spec;
  spec.deserializers = {deserializer("CNTKTextFormatDeserializer", CbfOptions{})};
  EXPECT_THROW(MinibatchSource::create(spec), UsageError);
  spec.deserializers = {deserializer("NoSuchDeserializer", {})};
  EXPECT_THROW(MinibatchSource::create(spec), UsageError);
  spec.deserializers.clear();
  EXPECT_THROW(MinibatchSource::create(spec), UsageError);
}

// A name only a left-out format provides says so; any other unknown name does not blame the build.
TEST(ReaderSpec, UnknownNamesSayWhetherTheBuildLeftTheirFormatOut) {
  const auto message_of = [](const std::string& text) {
    try {
      MinibatchSource::from_config(Config::from_text(text, "left_out.cntk").get_block("reader"));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string unknown =
      message_of("reader = [ deserializers = ([ type = \"NoSuchDeserializer\" ; file = \"x\" ]) ]");
  EXPECT_NE(unknown.find("NoSuchDeserializer"), std::string::npos) << unknown;
  EXPECT_EQ(unknown.find("left out"), std::string::npos) << unknown;
  if (find_deserializer_type("ImageDeserializer")) {
    GTEST_SKIP() << "the image format is built in; its names resolve";
  }
  for (const std::string& text :
       {std::string("reader = [ deserializers = ([ type = \"ImageDeserializer\" ; file = \"map.txt\" ]) ]"),
        std::string("reader = [ readerType = \"ImageReader\" ; file = \"map.txt\" ]")}) {
    const std::string message = message_of(text);
    EXPECT_NE(message.find("CNTKIO_WITH_IMAGES=OFF"), std::string::npos) << message;
    EXPECT_NE(message.find("left_out.cntk"), std::string::npos) << message;
  }
  ReaderSpec spec;
  spec.deserializers = {deserializer("Base64ImageDeserializer", {})};
  try {
    MinibatchSource::create(spec);
    ADD_FAILURE() << "a left-out format's type was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("CNTKIO_WITH_IMAGES=OFF"), std::string::npos) << e.what();
  }
}

namespace {

ReaderSpec spec_of_section(const std::string& text, const std::string& section) {
  const Config root = Config::from_text(text);
  return ReaderSpec::from_config(root.get_block(section).get_block("reader"));
}

const char* kGlobalDeserializers =
    "deserializers = ([ type = \"CNTKTextFormatDeserializer\" ; file = \"other.ctf\" ; "
    "input = [ a = [ dim = 2 ; format = \"dense\" ] ] ])\n";

}  // namespace

// spec pipeline.md §1.1: with `deserializers` in scope, readerType (default the composite reader) still picks
// the reader: a stand-alone one ignores the array, an unknown one is an error.
TEST(ReaderSpecFromConfig, AReaderTypeNamingAStandAloneReaderWinsOverDeserializersInScope) {
  const ReaderSpec spec = spec_of_section(std::string(kGlobalDeserializers) +
                                              "Test = [ reader = [ readerType = \"CNTKBinaryReader\" ; file "
                                              "= \"t.bin\" ; randomize = false ] ]\n",
                                          "Test");
  ASSERT_EQ(spec.deserializers.size(), 1u);
  const auto* cbf = std::any_cast<CbfOptions>(&spec.deserializers[0].options);
  ASSERT_NE(cbf, nullptr);
  EXPECT_EQ(cbf->file, "t.bin");
}

TEST(ReaderSpecFromConfig, TheCompositeReaderTypeOrNoneReadsTheDeserializers) {
  for (const std::string type : {"", "readerType = CompositeDataReader ;", "readerType = Cntk.Composite ;"}) {
    const ReaderSpec spec = spec_of_section(
        std::string(kGlobalDeserializers) + "Test = [ reader = [ " + type + " randomize = false ] ]\n",
        "Test");
    ASSERT_EQ(spec.deserializers.size(), 1u) << type;
    EXPECT_NE(std::any_cast<CtfOptions>(&spec.deserializers[0].options), nullptr) << type;
  }
}

TEST(ReaderSpecFromConfig, AnUnknownReaderTypeBesideDeserializersIsAnError) {
  EXPECT_THROW(spec_of_section(std::string(kGlobalDeserializers) +
                                   "Test = [ reader = [ readerType = NoSuchReader ; randomize = false ] ]\n",
                               "Test"),
               ConfigError);
  EXPECT_THROW(spec_of_section("Test = [ reader = [ readerType = CompositeDataReader ] ]\n", "Test"),
               ConfigError);
}

// spec config.md §6.1: `reader = section("reader")` has the section as its parent, wherever the block was
// written: a reader block at the top level sees the keys of the section that takes it.
TEST(ReaderSpecFromConfig, AReaderBlockFoundInAnEnclosingScopeSeesTheSectionThatTookIt) {
  const std::string text =
      "reader = [ readerType = CNTKTextFormatReader ; file = \"d.ctf\" ; "
      "input = [ a = [ dim = 1 ; format = \"dense\" ] ] ]\n"
      "Test = [ randomize = false ; maxErrors = 7 ]\n";
  const ReaderSpec spec = spec_of_section(text, "Test");
  EXPECT_FALSE(spec.source.randomize);
  const ReaderSpec global = ReaderSpec::from_config(Config::from_text(text).get_block("reader"));
  EXPECT_TRUE(global.source.randomize);
}

namespace {

std::string composite_section(const std::string& reader_keys, const std::string& outer_keys = "") {
  return "S = [ " + outer_keys + (outer_keys.empty() ? "" : " ;") + " reader = [ " + reader_keys +
         "\n deserializers = ([ type = \"CNTKTextFormatDeserializer\" ; file = \"d.ctf\" ; "
         "input = [ a = [ dim = 1 ; format = \"dense\" ] ] ]) ] ]\n";
}

}  // namespace

// spec pipeline.md §1.2: `action = write` reads all data in file order, whole sequences.
TEST(ReaderSpecFromConfig, TheWriteActionReadsSequencesInFileOrder) {
  for (const std::string packing : {"", "frameMode = true", "truncated = true ; truncationLength = 2"}) {
    const ReaderSpec spec = spec_of_section(composite_section("action = write ; " + packing), "S");
    EXPECT_FALSE(spec.source.randomize) << packing;
    EXPECT_EQ(spec.source.packing, Packing::kSequences) << packing;
  }
  EXPECT_TRUE(spec_of_section(composite_section("action = train"), "S").source.randomize);
}

// spec pipeline.md §3.1: a CTF deserializer needs an explicit size for a sample window asked for in the
// reader section itself, when there is a window at all; `randomizationWindow = default` is the composite
// default.
TEST(ReaderSpecFromConfig, SampleWindowRulesOfACompositeCtfReader) {
  EXPECT_THROW(spec_of_section(composite_section("sampleBasedRandomizationWindow = true"), "S"), ConfigError);
  const ReaderSpec unrandomized =
      spec_of_section(composite_section("randomize = false ; sampleBasedRandomizationWindow = true"), "S");
  EXPECT_FALSE(unrandomized.source.randomize);
  const ReaderSpec outer =
      spec_of_section(composite_section("", "sampleBasedRandomizationWindow = true"), "S");
  EXPECT_EQ(outer.source.sample_based_window, false);  // asked for above the reader: the chunk window
  const ReaderSpec by_default = spec_of_section(composite_section("randomizationWindow = default"), "S");
  EXPECT_EQ(by_default.source.randomization_window, (uint64_t{1} << 62) - 1);  // randomizeAuto
  EXPECT_EQ(by_default.source.sample_based_window, true);
}

// CNTK reads truncationLength and rightSplice only for truncated packing; a spec that sets them without it
// would have them ignored, which a ReaderSpec built in code is told.
TEST(ReaderSpecFromConfig, TruncationSettingsCountOnlyForTruncatedPacking) {
  for (const std::string keys :
       {"truncationLength = 3 ; rightSplice = 1", "frameMode = true ; truncationLength = 3",
        "action = write ; truncated = true ; truncationLength = 3 ; rightSplice = 1"}) {
    const ReaderSpec spec = spec_of_section(composite_section(keys), "S");
    EXPECT_EQ(spec.source.truncation_length, 0u) << keys;
    EXPECT_EQ(spec.source.right_splice, 0u) << keys;
  }
  const ReaderSpec truncated =
      spec_of_section(composite_section("truncated = true ; truncationLength = 3 ; rightSplice = 1"), "S");
  EXPECT_EQ(truncated.source.truncation_length, 3u);
  EXPECT_EQ(truncated.source.right_splice, 1u);
  try {
    spec_of_section(composite_section("truncated = true ; truncationLength = 3 ; rightSplice = 3"), "S");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.key_path().find("rightSplice"), std::string::npos) << e.what();
    EXPECT_GT(e.line(), 0u) << e.what();
  }

  TempDir dir("spec");
  ReaderSpec spec;
  spec.source.packing = Packing::kSequences;
  spec.source.truncation_length = 4;
  CtfOptions o;
  o.file = dir.write("d.ctf", "0 |a 1\n");
  o.streams = {ctf_stream("a", 1, StorageFormat::kDense)};
  spec.deserializers.push_back(deserializer("CNTKTextFormatDeserializer", o));
  EXPECT_THROW(MinibatchSource::create(spec), UsageError);
  spec.source.packing = Packing::kTruncatedSequences;
  EXPECT_NO_THROW(MinibatchSource::create(spec));
}
