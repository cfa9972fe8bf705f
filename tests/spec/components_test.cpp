// The image format as a component loaded on first use (src/spec/components.cpp): its names are known before
// it is loaded, and loading it late keeps the names a plugin registered first. This test program links the
// format in, so the "load" registers it from there; the file itself is loaded by the CLI, the Python module
// and the conformance runner (tests/startup, python/tests/test_startup.py, tests/conformance).
#include "spec/components.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cntkio/registry.hpp"

using namespace cntkio;

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether the image format is still to be loaded in this process (each test runs in its own under ctest).
bool image_format_unloaded() {
  return contains(spec_detail::unloaded_component_names(spec_detail::NameKind::kTransform), "Crop");
}

}  // namespace

#if CNTKIO_WITH_IMAGES
TEST(ImageComponent, ItsNamesAreListedBeforeItIsLoaded) {
  EXPECT_TRUE(contains(registered_deserializer_types(), "ImageDeserializer"));
  EXPECT_TRUE(contains(registered_deserializer_types(), "Base64ImageDeserializer"));
  EXPECT_TRUE(contains(registered_deserializer_types(), "CNTKTextFormatDeserializer"));
  EXPECT_TRUE(contains(registered_transform_types(), "Crop"));
  EXPECT_TRUE(contains(registered_reader_types(), "ImageReader"));
  EXPECT_TRUE(find_transform_type("Scale") != nullptr);
  EXPECT_FALSE(image_format_unloaded());
  EXPECT_TRUE(contains(registered_transform_types(), "Crop"));  // listed once loaded too
}

TEST(ImageComponent, LoadedLateItKeepsTheNamesAPluginRegisteredFirst) {
  if (!image_format_unloaded()) GTEST_SKIP() << "an earlier test of this process loaded the image format";
  DeserializerType deserializer;
  deserializer.name = "ImageDeserializer";
  deserializer.create = [](const DeserializerSpec&, const DeserializerContext&) {
    return std::shared_ptr<Deserializer>();
  };
  deserializer.traits.string_keys_by_default = true;  // the image format's is false
  register_deserializer(std::move(deserializer));
  ReaderType reader;
  reader.names = {"ImageReader", "PluginImageReader"};
  reader.spec_from_config = [](const Config&) { return ReaderSpec{}; };
  register_reader_type(std::move(reader));

  ASSERT_TRUE(find_transform_type("Crop") != nullptr);  // loads the image format
  EXPECT_FALSE(image_format_unloaded());
  ASSERT_TRUE(find_deserializer_type("Base64ImageDeserializer") != nullptr);
  EXPECT_TRUE(find_deserializer_type("ImageDeserializer")->traits.string_keys_by_default);
  const std::vector<std::string>& names = find_reader_type("imagereader")->names;
  EXPECT_TRUE(contains(names, "PluginImageReader"));
}
#endif

TEST(ImageComponent, AnUnknownNameLoadsNothing) {
  const bool unloaded = image_format_unloaded();
  EXPECT_TRUE(find_deserializer_type("NoSuchDeserializer") == nullptr);
  EXPECT_TRUE(find_transform_type("NoSuchTransform") == nullptr);
  EXPECT_EQ(image_format_unloaded(), unloaded);
}
