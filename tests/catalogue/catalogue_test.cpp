// The data-driven test of the malformed-input catalogue (catalogue.hpp): one GoogleTest instance per case.
#include "catalogue/catalogue.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

namespace fs = std::filesystem;
using namespace cntkio;
using namespace cntkio::catalogue;

namespace {

std::vector<Case> all_cases() {
  std::vector<Case> all;
  std::vector<std::vector<Case> (*)()> parts = {&config_cases, &ctf_cases, &cbf_cases, &io_cases, &htk_cases};
#if CNTKIO_WITH_IMAGES
  parts.push_back(&image_cases);
#endif
  for (auto* part : parts) {
    std::vector<Case> some = (*part)();
    all.insert(all.end(), std::make_move_iterator(some.begin()), std::make_move_iterator(some.end()));
  }
  return all;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = all_cases();
  return all;
}

std::string describe(const SourceLocation& l) {
  return "{file '" + l.file + "', line " + (l.line ? std::to_string(*l.line) : "-") + ", column " +
         (l.column ? std::to_string(*l.column) : "-") + ", offset " +
         (l.byte_offset ? std::to_string(*l.byte_offset) : "-") + ", stream '" + l.stream + "', key '" +
         l.sequence_key + "'}";
}

class FreshDir {
 public:
  explicit FreshDir(const std::string& name)
      : path_(fs::temp_directory_path() / ("cntkio_catalogue_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~FreshDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

class Catalogue : public ::testing::TestWithParam<size_t> {};

TEST_P(Catalogue, GivesTheCataloguedOutcome) {
  const Case& c = cases()[GetParam()];
  FreshDir dir(c.name);
  if (c.check) {
    c.check(dir.str());
    return;
  }
  const Outcome o = c.run(dir.str());
  const Expect& e = c.expect;
  ASSERT_EQ(to_string(o.kind), std::string(to_string(e.kind)))
      << "what(): " << o.what << "\ndata: " << o.data;
  if (e.kind != Kind::kNone) {
    if (e.text_exact && e.kind != Kind::kConfig && e.kind != Kind::kIo) {
      EXPECT_EQ(o.cntk_text, e.text) << o.what;
    } else {
      EXPECT_NE(o.what.find(e.text), std::string::npos) << "'" << e.text << "' not in: " << o.what;
    }
  }
  switch (e.kind) {
    case Kind::kFormat:
      EXPECT_EQ(describe(o.location), describe(e.location)) << o.what;
      // what() carries the location after CNTK's text.
      if (!e.location.file.empty()) {
        EXPECT_NE(o.what.find(e.location.file), std::string::npos) << o.what;
      }
      break;
    case Kind::kConfig:
      EXPECT_EQ(o.key_path, e.key_path) << o.what;
      EXPECT_EQ(o.config_file, e.config_file) << o.what;
      EXPECT_EQ(o.line, e.line) << o.what;
      EXPECT_EQ(o.column, e.column) << o.what;
      if (e.line != 0) {
        const std::string where =
            e.config_file + ":" + std::to_string(e.line) + ":" + std::to_string(e.column);
        EXPECT_NE(o.what.find(where), std::string::npos) << o.what;
      }
      break;
    case Kind::kIo:
      EXPECT_EQ(o.path, e.path) << o.what;
      EXPECT_EQ(o.error_number, e.error_number) << o.what;
      EXPECT_NE(o.what.find(e.path), std::string::npos) << o.what;
      break;
    default:
      break;
  }
  if (e.data) {
    EXPECT_EQ(o.data, *e.data) << o.what;
  }
  if (e.skips) {
    EXPECT_EQ(o.skips.errors, e.skips->errors) << o.what;
    EXPECT_EQ(o.skips.rows_skipped, e.skips->rows) << o.what;
    EXPECT_EQ(o.skips.samples_skipped, e.skips->samples) << o.what;
    EXPECT_EQ(o.skips.first_locations, e.skips->first_locations) << o.what;
  }
  if (e.sequences_dropped) {
    EXPECT_EQ(o.sequences_dropped, *e.sequences_dropped) << o.what;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Catalogue, ::testing::Range<size_t>(0, cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return cases()[info.param].name;
                         });

TEST(CatalogueSize, HoldsAtLeastAHundredUniquelyNamedCases) {
  std::set<std::string> names;
  for (const Case& c : cases()) EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
  EXPECT_GE(cases().size(), 100u);
}

}  // namespace
