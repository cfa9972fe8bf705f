// Plugins (cntkio/plugin.hpp, src/spec/module_loader.cpp): the search for a `module`, the errors when a
// library is missing, is no plugin or was built for another ABI, CNTK's built-in module names, and types a
// plugin registers read through a config and through a ReaderSpec. The test plugins (tests/plugin/modules)
// link the shared libcntkio while this program links the static one, as the `cntkio` CLI does: the types,
// options and exceptions cross between two copies of the library.
//
// A module is loaded once per process, so every test loads its own module names (copies of the plugins).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cntkio/minibatch_source.hpp"
#include "cntkio/plugin.hpp"
#include "cntkio/registry.hpp"
#include "config/config_test_util.hpp"
#include "plugin/modules/test_plugin_options.hpp"

namespace cntkio {
namespace {

using config_test::expect_config_error;
using config_test::TempDir;

// Sets CNTKIO_PLUGIN_PATH (unsets it for nullopt) for the life of the object.
class ScopedPluginPath {
 public:
  explicit ScopedPluginPath(const std::optional<std::string>& value) {
    if (const char* old = std::getenv("CNTKIO_PLUGIN_PATH")) old_ = old;
    if (value) {
      ::setenv("CNTKIO_PLUGIN_PATH", value->c_str(), 1);
    } else {
      ::unsetenv("CNTKIO_PLUGIN_PATH");
    }
  }
  ~ScopedPluginPath() {
    if (old_) {
      ::setenv("CNTKIO_PLUGIN_PATH", old_->c_str(), 1);
    } else {
      ::unsetenv("CNTKIO_PLUGIN_PATH");
    }
  }
  ScopedPluginPath(const ScopedPluginPath&) = delete;
  ScopedPluginPath& operator=(const ScopedPluginPath&) = delete;

 private:
  std::optional<std::string> old_;
};

// Copies the built library `library` to `folder`/`name`; returns the copy's path.
std::string install_module(const std::string& library, const std::string& folder, const std::string& name) {
  std::filesystem::create_directories(folder);
  const std::string target = folder + "/" + name;
  std::filesystem::copy_file(library, target, std::filesystem::copy_options::overwrite_existing);
  return target;
}

// Asserts that every text of `parts` occurs in `text`, in this order.
void expect_in_order(const std::string& text, const std::vector<std::string>& parts) {
  size_t from = 0;
  for (const std::string& part : parts) {
    const size_t at = text.find(part, from);
    ASSERT_NE(at, std::string::npos) << "'" << part << "' missing (in order) from:\n" << text;
    from = at + part.size();
  }
}

// One sequence as a reader delivered it: its key and the values of its samples of stream 0, in order.
struct ReadSequence {
  std::string key;
  std::vector<double> values;
  friend bool operator==(const ReadSequence&, const ReadSequence&) = default;
};

// Reads minibatches of `source` (started already) until the epoch ends or `limit` minibatches were read.
std::vector<ReadSequence> read_sequences(MinibatchSource& source, size_t limit = SIZE_MAX) {
  std::vector<ReadSequence> out;
  Minibatch minibatch;
  for (size_t n = 0; n < limit && source.next_minibatch(minibatch); ++n) {
    const StreamBatch& batch = minibatch.streams.at(0);
    const size_t dim = batch.info.sample_dim();
    for (const Layout::Entry& entry : batch.layout.entries) {
      if (entry.is_gap) continue;
      ReadSequence sequence{minibatch.keys.at(entry.sequence_index), {}};
      for (ptrdiff_t t = entry.t_begin; t < entry.t_end; ++t) {
        const size_t column = static_cast<size_t>(t) * batch.layout.num_parallel + entry.row;
        for (size_t row = 0; row < dim; ++row) sequence.values.push_back(batch.value_at(row, column));
      }
      out.push_back(std::move(sequence));
    }
  }
  return out;
}

// What the test plugin's sequence `key` holds (test_plugin_options.hpp) after adding `amount`.
std::vector<double> expected_values(uint64_t key, uint32_t length, double amount) {
  std::vector<double> out;
  for (uint32_t t = 0; t < length; ++t) {
    const double value = static_cast<double>(10 * key + t);
    out.push_back(value + amount);
    out.push_back(-value + amount);
  }
  return out;
}

std::string reader_config(const std::string& deserializer_keys) {
  return "reader = [\n"
         "  randomize = false\n"
         "  deserializers = ([\n" +
         deserializer_keys +
         "  ])\n"
         "]\n";
}

ReaderSpec spec_of_config_file(const std::string& file) {
  return ReaderSpec::from_config(Config::from_files({file}).get_block("reader"));
}

TEST(PluginLoader, MissingLibraryListsEveryPlaceSearchedInOrder) {
  TempDir dir;
  const ScopedPluginPath env(dir.path("first") + "::" + dir.path("second"));
  const ConfigError e = expect_config_error([&] { load_module("cntkio_test_absent", dir.path("config")); });
  EXPECT_EQ(e.key_path(), "module");
  const std::string message = e.what();
  EXPECT_NE(message.find("Cannot load module 'cntkio_test_absent'"), std::string::npos) << message;
  expect_in_order(message, {dir.path("config") + "/libcntkio_test_absent.so (not there)",
                            dir.path("config") + "/cntkio_test_absent.so (not there)",
                            dir.path("config") + "/cntkio_test_absent (not there)",
                            dir.path("first") + "/libcntkio_test_absent.so (not there)",
                            dir.path("first") + "/cntkio_test_absent (not there)",
                            dir.path("second") + "/libcntkio_test_absent.so (not there)",
                            dir.path("second") + "/cntkio_test_absent (not there)",
                            "libcntkio_test_absent.so through the system loader",
                            "cntkio_test_absent through the system loader"});
}

TEST(PluginLoader, MissingLibrarySaysThatThePluginPathIsNotSet) {
  const ScopedPluginPath env(std::nullopt);
  const ConfigError e = expect_config_error([&] { load_module("cntkio_test_absent_no_path"); });
  expect_in_order(e.what(), {"CNTKIO_PLUGIN_PATH (not set or empty)",
                             "libcntkio_test_absent_no_path.so through the system loader"});
}

TEST(PluginLoader, MissingModuleOfAConfigIsLocatedAtItsKey) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  const std::string config =
      dir.write("reader.cntk", reader_config("    type = \"PluginTestDeserializer\"\n"
                                             "    module = \"cntkio_test_absent_cfg\"\n"));
  const ConfigError e = expect_config_error([&] { spec_of_config_file(config); });
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), 5u);
  EXPECT_NE(std::string(e.what()).find(dir.path("libcntkio_test_absent_cfg.so") + " (not there)"),
            std::string::npos)
      << e.what();
}

TEST(PluginLoader, LibraryWithoutEntryPointsIsRefusedWithTheSearch) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  const std::string library =
      install_module(CNTKIO_TEST_NO_ENTRY, dir.path("plugins"), "libcntkio_test_noentry.so");
  const ConfigError e = expect_config_error([&] { load_module("cntkio_test_noentry", dir.path("plugins")); });
  const std::string message = e.what();
  EXPECT_NE(message.find("'" + library + "' is not a cntkio plugin"), std::string::npos) << message;
  EXPECT_NE(message.find("cntkio_plugin_abi_version"), std::string::npos) << message;
  expect_in_order(message, {"Searched, in order", library + " (taken)"});
}

TEST(PluginLoader, OtherAbiVersionIsRefusedBeforeItRegisters) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  const std::string library =
      install_module(CNTKIO_TEST_OTHER_ABI, dir.path("plugins"), "libcntkio_test_abi.so");
  const ConfigError e = expect_config_error([&] { load_module("cntkio_test_abi", dir.path("plugins")); });
  const std::string message = e.what();
  EXPECT_NE(message.find("'" + library + "' was built for plugin ABI version " +
                         std::to_string(CNTKIO_PLUGIN_ABI_VERSION + 1) + ", but this cntkio"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("has version " + std::to_string(CNTKIO_PLUGIN_ABI_VERSION)), std::string::npos);
  expect_in_order(message, {"Searched, in order", library + " (taken)"});
  EXPECT_EQ(find_deserializer_type("OtherAbiMustNotRegister"), nullptr);
}

TEST(PluginLoader, RegistrationThatThrowsIsAConfigErrorNamingTheModule) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  install_module(CNTKIO_TEST_PLUGIN_THROWS, dir.path("plugins"), "libcntkio_test_throws.so");
  const ConfigError e = expect_config_error([&] { load_module("cntkio_test_throws", dir.path("plugins")); });
  const std::string message = e.what();
  EXPECT_NE(
      message.find("Cannot load module 'cntkio_test_throws': its registration function failed: the test "
                   "plugin's registration gives up"),
      std::string::npos)
      << message;
}

TEST(PluginLoader, BuiltinModuleNamesOfCntkLoadNothing) {
  TempDir dir;
  // Libraries of those names that would be refused if anything were loaded.
  for (const char* name : {"libImageReader.so", "libCNTKTextFormatReader.so", "HTKDeserializers.so"}) {
    install_module(CNTKIO_TEST_OTHER_ABI, dir.path("plugins"), name);
  }
  const ScopedPluginPath env(dir.path("plugins"));
  for (const char* module :
       {"CNTKTextFormatReader", "CNTKBinaryReader", "HTKDeserializers", "HTKMLFReader", "ImageReader",
        "Cntk.Deserializers.TextFormat", "Cntk.Deserializers.Image", "imagereader", "htkdeserializers"}) {
    EXPECT_TRUE(is_builtin_module(module)) << module;
    EXPECT_NO_THROW(load_module(module, dir.path("plugins"))) << module;
  }
  EXPECT_FALSE(is_builtin_module("cntkio_npy"));
}

TEST(PluginLoader, NulInAModuleNameIsAUsageError) {
  EXPECT_THROW(load_module(std::string("cntkio_test\0evil", 16)), UsageError);
}

TEST(PluginLoader, PluginPathFoldersAreSearchedInOrder) {
  TempDir dir;
  install_module(CNTKIO_TEST_PLUGIN_SECOND, dir.path("second"), "libcntkio_test_env.so");
  install_module(CNTKIO_TEST_OTHER_ABI, dir.path("third"), "libcntkio_test_env.so");  // never reached
  const ScopedPluginPath env(dir.path("first") + ":" + dir.path("second") + ":" + dir.path("third"));
  ASSERT_NO_THROW(load_module("cntkio_test_env"));
  EXPECT_NE(find_deserializer_type("PluginTestSecondDeserializer"), nullptr);
  EXPECT_NE(find_transform_type("PluginTestSecondAdd"), nullptr);
}

TEST(PluginLoader, ConfigFolderIsSearchedBeforeThePluginPath) {
  TempDir dir;
  // The plugin path holds a good plugin, the config's folder one for another ABI: the config's folder wins.
  install_module(CNTKIO_TEST_PLUGIN, dir.path("plugins"), "libcntkio_test_first.so");
  const std::string refused =
      install_module(CNTKIO_TEST_OTHER_ABI, dir.path("config"), "libcntkio_test_first.so");
  const ScopedPluginPath env(dir.path("plugins"));
  const std::string config =
      dir.write("config/reader.cntk", reader_config("    type = \"PluginTestDeserializer\"\n"
                                                    "    module = \"cntkio_test_first\"\n"));
  const ConfigError e = expect_config_error([&] { spec_of_config_file(config); });
  EXPECT_NE(std::string(e.what()).find("'" + refused + "' was built for plugin ABI version"),
            std::string::npos)
      << e.what();
}

TEST(PluginLoader, ModuleIsLoadedOncePerProcess) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  const std::string library =
      install_module(CNTKIO_TEST_PLUGIN, dir.path("plugins"), "libcntkio_test_once.so");
  load_module("cntkio_test_once", dir.path("plugins"));
  std::filesystem::remove(library);
  EXPECT_NO_THROW(load_module("cntkio_test_once", dir.path("plugins")));
}

TEST(PluginTypes, ConfigReadsThroughModuleFoundInTheConfigFolderWithItsTransform) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  install_module(CNTKIO_TEST_PLUGIN, dir.path(""), "libcntkio_test_config_dir.so");
  const std::string config = dir.write(
      "reader.cntk",
      reader_config(
          "    type = \"PluginTestDeserializer\"\n"
          "    module = \"cntkio_test_config_dir\"\n"
          "    sequences = 6\n"
          "    length = 3\n"
          "    input = [ x = [ transforms = (\n"
          "      [ type = \"PluginTestAdd\" ; module = \"cntkio_test_config_dir\" ; amount = 0.5 ]:\n"
          "      [ type = \"PluginTestAdd\" ; amount = 2 ]\n"
          "    ) ] ]\n"));
  const ReaderSpec spec = spec_of_config_file(config);
  ASSERT_EQ(spec.deserializers.size(), 1u);
  EXPECT_EQ(spec.deserializers[0].module, "cntkio_test_config_dir");
  ASSERT_EQ(spec.deserializers[0].transforms.size(), 1u);
  ASSERT_EQ(spec.deserializers[0].transforms[0].transforms.size(), 2u);
  EXPECT_EQ(spec.deserializers[0].transforms[0].transforms[0].module, "cntkio_test_config_dir");

  std::unique_ptr<MinibatchSource> source = MinibatchSource::create(spec);
  source->start_epoch(7, 0, kFullSweep);
  const std::vector<ReadSequence> read = read_sequences(*source);
  ASSERT_EQ(read.size(), 6u);
  for (uint64_t k = 0; k < 6; ++k) {
    EXPECT_EQ(read[k], (ReadSequence{std::to_string(k), expected_values(k, 3, 2.5)})) << "sequence " << k;
  }
}

TEST(PluginTypes, MissingModuleOfATransformIsLocatedAtItsKey) {
  TempDir dir;
  const ScopedPluginPath env(std::nullopt);
  const std::string config =
      dir.write("reader.cntk", reader_config("    type = \"PluginTestDeserializer\"\n"
                                             "    module = \"" CNTKIO_TEST_PLUGIN "\"\n"
                                             "    input = [ x = [ transforms = (\n"
                                             "      [ type = \"PluginTestAdd\"\n"
                                             "        module = \"cntkio_test_absent_transform\" ]\n"
                                             "    ) ] ]\n"));
  const ConfigError e = expect_config_error([&] { spec_of_config_file(config); });
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), 8u);
  EXPECT_NE(std::string(e.what()).find(dir.path("libcntkio_test_absent_transform.so") + " (not there)"),
            std::string::npos)
      << e.what();
}

TEST(PluginTypes, UnknownTransformTypeIsLocatedAndListsTheRegisteredOnes) {
  TempDir dir;
  const std::string config =
      dir.write("reader.cntk", reader_config("    type = \"PluginTestDeserializer\"\n"
                                             "    module = \"" CNTKIO_TEST_PLUGIN "\"\n"
                                             "    input = [ x = [ transforms = (\n"
                                             "      [ type = \"PluginTestMultiply\" ]\n"
                                             "    ) ] ]\n"));
  const ConfigError e = expect_config_error([&] { spec_of_config_file(config); });
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), 7u);
  EXPECT_NE(std::string(e.what()).find("Unknown transform type 'PluginTestMultiply' (registered: "),
            std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("PluginTestAdd"), std::string::npos) << e.what();
}

TEST(PluginTypes, ConfigErrorOfThePluginIsCaughtAsConfigError) {
  TempDir dir;
  const std::string config =
      dir.write("reader.cntk", reader_config("    type = \"PluginTestDeserializer\"\n"
                                             "    module = \"" CNTKIO_TEST_PLUGIN "\"\n"
                                             "    fail = \"config\"\n"));
  const ConfigError e = expect_config_error([&] { spec_of_config_file(config); });
  EXPECT_EQ(e.cntk_text(), "The test plugin refuses this section.");
  EXPECT_EQ(e.file(), config);
  EXPECT_EQ(e.line(), 6u);
}

TEST(PluginTypes, FormatErrorOfThePluginIsCaughtAsFormatError) {
  load_module(CNTKIO_TEST_PLUGIN);
  ReaderSpec spec;
  spec.source.randomize = false;
  DeserializerSpec d;
  d.type = "PluginTestDeserializer";
  d.options = cntkio_test_plugin::Options{8, 2, "x", "load"};
  spec.deserializers.push_back(d);
  std::unique_ptr<MinibatchSource> source = MinibatchSource::create(spec);
  source->start_epoch(4, 0, kFullSweep);
  try {
    read_sequences(*source);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.cntk_text(), "The test plugin refuses chunk 1.");
    EXPECT_EQ(e.location().file, "test-plugin-data");
    EXPECT_EQ(e.location().byte_offset, 1u);
  }
}

// A ReaderSpec built in C++ with the plugin's option types, randomized, read by two workers and resumed
// from a checkpoint.
TEST(PluginTypes, ReaderSpecWithPluginTypesReadsByTwoWorkersAndResumes) {
  ReaderSpec spec;
  spec.source.randomize = true;
  spec.source.seed = 5;
  spec.source.element_type = ElementType::kDouble;
  DeserializerSpec d;
  d.type = "PluginTestDeserializer";
  d.module = CNTKIO_TEST_PLUGIN;
  d.options = cntkio_test_plugin::Options{17, 3, "x", ""};
  d.transforms.push_back({"x", {TransformSpec{"PluginTestAdd", "", cntkio_test_plugin::AddOptions{0.25}}}});
  spec.deserializers.push_back(d);

  std::multiset<std::string> keys;
  for (size_t rank = 0; rank < 2; ++rank) {
    std::unique_ptr<MinibatchSource> reference = MinibatchSource::create(spec);
    reference->start_epoch(6, 0, kFullSweep, rank, 2);
    const std::vector<ReadSequence> whole = read_sequences(*reference);
    for (const ReadSequence& sequence : whole) {
      keys.insert(sequence.key);
      EXPECT_EQ(sequence.values, expected_values(std::stoull(sequence.key), 3, 0.25)) << sequence.key;
    }

    // Interrupted after two minibatches and resumed in a new reader: the same sequences follow.
    std::unique_ptr<MinibatchSource> first = MinibatchSource::create(spec);
    first->start_epoch(6, 0, kFullSweep, rank, 2);
    std::vector<ReadSequence> resumed = read_sequences(*first, 2);
    const std::string state = first->state().to_json();
    std::unique_ptr<MinibatchSource> second = MinibatchSource::create(spec);
    second->start_epoch(6, 0, kFullSweep, rank, 2);
    second->restore(ReaderState::from_json(state));
    for (ReadSequence& sequence : read_sequences(*second)) resumed.push_back(std::move(sequence));
    EXPECT_EQ(resumed, whole) << "rank " << rank;
  }
  std::multiset<std::string> all;
  for (int k = 0; k < 17; ++k) all.insert(std::to_string(k));
  EXPECT_EQ(keys, all);  // every sequence exactly once across the two workers
}

TEST(PluginTypes, TransformOfAStreamTheDeserializerLacksIsAUsageError) {
  ReaderSpec spec;
  DeserializerSpec d;
  d.type = "PluginTestDeserializer";
  d.module = CNTKIO_TEST_PLUGIN;
  d.transforms.push_back({"y", {TransformSpec{"PluginTestAdd", "", {}}}});
  spec.deserializers.push_back(d);
  try {
    MinibatchSource::create(spec);
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("name the stream 'y', which it does not have (its streams: 'x')"),
              std::string::npos)
        << e.what();
  }
}

// Two entries for one stream are one chain, in the order given (the later entry did replace the earlier).
TEST(PluginTypes, TwoTransformEntriesOfAStreamAreAppliedInOrder) {
  ReaderSpec spec;
  spec.source.randomize = false;
  spec.source.element_type = ElementType::kDouble;
  DeserializerSpec d;
  d.type = "PluginTestDeserializer";
  d.module = CNTKIO_TEST_PLUGIN;
  d.options = cntkio_test_plugin::Options{4, 2, "x", ""};
  d.transforms.push_back({"x", {TransformSpec{"PluginTestAdd", "", cntkio_test_plugin::AddOptions{10}}}});
  d.transforms.push_back({"x", {TransformSpec{"PluginTestAdd", "", cntkio_test_plugin::AddOptions{3}}}});
  spec.deserializers.push_back(d);
  std::unique_ptr<MinibatchSource> source = MinibatchSource::create(spec);
  source->start_epoch(4, 0, kFullSweep);
  const std::vector<ReadSequence> read = read_sequences(*source);
  ASSERT_EQ(read.size(), 4u);
  for (uint64_t k = 0; k < 4; ++k) EXPECT_EQ(read[k].values, expected_values(k, 2, 13)) << k;
}

// What a plugin gets wrong is an error naming its type and module, before anything reaches a minibatch: a
// sparse index past the dimension would be written outside the minibatch's buffers, a sequence longer than
// listed would break the minibatch and epoch counts.
size_t read_samples_of_plugin(const std::string& fail, const std::string& transform_option = {}) {
  ReaderSpec spec;
  spec.source.randomize = false;
  DeserializerSpec d;
  d.type = "PluginTestDeserializer";
  d.module = CNTKIO_TEST_PLUGIN;
  d.options = cntkio_test_plugin::Options{8, 3, "x", fail};
  if (!transform_option.empty()) {  // "plain" or "addsASample"
    d.transforms.push_back(
        {"x",
         {TransformSpec{"PluginTestAdd", "",
                        cntkio_test_plugin::AddOptions{1, transform_option == "addsASample"}}}});
  }
  spec.deserializers.push_back(d);
  std::unique_ptr<MinibatchSource> source = MinibatchSource::create(spec);
  source->start_epoch(5, 0, kFullSweep);
  Minibatch mb;
  size_t samples = 0;
  while (source->next_minibatch(mb)) samples += mb.streams[0].layout.num_samples();
  return samples;
}

TEST(PluginGuard, DataAPluginGetsWrongIsAFormatErrorNamingItAndTheSequence) {
  EXPECT_EQ(read_samples_of_plugin("sparse"), 24u);  // a sparse stream delivered right
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sparse_oob", "delivered the sparse index 2, outside the stream's dimension 2"},
      {"long", "delivered 4 samples where its sequence list says 3"},
      {"short", "delivered a sequence of 2 samples where its sequence list says 3"}};
  for (const auto& [fail, text] : cases) {
    try {
      read_samples_of_plugin(fail);
      ADD_FAILURE() << fail << ": no error";
    } catch (const FormatError& e) {
      const std::string message = e.what();
      EXPECT_NE(
          message.find("The plugin deserializer 'PluginTestDeserializer' (module '" CNTKIO_TEST_PLUGIN "')"),
          std::string::npos)
          << message;
      EXPECT_NE(message.find(text), std::string::npos) << message;
      EXPECT_EQ(e.location().sequence_key, "0") << message;
    }
  }
}

TEST(PluginGuard, AnExceptionOfAnotherKindNamesThePluginAndTheChunk) {
  try {
    read_samples_of_plugin("throw");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "The plugin deserializer 'PluginTestDeserializer' (module '" CNTKIO_TEST_PLUGIN
              "') failed to load chunk 1: the test plugin's disk is on fire");
  }
}

TEST(PluginGuard, ATransformThatChangesTheLengthIsAnErrorNamingIt) {
  EXPECT_EQ(read_samples_of_plugin("", "plain"), 24u);
  try {
    read_samples_of_plugin("", "addsASample");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("The plugin transform 'PluginTestAdd' (module '" CNTKIO_TEST_PLUGIN
                                         "') turned a sequence of 3 samples into one of 4"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace cntkio
