// CNTK's own reader configs (shared/conformance/config) and the worked examples of spec/config.md §7.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "config/config_test_util.hpp"

namespace cntkio {
namespace {

using Strings = std::vector<std::string>;
namespace fs = std::filesystem;

const fs::path kConformance = CNTKIO_CONFORMANCE_DIR;

std::string config_path(const std::string& relative) {
  return (kConformance / "config" / relative).string();
}

struct Case {
  std::string name;
  std::string config;   // relative to the conformance folder
  std::string section;  // null in cases.json -> empty
  Strings overrides;
};

std::vector<Case> load_cases() {
  std::ifstream in(kConformance / "cases.json");
  nlohmann::json json = nlohmann::json::parse(in);
  std::vector<Case> cases;
  for (const auto& entry : json) {
    Case c;
    c.name = entry.at("name").get<std::string>();
    if (entry.contains("config") && entry["config"].is_string())
      c.config = entry["config"].get<std::string>();
    if (entry.contains("section") && entry["section"].is_string())
      c.section = entry["section"].get<std::string>();
    if (entry.contains("overrides")) c.overrides = entry["overrides"].get<Strings>();
    cases.push_back(std::move(c));
  }
  return cases;
}

/// Fetches every nested block (and every array of blocks) below `config`; returns how many scopes it saw.
size_t walk(const Config& config) {
  size_t seen = 1;
  for (const std::string& key : config.keys()) {
    std::optional<std::string> value = config.find_string(key);
    if (!value) continue;
    size_t first = value->find_first_not_of(" \t\r\n");
    if (first == std::string::npos) continue;
    char opener = (*value)[first];
    if (opener == '[' || opener == '{') {
      seen += walk(config.get_block(key));
    } else if (opener == '(') {
      Strings elements = config.get_array(key);
      bool all_blocks =
          !elements.empty() && std::all_of(elements.begin(), elements.end(), [](const std::string& e) {
            return !e.empty() && (e[0] == '[' || e[0] == '{');
          });
      if (all_blocks) {
        for (const Config& element : config.get_block_array(key)) seen += walk(element);
      }
    }
  }
  return seen;
}

TEST(ConfigConformance, CasesJsonIsReadable) {
  std::vector<Case> cases = load_cases();
  EXPECT_EQ(cases.size(), 174u);
  size_t with_config =
      std::count_if(cases.begin(), cases.end(), [](const Case& c) { return !c.config.empty(); });
  EXPECT_GT(with_config, 100u);
}

TEST(ConfigConformance, EveryConfigFileParsesAndItsVariablesResolve) {
  // Overrides per config file: the image configs expect some variables from the command line.
  std::map<std::string, Strings> overrides;
  for (const Case& c : load_cases()) {
    if (c.config.empty()) continue;
    Strings& list = overrides[(kConformance / c.config).lexically_normal().string()];
    for (const std::string& o : c.overrides) {
      if (std::find(list.begin(), list.end(), o) == list.end()) list.push_back(o);
    }
  }
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kConformance / "config")) {
    if (entry.path().extension() != ".cntk") continue;
    ++files;
    const std::string path = entry.path().lexically_normal().string();
    SCOPED_TRACE(path);
    try {
      Config plain = Config::from_files({path});
      EXPECT_FALSE(plain.keys().empty());
      Config global = Config::from_files({path}, overrides[path]);
      global.validate_variables();
      EXPECT_GT(walk(global), 1u);
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_EQ(files, 59u);
}

TEST(ConfigConformance, EveryCaseFindsItsReaderBlock) {
  size_t checked = 0;
  for (const Case& c : load_cases()) {
    if (c.config.empty() || c.section.empty()) continue;
    SCOPED_TRACE(c.name);
    try {
      Config global = Config::from_files({(kConformance / c.config).string()}, c.overrides);
      global.validate_variables();
      Config reader = global.get_block(c.section).get_block("reader");
      EXPECT_EQ(reader.path(), "global." + c.section + ".reader");
      EXPECT_FALSE(reader.keys().empty());
      ++checked;
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GT(checked, 150u);
}

// ---------------------------------------------------------------------------------------------------------
// §7 worked examples

TEST(ConfigExamples, DenseSimpleSection) {
  Config global = Config::from_files({config_path("CNTKTextFormatReader/dense.cntk")});
  global.validate_variables();
  Config simple = global.get_block("Simple");
  EXPECT_EQ(simple.path(), "global.Simple");
  Config reader = simple.get_block("reader");
  EXPECT_EQ(reader.path(), "global.Simple.reader");
  EXPECT_EQ(reader.get_string("readerType"), "CNTKTextFormatReader");
  EXPECT_EQ(reader.get_string("file"), "Simple_dense.txt");
  EXPECT_FALSE(reader.get_bool("randomize", true));
  EXPECT_EQ(reader.get_string("precision"), "float");  // one level up
  EXPECT_FALSE(reader.exists_current("precision"));
  EXPECT_EQ(reader.get_int("deviceId", 0), -1);  // two levels up
  EXPECT_FALSE(reader.exists("chunkSizeInBytes"));

  Config input = reader.get_block("input");
  EXPECT_EQ(input.keys(), (Strings{"features", "labels"}));
  Config features = input.get_block("features");
  EXPECT_EQ(features.path(), "global.Simple.reader.input.features");
  EXPECT_EQ(features.get_string("alias"), "F");
  EXPECT_EQ(features.get_uint("dim"), 2u);
  EXPECT_EQ(features.get_string("format"), "dense");
  EXPECT_EQ(features.get_string("definesMbSize"), "false");
  EXPECT_FALSE(features.get_bool("definesMbSize", true));
  Config labels = input.get_block("labels");
  EXPECT_EQ(labels.get_string("alias"), "L");
  EXPECT_FALSE(labels.exists_current("definesMbSize"));
}

TEST(ConfigExamples, DenseSimpleSectionWithDefMbSizeOverride) {
  Config global = Config::from_files({config_path("CNTKTextFormatReader/dense.cntk")}, {"defMBSize=true"});
  global.validate_variables();
  Config features = global.get_block("Simple").get_block("reader").get_block("input").get_block("features");
  EXPECT_TRUE(features.get_bool("definesMbSize", false));
}

TEST(ConfigExamples, MidLineCommentAndSevenStreams) {
  Config reader = Config::from_files({config_path("CNTKTextFormatReader/dense.cntk")})
                      .get_block("10x1_MI")
                      .get_block("reader");
  EXPECT_EQ(reader.get_uint("chunkSizeInBytes", 0), 50000u);
  EXPECT_TRUE(reader.get_bool("keepDataInMemory", false));
  EXPECT_EQ(reader.get_block("input").keys(),
            (Strings{"features1", "features2", "features3", "features4", "labels1", "labels2", "labels3"}));
}

TEST(ConfigExamples, EdgeCasesVariableSpelling) {
  Config global = Config::from_files({config_path("CNTKTextFormatReader/edge_cases.cntk")});
  Config blank = global.get_block("blank_lines").get_block("reader");
  EXPECT_TRUE(blank.get_bool("skipSequenceIds", false));
  Config ignored = global.get_block("blank_lines_ignored").get_block("reader");
  EXPECT_EQ(ignored.get_uint("maxErrors", 0), 2u);
  EXPECT_FALSE(ignored.get_bool("randomize", true));
  Config empty = global.get_block("empty_samples").get_block("reader").get_block("input");
  EXPECT_EQ(empty.keys(), (Strings{"features", "labels"}));
  EXPECT_EQ(empty.get_block("labels").get_string("alias"), "F1");
  EXPECT_EQ(empty.get_block("labels").get_string("format"), "sparse");
  EXPECT_EQ(empty.get_block("labels").get_uint("dim"), 10u);
  EXPECT_FALSE(empty.get_block("features").get_bool("definesMbSize", true));  // defMbSize vs $defMBSize$
}

TEST(ConfigExamples, CompositeWithTwoTextDeserializers) {
  Config section = Config::from_files({config_path("CNTKTextFormatReader/dense.cntk")})
                       .get_block("5x10_and_5x5_jagged_composite");
  Config reader = section.get_block("reader");
  EXPECT_FALSE(reader.exists("readerType"));
  EXPECT_TRUE(reader.get_bool("randomize", false));
  EXPECT_EQ(reader.get_string("precision"), "double");
  std::vector<Config> deserializers = reader.get_block_array("deserializers");
  ASSERT_EQ(deserializers.size(), 2u);
  const char* files[] = {"5x10_jagged.txt", "5x5_jagged.txt"};
  const char* streams[] = {"features1", "features2"};
  const char* aliases[] = {"F0", "F1"};
  const uint64_t dims[] = {10, 5};
  for (size_t i = 0; i < 2; ++i) {
    const Config& d = deserializers[i];
    EXPECT_EQ(d.path(),
              "global.5x10_and_5x5_jagged_composite.reader.deserializers[" + std::to_string(i) + "]");
    EXPECT_EQ(d.get_string("type"), "CNTKTextFormatDeserializer");
    EXPECT_EQ(d.get_string("module"), "CNTKTextFormatReader");
    EXPECT_EQ(d.get_string("file"), files[i]);
    EXPECT_FALSE(d.exists("precision"));  // array elements are isolated
    Config input = d.get_block("input");
    EXPECT_EQ(input.keys(), (Strings{streams[i]}));
    Config stream = input.get_block(streams[i]);
    EXPECT_EQ(stream.get_string("alias"), aliases[i]);
    EXPECT_EQ(stream.get_uint("dim"), dims[i]);
    EXPECT_EQ(stream.get_string("type", "none"), "CNTKTextFormatDeserializer");  // through input's parent
  }
}

TEST(ConfigExamples, BracesSemicolonsAndVariablesInTheImageConfig) {
  Config global = Config::from_files({config_path("ImageReaderSimple_Config.cntk")});
  global.validate_variables();
  Config reader = global.get_block("Composite_Test").get_block("reader");
  EXPECT_EQ(reader.get_uint("verbosity", 9), 0u);
  EXPECT_FALSE(reader.get_bool("randomize", true));
  std::vector<Config> deserializers = reader.get_block_array("deserializers");
  ASSERT_EQ(deserializers.size(), 1u);
  const Config& d = deserializers[0];
  EXPECT_EQ(d.get_string("type"), "ImageDeserializer");
  EXPECT_EQ(d.get_string("module"), "ImageReader");
  EXPECT_EQ(d.get_string("file"), "./ImageReaderSimple_map.txt");  // $MapFile$ through $RootDir$
  Config input = d.get_block("input");
  EXPECT_EQ(input.keys(), (Strings{"features", "labels"}));
  EXPECT_EQ(input.get_block("labels").get_uint("labelDim"), 4u);
  Config features = input.get_block("features");
  std::vector<Config> transforms = features.get_block_array("transforms");
  ASSERT_EQ(transforms.size(), 4u);
  EXPECT_EQ(transforms[0].get_string("type"), "Crop");
  EXPECT_EQ(transforms[0].get_string("cropType"), "Center");
  EXPECT_EQ(transforms[0].get_double("sideRatio", 0), 1.0);
  EXPECT_EQ(transforms[1].get_string("type"), "Scale");
  EXPECT_EQ(transforms[1].get_uint("width"), 4u);
  EXPECT_EQ(transforms[1].get_uint("height"), 8u);
  EXPECT_EQ(transforms[2].get_string("type"), "Mean");
  EXPECT_EQ(transforms[2].keys(), (Strings{"type"}));
  EXPECT_EQ(transforms[3].get_string("type"), "Transpose");
  EXPECT_EQ(transforms[3].path(),
            "global.Composite_Test.reader.deserializers[0].input.features.transforms[3]");

  // The legacy section of the same file: `"auto"` is not a boolean.
  Config legacy = global.get_block("Simple_Test").get_block("reader");
  EXPECT_EQ(legacy.get_string("randomize"), "auto");
  EXPECT_THROW(legacy.get_bool("randomize", false), ConfigError);
  EXPECT_EQ(legacy.get_block("features").get_string("cropType"), "Center");
  EXPECT_EQ(legacy.get_uint("traceLevel", 0), 1u);
}

TEST(ConfigExamples, ImageConfigWithCommandLineVariables) {
  Config global =
      Config::from_files({config_path("ImageReaderSimple_Config.cntk")},
                         {"MapFile=\"$RootDir$/Base64ImageReaderSimple_map.txt\"",
                          "DeserializerType=\"Base64ImageDeserializer\"", "useNumericSequenceKeys=true"});
  global.validate_variables();
  Config reader = global.get_block("Composite_Test").get_block("reader");
  EXPECT_TRUE(reader.get_bool("useNumericSequenceKeys", false));  // top-level override seen by the reader
  Config d = reader.get_block_array("deserializers").at(0);
  EXPECT_EQ(d.get_string("type"), "Base64ImageDeserializer");
  EXPECT_EQ(d.get_string("file"), "./Base64ImageReaderSimple_map.txt");
}

TEST(ConfigExamples, ImageDeserializersWithSeveralOverrides) {
  Config global =
      Config::from_files({config_path("ImageDeserializers.cntk")},
                         {"MapFile=\"$RootDir$/Base64WithStringIds_map.txt\"",
                          "SecondMapFile=\"$RootDir$/Base64WithStringIdsAnother_map.txt\"",
                          "Deserializer=\"Base64ImageDeserializer\"", "useNumericSequenceKeys=false"});
  std::vector<Config> d =
      global.get_block("ImageAndImageReaderSimple_Test").get_block("reader").get_block_array("deserializers");
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].get_string("type"), "Base64ImageDeserializer");
  EXPECT_EQ(d[0].get_string("file"), "./Base64WithStringIds_map.txt");
  EXPECT_EQ(d[1].get_string("file"), "./Base64WithStringIdsAnother_map.txt");
  EXPECT_EQ(d[0].get_block("input").keys(), (Strings{"features1", "labels1"}));
  // `transforms (` without '=' and an empty `transforms = ()`.
  Config zip = global.get_block("SimpleZip").get_block("reader").get_block_array("deserializers").at(0);
  EXPECT_EQ(zip.get_block("input").get_block("features").get_block_array("transforms").size(), 3u);
  Config dots =
      global.get_block("3DotsExpansionTest").get_block("reader").get_block_array("deserializers").at(0);
  EXPECT_TRUE(dots.get_block("input").get_block("features").get_array("transforms").empty());
}

TEST(ConfigExamples, HtkOverridesMergeAndSplit) {
  Config global = Config::from_files({config_path("HTKMLFReaderNoIVectorSimple_Config.cntk")},
                                     {"Simple_Test=[reader=[readerType=HTKDeserializers]]"});
  Config reader = global.get_block("Simple_Test").get_block("reader");
  EXPECT_EQ(reader.get_string("readerType"), "HTKDeserializers");
  EXPECT_EQ(reader.get_block("features").get_string("scpFile"), "./features.rscp");  // $DataDir$ -> $RootDir$
  EXPECT_EQ(reader.get_string("readMethod"), "blockRandomize");

  Config ivector = Config::from_files({config_path("HTKMLFReaderIVectorSimple_Config.cntk")},
                                      {"frameMode=false", "truncated=true, truncationLength=30",
                                       "shouldExpand=true", "hashSequenceKeys=true"});
  ivector.validate_variables();
  Config r = ivector.get_block("Simple_TestDeserializers").get_block("reader");
  EXPECT_FALSE(r.get_bool("frameMode", true));
  EXPECT_TRUE(r.get_bool("truncated", false));
  EXPECT_EQ(r.get_uint("truncationLength", 0), 30u);
  std::vector<Config> d = r.get_block_array("deserializers");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_TRUE(d[1].get_bool("expandToUtterance", false));
  EXPECT_EQ(d[2].get_block("input").get_block("labels").get_uint("labelDim"), 9000u);
  EXPECT_EQ(ivector.get_string("}"), "true");  // the file's stray closing brace
}

TEST(ConfigExamples, ErrorLocationsInARealConfig) {
  // dense.cntk with a broken override: the location names the override, the key path the section.
  ConfigError e = config_test::expect_config_error([&] {
    Config::from_files({config_path("CNTKTextFormatReader/dense.cntk")}, {"Simple=[reader=[randomize=]]"})
        .get_block("Simple")
        .get_block("reader");
  });
  EXPECT_EQ(e.file(), "<override 1>");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 17u);
  EXPECT_EQ(e.key_path(), "global.Simple.reader.randomize");
}

}  // namespace
}  // namespace cntkio
