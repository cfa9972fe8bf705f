// Rules of CNTK's config language (spec/config.md), one test per rule; "(verified)" examples of the spec are
// reproduced literally.
#include "cntkio/config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "config/config_test_util.hpp"

namespace cntkio {
namespace {

using config_test::expect_config_error;
using config_test::TempDir;
using Strings = std::vector<std::string>;

// ---------------------------------------------------------------------------------------------------------
// §2.1 records

TEST(ConfigRecords, NewlineCommaAndSemicolonSeparateRecords) {
  Config c = Config::from_text("a=1,b=2;c=3\nd = 4");
  EXPECT_EQ(c.keys(), (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(c.get_string("a"), "1");
  EXPECT_EQ(c.get_string("b"), "2");
  EXPECT_EQ(c.get_string("c"), "3");
  EXPECT_EQ(c.get_string("d"), "4");
}

TEST(ConfigRecords, CarriageReturnSeparatesRecordsInOverrides) {
  // Override strings are appended verbatim, so a CR in them reaches the parser as a separator.
  Config c = Config::from_text("", "<text>", {"a=1\rb=2"});
  EXPECT_EQ(c.get_string("a"), "1");
  EXPECT_EQ(c.get_string("b"), "2");
}

TEST(ConfigRecords, RecordWithoutEqualsIsFlagSetToTrue) {  // (verified)
  Config c = Config::from_text("flag\nother flag\n");
  EXPECT_EQ(c.get_string("flag"), "true");
  EXPECT_TRUE(c.get_bool("flag", false));
  EXPECT_EQ(c.get_string("other flag"), "true");  // the whole trimmed record is the key
}

TEST(ConfigRecords, QuotedValueEndsTheRecord) {  // (verified)
  Config c = Config::from_text("format = \"sparse\" definesMbSize=true\n");
  EXPECT_EQ(c.keys(), (Strings{"definesMbSize", "format"}));
  EXPECT_EQ(c.get_string("format"), "sparse");
  EXPECT_EQ(c.get_string("definesMbSize"), "true");
}

TEST(ConfigRecords, BareValueRunsToTheEndOfTheRecord) {  // (verified)
  Config c = Config::from_text("format = dense definesMbSize=true\n");
  EXPECT_EQ(c.keys(), (Strings{"format"}));
  EXPECT_EQ(c.get_string("format"), "dense definesMbSize=true");
}

TEST(ConfigRecords, FormsWithoutEquals) {  // (verified)
  Config c = Config::from_text("reader [ file = x ]\nq \"hello world\"\n");
  EXPECT_EQ(c.get_string("reader"), "[ file = x ]");
  EXPECT_EQ(c.get_block("reader").get_string("file"), "x");
  EXPECT_EQ(c.get_string("q"), "hello world");
}

TEST(ConfigRecords, BlockValuesKeepTheirBracketsAndSpanLines) {
  Config c = Config::from_text("r = [\n  a = 1\n  b = 2\n]\nafter = 3\n");
  EXPECT_EQ(c.get_string("r"), "[\n  a = 1\n  b = 2\n]\n");  // resolved line by line: each line ends in LF
  EXPECT_EQ(c.get_string("after"), "3");
  Config r = c.get_block("r");
  EXPECT_EQ(r.keys(), (Strings{"a", "b"}));
  EXPECT_EQ(r.get_uint("b"), 2u);
}

TEST(ConfigRecords, QuotesAreRemovedWithoutTrimmingAndSingleQuotesAreNotSpecial) {
  Config c = Config::from_text("q = \"  a b  \"\ns = 'x y'\nt =   padded\t \n");
  EXPECT_EQ(c.get_string("q"), "  a b  ");
  EXPECT_EQ(c.get_string("s"), "'x y'");
  EXPECT_EQ(c.get_string("t"), "padded");
}

TEST(ConfigRecords, QuotesProtectSeparatorsAndBrackets) {
  Config c = Config::from_text("a = \"x;y,z [ ( {\" b=2\n");
  EXPECT_EQ(c.get_string("a"), "x;y,z [ ( {");
  EXPECT_EQ(c.get_string("b"), "2");
}

TEST(ConfigRecords, BracesWorkLikeBracketsWithSemicolons) {
  Config c = Config::from_text("T = { reader = { verbosity = 0 ;  randomize = false } }\n");
  Config reader = c.get_block("T").get_block("reader");
  EXPECT_EQ(reader.keys(), (Strings{"randomize", "verbosity"}));
  EXPECT_EQ(reader.get_uint("verbosity"), 0u);
  EXPECT_FALSE(reader.get_bool("randomize", true));
}

TEST(ConfigRecords, SeparatorRightAfterOpenerIsUsedInsideTheBlock) {
  Config c = Config::from_text("r = [|x=1|y=a;b]\nv = (;a:b;c)\np = (./a:b)\n");
  Config r = c.get_block("r");
  EXPECT_EQ(r.get_string("x"), "1");
  EXPECT_EQ(r.get_string("y"), "a;b");
  EXPECT_EQ(c.get_array("v"), (Strings{"a:b", "c"}));
  EXPECT_EQ(c.get_array("p"), (Strings{"./a", "b"}));  // a leading "./" is a path, not a separator
}

TEST(ConfigRecords, StrayClosingBracketAtTopLevelBecomesAFlag) {
  // HTKMLFReaderIVectorSimple_Config.cntk ends with one '}' too many; CNTK reads it as a key.
  Config c = Config::from_text("a = { b = 1 }\n}\n");
  EXPECT_EQ(c.keys(), (Strings{"a", "}"}));
  EXPECT_EQ(c.get_string("}"), "true");
}

TEST(ConfigRecords, EmptyBlocks) {
  Config c = Config::from_text("a = []\nb = { }\n");
  EXPECT_TRUE(c.get_block("a").keys().empty());
  EXPECT_TRUE(c.get_block("b").keys().empty());
}

TEST(ConfigRecords, NoValueGivenIsAnError) {  // (verified)
  ConfigError e = expect_config_error([] { Config::from_text("a = 1\n  x =   \n", "cfg.cntk"); });
  EXPECT_EQ(e.file(), "cfg.cntk");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 3u);
  EXPECT_EQ(e.key_path(), "global.x");
  EXPECT_NE(std::string(e.what()).find("ParseValue: No value given for 'x'."), std::string::npos) << e.what();
}

TEST(ConfigRecords, EmptyQuotedValueIsAValue) {
  Config c = Config::from_text("x = \"\"\n");
  EXPECT_TRUE(c.exists("x"));
  EXPECT_EQ(c.find_string("x"), std::optional<std::string>(""));
  EXPECT_EQ(c.get_string("x", "dflt"), "");
  // ...but the mandatory accessor rejects an empty value.
  ConfigError e = expect_config_error([&] { c.get_string("x"); });
  EXPECT_NE(std::string(e.what()).find("required parameter missing"), std::string::npos) << e.what();
}

// ---------------------------------------------------------------------------------------------------------
// §1.2 comments

TEST(ConfigComments, FullLineCommentsAndBlankLinesAreDropped) {
  Config c = Config::from_text("# a comment\n   # indented comment\n\n \t \na = 1\n");
  EXPECT_EQ(c.keys(), (Strings{"a"}));
}

TEST(ConfigComments, MidLineCommentNeedsABlankBeforeTheHash) {
  Config c = Config::from_text(
      "chunkSizeInBytes = 50000 # ~ 1/2 input size\n"
      "a=1#x\n"
      "b=1#x # note\n"
      "c = 2\t# tab before\n");
  EXPECT_EQ(c.get_uint("chunkSizeInBytes"), 50000u);
  EXPECT_EQ(c.get_string("a"), "1#x");
  EXPECT_EQ(c.get_string("b"), "1#x # note");  // only the first '#' is examined
  EXPECT_EQ(c.get_string("c"), "2");
}

TEST(ConfigComments, QuotesDoNotProtectTheHash) {
  // `file = "a #b"` loses `#b"`, so the quote is never closed.
  ConfigError e = expect_config_error([] { Config::from_text("file = \"a #b\"\nx = 1\n", "q.cntk"); });
  EXPECT_EQ(e.file(), "q.cntk");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 8u);
  EXPECT_NE(std::string(e.what()).find("no closing \" found in parameters"), std::string::npos) << e.what();
}

TEST(ConfigComments, CommentsAreStrippedAgainWhenAValueIsFetched) {
  // CNTK re-applies comment stripping per line when resolving variables: a value starting with '#' vanishes.
  Config c = Config::from_text("x = \"#abc\"\n");
  EXPECT_EQ(c.find_string("x"), std::optional<std::string>(""));
}

TEST(ConfigComments, ByteOrderMarkAtTheStartOfAnyLineIsRemoved) {
  Config c = Config::from_text(
      "\xEF\xBB\xBF"
      "a = 1\n\xEF\xBB\xBF"
      "b = 2\n");
  EXPECT_EQ(c.keys(), (Strings{"a", "b"}));
  EXPECT_EQ(c.get_string("b"), "2");
}

TEST(ConfigComments, CrLfLineEndingsAreAccepted) {
  Config c = Config::from_text("a = 1\r\nb = [\r\n  x = 2\r\n]\r\n");
  EXPECT_EQ(c.get_string("a"), "1");
  EXPECT_EQ(c.get_block("b").get_string("x"), "2");
}

// ---------------------------------------------------------------------------------------------------------
// §1.3 includes

TEST(ConfigIncludes, IncludeLinesAreReplacedByTheFilesRecursively) {
  TempDir dir;
  std::string inner = dir.write("inner.cntk", "fromInner = 3\n");
  std::string a = dir.write("a.cntk", "fromA = 1\ninclude=" + inner + "\n");
  std::string b = dir.write("b.cntk", "fromB = 2\nshared = b\n");
  std::string main = dir.write("main.cntk", "shared = main\ninclude=" + a + "+" + b + "\nlast = 4\n");
  Config c = Config::from_files({main});
  EXPECT_EQ(c.keys(), (Strings{"fromA", "fromB", "fromInner", "last", "shared"}));
  EXPECT_EQ(c.get_string("shared"), "b");  // the included text sits where the include line was
  EXPECT_EQ(c.get_uint("fromInner"), 3u);
}

TEST(ConfigIncludes, AFileAlreadyReadIsSkipped) {
  TempDir dir;
  std::string a = dir.write("a.cntk", "x = fromA\n");
  std::string main = dir.write("main.cntk", "include=" + a + "\nx = main\ninclude=" + a + "\n");
  EXPECT_EQ(Config::from_files({main}).get_string("x"), "main");
  // A file given on the command line counts as read too.
  std::string other = dir.write("other.cntk", "x = other\ninclude=" + a + "\n");
  EXPECT_EQ(Config::from_files({a, other}).get_string("x"), "other");
}

TEST(ConfigIncludes, OnlyLowercaseIncludeAtColumnZero) {
  Config c = Config::from_text("  include=nothing.cntk\nInclude=x\n");
  EXPECT_EQ(c.get_string("include"), "x");  // both are plain keys; the second replaces the first
}

TEST(ConfigIncludes, VariablesAreNotAllowedInIncludePaths) {
  ConfigError e = expect_config_error([] { Config::from_text("a = 1\ninclude=$dir$/x.cntk\n", "m.cntk"); });
  EXPECT_EQ(e.file(), "m.cntk");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 1u);
}

TEST(ConfigIncludes, MissingIncludedFileIsAnIoError) {
  TempDir dir;
  std::string missing = dir.path("missing.cntk");
  try {
    Config::from_text("a = 1\ninclude=" + missing + "\n", "m.cntk");
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), missing);
    // where it was named: the include= line
    EXPECT_NE(std::string(e.what()).find("named at [file 'm.cntk', line 2"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------------------------------------
// §3.1-3.3 keys, order, merging

TEST(ConfigKeys, KeysAreCaseInsensitiveAndKeepTheFirstSpelling) {  // (verified)
  Config c = Config::from_text("READER=[x=1]\nreader=[y=2]\n");
  EXPECT_EQ(c.keys(), (Strings{"READER"}));
  EXPECT_TRUE(c.exists("Reader"));
  EXPECT_TRUE(c.exists_current("reader"));
  Config r = c.get_block("reader");
  EXPECT_EQ(r.path(), "global.READER");
  EXPECT_EQ(r.get_string("X"), "1");
  EXPECT_EQ(r.get_string("y"), "2");
}

TEST(ConfigKeys, IterationIsCaseInsensitiveAlphabetical) {  // (verified: zeta, Alpha)
  Config c = Config::from_text("zeta=1\nAlpha=2\n");
  EXPECT_EQ(c.keys(), (Strings{"Alpha", "zeta"}));
  // Lowercased byte order: digits < '_' < letters, whatever the case.
  Config d = Config::from_text("ba=1\nb_c=2\nB1=3\nBZ=4\nb=5\n");
  EXPECT_EQ(d.keys(), (Strings{"b", "B1", "b_c", "ba", "BZ"}));
}

TEST(ConfigKeys, StreamOrderOfAnInputBlockIsAlphabetical) {
  Config c =
      Config::from_text("input = [ labels = [ dim = 2 ]\n Features = [ dim = 3 ]\n aux = [ dim = 1 ] ]\n");
  EXPECT_EQ(c.get_block("input").keys(), (Strings{"aux", "Features", "labels"}));
}

TEST(ConfigMerge, LaterScalarAssignmentReplaces) {
  Config c = Config::from_text("a = 1\nA = 2\n");
  EXPECT_EQ(c.get_string("a"), "2");
}

TEST(ConfigMerge, BracketValueIsAppendedAndMergesTheBlocks) {
  Config c = Config::from_text("X=[a=1; b=2]\nx=[b=3; c=4]\n");
  EXPECT_EQ(c.get_string("x"), "[a=1; b=2] [b=3; c=4]");
  Config x = c.get_block("x");
  EXPECT_EQ(x.keys(), (Strings{"a", "b", "c"}));
  EXPECT_EQ(x.get_string("a"), "1");
  EXPECT_EQ(x.get_string("b"), "3");
  EXPECT_EQ(x.get_string("c"), "4");
}

TEST(ConfigMerge, OnlySquareBracketsMerge) {  // (verified)
  Config braces = Config::from_text("X={a=1}\nX={b=2}\n");
  EXPECT_EQ(braces.get_block("X").keys(), (Strings{"b"}));
  Config parens = Config::from_text("X=(a:b)\nX=(c)\n");
  EXPECT_EQ(parens.get_array("X"), (Strings{"c"}));
  // A '[' value after a non-empty scalar is appended as well, as CNTK does.
  Config scalar = Config::from_text("x = 5\nx = [a=1]\n");
  EXPECT_EQ(scalar.get_string("x"), "5 [a=1]");
  // A '[' value after a '{' block merges too.
  Config mixed = Config::from_text("X={a=1}\nX=[b=2]\n");
  EXPECT_EQ(mixed.get_block("X").keys(), (Strings{"a", "b"}));
}

TEST(ConfigMerge, OverrideMergesIntoANestedBlock) {  // (verified)
  Config c = Config::from_text("X=[ precision=float\n reader=[ file=a.txt\n randomize=true ] ]\n", "<text>",
                               {"X=[reader=[randomize=false]]"});
  Config reader = c.get_block("X").get_block("reader");
  EXPECT_EQ(reader.get_string("file"), "a.txt");
  EXPECT_FALSE(reader.get_bool("randomize", true));
  EXPECT_EQ(reader.get_string("precision"), "float");
}

TEST(ConfigMerge, SetFollowsInsertRules) {
  Config c = Config::from_text("b = [x=1]\n");
  c.set("B", "[y=2]");
  c.set("n", "5");
  c.set("N", "6");
  EXPECT_EQ(c.keys(), (Strings{"b", "n"}));
  EXPECT_EQ(c.get_block("b").keys(), (Strings{"x", "y"}));
  EXPECT_EQ(c.get_uint("n"), 6u);
  c.set("q", "\"raw\"");
  EXPECT_EQ(c.get_string("q"), "\"raw\"");  // stored as given
}

TEST(ConfigMerge, SetIsCopyOnWrite) {
  Config a = Config::from_text("x = 1\n");
  Config b = a;
  b.set("x", "2");
  EXPECT_EQ(a.get_string("x"), "1");
  EXPECT_EQ(b.get_string("x"), "2");
}

// ---------------------------------------------------------------------------------------------------------
// §3.4 scopes

constexpr const char* kScoped =
    "precision = float\n"
    "S = [\n"
    "  traceLevel = 2\n"
    "  reader = [\n"
    "    input = [ features = [ dim = 3 ] ]\n"
    "    deserializers = ( [ type = A ; file = a.txt ] : [ type = B ] )\n"
    "  ]\n"
    "]\n";

TEST(ConfigScopes, LookupFallsBackToEnclosingBlocks) {
  Config global = Config::from_text(kScoped);
  Config reader = global.get_block("S").get_block("reader");
  EXPECT_EQ(reader.path(), "global.S.reader");
  EXPECT_EQ(reader.get_string("precision"), "float");
  EXPECT_EQ(reader.get_uint("traceLevel", 0), 2u);
  EXPECT_TRUE(reader.exists("precision"));
  EXPECT_FALSE(reader.exists_current("precision"));
  EXPECT_FALSE(reader.exists("nothing"));
  EXPECT_EQ(reader.find_string("nothing"), std::nullopt);
  Config features = reader.get_block("input").get_block("features");
  EXPECT_EQ(features.path(), "global.S.reader.input.features");
  EXPECT_EQ(features.get_uint("traceLevel", 0), 2u);  // stream blocks do have parents
  EXPECT_EQ(features.get_uint("dim"), 3u);
}

TEST(ConfigScopes, ArrayElementsHaveNoParent) {
  Config reader = Config::from_text(kScoped).get_block("S").get_block("reader");
  std::vector<Config> deserializers = reader.get_block_array("deserializers");
  ASSERT_EQ(deserializers.size(), 2u);
  EXPECT_EQ(deserializers[0].path(), "global.S.reader.deserializers[0]");
  EXPECT_EQ(deserializers[1].path(), "global.S.reader.deserializers[1]");
  EXPECT_EQ(deserializers[0].get_string("file"), "a.txt");
  EXPECT_EQ(deserializers[1].get_string("type"), "B");
  EXPECT_FALSE(deserializers[0].exists("precision"));
  EXPECT_FALSE(deserializers[1].exists("file"));
  deserializers[0].set("precision", "float");  // what the composite reader does
  EXPECT_EQ(deserializers[0].get_string("precision"), "float");
}

TEST(ConfigScopes, BlockFoundInAParentIsNamedAfterWhereItWasFound) {
  Config global = Config::from_text("shared = [ a = 1 ]\nS = [ x = 1 ]\n");
  Config shared = global.get_block("S").get_block("shared");
  EXPECT_EQ(shared.path(), "global.shared");
  EXPECT_EQ(shared.get_string("a"), "1");
}

TEST(ConfigScopes, DefaultLiteralMeansUseTheDefault) {  // (verified for the typed accessor)
  Config global = Config::from_text("x = 5\nS = [ x = default\n s = default ]\n");
  Config s = global.get_block("S");
  EXPECT_EQ(s.get_uint("x", 7), 7u);  // `default` stops the search: the parent's 5 is not used
  EXPECT_EQ(s.get_int("x", -3), -3);
  EXPECT_TRUE(s.get_bool("x", true));
  EXPECT_EQ(s.get_double("x", 0.5), 0.5);
  EXPECT_EQ(s.get_string("s", "dflt"), "dflt");
  EXPECT_EQ(s.find_string("s"), std::nullopt);
  EXPECT_TRUE(s.exists("s"));
  ConfigError e = expect_config_error([&] { s.get_string("s"); });
  EXPECT_NE(std::string(e.what()).find("configparameters: required parameter missing: global.S:s"),
            std::string::npos)
      << e.what();
}

TEST(ConfigScopes, MissingMandatoryValues) {
  Config global = Config::from_text("a = 1\nS = [\n  b = 2\n]\n", "m.cntk");
  Config s = global.get_block("S");
  for (auto fn :
       {+[](const Config& c) { c.get_string("nope"); }, +[](const Config& c) { c.get_block("nope"); },
        +[](const Config& c) { c.get_uint("nope"); }, +[](const Config& c) { c.get_array("nope"); },
        +[](const Config& c) { c.get_block_array("nope"); }}) {
    ConfigError e = expect_config_error([&] { fn(s); });
    EXPECT_EQ(e.key_path(), "global.S.nope");
    EXPECT_EQ(e.file(), "m.cntk");  // where the block that lacks the key starts
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.column(), 5u);
  }
}

TEST(ConfigScopes, GetBlockOfANonBlockIsAnError) {
  Config global = Config::from_text("a = 1\nS = [\n  file = x.txt\n  arr = ( [a=1] )\n]\n", "m.cntk");
  Config s = global.get_block("S");
  ConfigError e = expect_config_error([&] { s.get_block("file"); });
  EXPECT_EQ(e.key_path(), "global.S.file");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.column(), 10u);
  EXPECT_NE(std::string(e.what()).find("not a block"), std::string::npos) << e.what();
  expect_config_error([&] { s.get_block("arr"); });
  expect_config_error([&] { global.get_block_array("a"); });  // "1" is not a block
}

TEST(ConfigScopes, LocationAndErrorHelpers) {
  Config s = Config::from_text("S = [\n  dim = 0\n]\n", "m.cntk").get_block("S");
  SourceLocation where = s.location("dim");
  EXPECT_EQ(where.file, "m.cntk");
  EXPECT_EQ(where.line, std::optional<uint64_t>(2));
  EXPECT_EQ(where.column, std::optional<uint64_t>(9));
  ConfigError e = s.error("dim", "dim must be positive");
  EXPECT_EQ(e.key_path(), "global.S.dim");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 9u);
  EXPECT_EQ(std::string(e.what()), "m.cntk:2:9: dim must be positive (key 'global.S.dim')");
}

// ---------------------------------------------------------------------------------------------------------
// §4 variables

TEST(ConfigVariables, ResolvedLazilyAtFetchTime) {  // (verified with defMBSize)
  Config c = Config::from_text("a = $b$\nb = 1\n");
  EXPECT_EQ(c.get_string("a"), "1");
  Config overridden = Config::from_text("a = $b$\nb = 1\n", "<text>", {"b=2"});
  EXPECT_EQ(overridden.get_string("a"), "2");
}

TEST(ConfigVariables, NamesAreCaseInsensitive) {
  Config c = Config::from_text("defMbSize=false\nS = [ definesMbSize=$defMBSize$ ]\n");
  EXPECT_FALSE(c.get_block("S").get_bool("definesMbSize", true));
}

TEST(ConfigVariables, ResolvedRecursively) {
  Config c =
      Config::from_text("RootDir = .\nMapFile = \"$RootDir$/map.txt\"\nS = [ file = \"$MapFile$\" ]\n");
  EXPECT_EQ(c.get_block("S").get_string("file"), "./map.txt");
  EXPECT_EQ(c.get_string("MapFile"), "./map.txt");
}

TEST(ConfigVariables, SeveralReferencesInOneValue) {
  Config c = Config::from_text("a = x\nb = y\nc = $a$-$b$/$a$$b$\n");
  EXPECT_EQ(c.get_string("c"), "x-y/xy");
}

TEST(ConfigVariables, ABlockIsResolvedInTheScopeWhereItWasFound) {
  // CNTK resolves the whole block text in the enclosing scope when the block is fetched, so `$x$` inside S
  // sees the global x, not S's own.
  Config c = Config::from_text("x = 1\nS = [ x = 2\n y = $x$ ]\n");
  EXPECT_EQ(c.get_block("S").get_string("y"), "1");
}

TEST(ConfigVariables, NonReferencesStayLiteral) {  // (verified: `$a` and `$ a$`)
  Config c = Config::from_text("a = 1\np = $a\nq = \"$ a$\"\nr = $1$\ns = 5$\nt = \"$a b$\"\n");
  EXPECT_EQ(c.get_string("p"), "$a");
  EXPECT_EQ(c.get_string("q"), "$ a$");
  EXPECT_EQ(c.get_string("r"), "$1$");
  EXPECT_EQ(c.get_string("s"), "5$");
  EXPECT_EQ(c.get_string("t"), "$a b$");
}

TEST(ConfigVariables, ReferencesInArrayElements) {
  Config c = Config::from_text("T = Crop\nS = [ d = ( [ type = $T$ ] : [ type = \"$T$2\" ] ) ]\n");
  std::vector<Config> elements = c.get_block("S").get_block_array("d");
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_EQ(elements[0].get_string("type"), "Crop");
  EXPECT_EQ(elements[1].get_string("type"), "Crop2");
}

TEST(ConfigVariables, UnknownVariableIsAnErrorAtTheReference) {
  const char* text = "a = 1\nS = [\n    file = \"$Nope$/x.txt\"\n]\n";
  Config c = Config::from_text(text, "v.cntk");
  ConfigError e = expect_config_error([&] { c.get_block("S"); });
  EXPECT_EQ(e.file(), "v.cntk");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.column(), 13u);
  EXPECT_EQ(e.key_path(), "global.S");
  EXPECT_NE(std::string(e.what()).find("No variable found with the name Nope."), std::string::npos)
      << e.what();
  // The whole-text validation finds it too.
  ConfigError v = expect_config_error([&] { c.validate_variables(); });
  EXPECT_EQ(v.line(), 3u);
  EXPECT_EQ(v.column(), 13u);
}

TEST(ConfigVariables, VariableSetToDefaultIsUnknown) {
  Config c = Config::from_text("v = default\na = $v$\n");
  ConfigError e = expect_config_error([&] { c.get_string("a"); });
  EXPECT_NE(std::string(e.what()).find("No variable found with the name v."), std::string::npos) << e.what();
}

TEST(ConfigVariables, DoubleDollarIsAnError) {
  Config c = Config::from_text("ok = 1\nprice = 5$$\n", "d.cntk");
  ConfigError e = expect_config_error([&] { c.get_string("price"); });
  EXPECT_EQ(e.file(), "d.cntk");
  EXPECT_EQ(e.line(), 2u);
  EXPECT_EQ(e.column(), 10u);
  EXPECT_EQ(e.key_path(), "global.price");
  EXPECT_NE(std::string(e.what()).find("$$ is not allowed"), std::string::npos) << e.what();
}

TEST(ConfigVariables, CycleIsAnErrorNotAnEndlessRecursion) {
  Config c = Config::from_text("a = $b$\nb = $c$\nc = $a$\nx = $a$\nself = [ y = $self$ ]\n", "c.cntk");
  ConfigError e = expect_config_error([&] { c.get_string("x"); });
  EXPECT_EQ(e.file(), "c.cntk");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.column(), 5u);
  EXPECT_NE(std::string(e.what()).find("cyclic variable reference: $a$ -> $b$ -> $c$ -> $a$"),
            std::string::npos)
      << e.what();
  ConfigError self = expect_config_error([&] { c.get_block("self"); });
  EXPECT_EQ(self.line(), 5u);
  EXPECT_EQ(self.column(), 14u);
  expect_config_error([&] { c.validate_variables(); });
}

TEST(ConfigVariables, ValueWithNewlineCannotBeSubstituted) {
  Config c = Config::from_text("B = [\n x = 1\n]\nc = $B$\n");
  ConfigError e = expect_config_error([&] { c.get_string("c"); });
  EXPECT_NE(std::string(e.what()).find("Newline characters are not allowed"), std::string::npos) << e.what();
  EXPECT_EQ(e.line(), 4u);
  EXPECT_EQ(e.column(), 5u);
}

TEST(ConfigVariables, WholeTextValidationPassesWhenAllVariablesAreDefined) {
  Config c = Config::from_text("a = $b$\nb = 1\nS = [ x = $a$ ]\n# $commented$ out\n");
  EXPECT_NO_THROW(c.validate_variables());
}

TEST(ConfigVariables, OverrideWithQuotedReference) {
  Config c = Config::from_text("RootDir = .\nMapFile=\"x\"\nS = { d = ({ file = \"$MapFile$\" }) }\n",
                               "<text>", {"MapFile=\"$RootDir$/Base64_map.txt\""});
  EXPECT_EQ(c.get_block("S").get_block_array("d").at(0).get_string("file"), "./Base64_map.txt");
}

// ---------------------------------------------------------------------------------------------------------
// §5 conversions

TEST(ConfigConversions, Booleans) {  // (verified)
  for (const char* yes : {"t", "true", "T", "True", "TRUE", "1"})
    EXPECT_TRUE(Config::to_bool(yes, "k")) << yes;
  for (const char* no : {"f", "false", "F", "False", "FALSE", "0", ""})
    EXPECT_FALSE(Config::to_bool(no, "k")) << no;
  for (const char* bad : {"yes", "tRUE", "auto", " true", "2"}) {
    ConfigError e = expect_config_error([&] { Config::to_bool(bad, "x.flag"); });
    EXPECT_EQ(e.key_path(), "x.flag");
    EXPECT_NE(std::string(e.what()).find("boolean argument expected"), std::string::npos) << e.what();
  }
}

TEST(ConfigConversions, UnsignedIntegers) {
  EXPECT_EQ(Config::to_uint("42", "k"), 42u);
  EXPECT_EQ(Config::to_uint("-1", "k"), 18446744073709551615u);  // (verified) strtoull wraps
  EXPECT_EQ(Config::to_uint(" +7", "k"), 7u);                    // leading blanks and sign are accepted
  EXPECT_EQ(Config::to_uint("18446744073709551615", "k"), std::numeric_limits<uint64_t>::max());
  for (const char* bad : {"1e3", "0x10", "5 ", "", "1_000", "abc", "18446744073709551616"}) {
    expect_config_error([&] { Config::to_uint(bad, "k"); });
  }
}

TEST(ConfigConversions, SignedIntegers) {
  EXPECT_EQ(Config::to_int("-5", "k"), -5);
  EXPECT_EQ(Config::to_int("9223372036854775807", "k"), std::numeric_limits<int64_t>::max());
  for (const char* bad : {"1e3", "1.0", "", "--1", "9223372036854775808"}) {
    expect_config_error([&] { Config::to_int(bad, "k"); });
  }
}

TEST(ConfigConversions, Doubles) {
  EXPECT_EQ(Config::to_double("1.5", "k"), 1.5);
  EXPECT_EQ(Config::to_double("1e3", "k"), 1000.0);
  EXPECT_EQ(Config::to_double("-0.25", "k"), -0.25);
  EXPECT_EQ(Config::to_double("0x1p4", "k"), 16.0);
  EXPECT_EQ(Config::to_double("inf", "k"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(Config::to_double("1.#INF", "k"), std::numeric_limits<double>::infinity());   // (verified)
  EXPECT_EQ(Config::to_double("-1.#INF", "k"), std::numeric_limits<double>::infinity());  // sign is ignored
  EXPECT_EQ(Config::to_double("1.#inf", "k"), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(Config::to_double("nan", "k")));
  for (const char* bad : {"", "abc", "1.5x", "1.5 ", "1,5"}) {
    expect_config_error([&] { Config::to_double(bad, "k"); });
  }
}

TEST(ConfigConversions, TypedAccessorsUseDefaultsForMissingKeys) {
  Config c = Config::from_text("b = True\nu = -1\ni = -12\nd = 2.5\n");
  EXPECT_TRUE(c.get_bool("b", false));
  EXPECT_TRUE(c.get_bool("missing", true));
  EXPECT_EQ(c.get_uint("u", 0), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(c.get_uint("missing", 9), 9u);
  EXPECT_EQ(c.get_int("i", 0), -12);
  EXPECT_EQ(c.get_int("missing", -1), -1);
  EXPECT_EQ(c.get_double("d", 0), 2.5);
  EXPECT_EQ(c.get_double("missing", 0.5), 0.5);
  EXPECT_EQ(c.get_uint("u"), std::numeric_limits<uint64_t>::max());
}

TEST(ConfigConversions, TypedAccessorsResolveVariables) {
  Config c = Config::from_text("n = 3\nm = $n$\nflag = $yes$\nyes = T\n");
  EXPECT_EQ(c.get_uint("m", 0), 3u);
  EXPECT_TRUE(c.get_bool("flag", false));
}

// ---------------------------------------------------------------------------------------------------------
// §5.5 arrays

TEST(ConfigArrays, Forms) {  // (verified: 2, 4 and 3 elements)
  Config c = Config::from_text(
      "blocks = ( [a=1]:[b=2] )\nrep = 0.1*3:0.5\nbraces = {1:2:3}\nplain = a:b\nparens = (x : y)\nempty = "
      "()\n"
      "single = 7\nzero = a*0:b\n");
  EXPECT_EQ(c.get_array("blocks"), (Strings{"[a=1]", "[b=2]"}));
  EXPECT_EQ(c.get_array("rep"), (Strings{"0.1", "0.1", "0.1", "0.5"}));
  EXPECT_EQ(c.get_array("braces"), (Strings{"1", "2", "3"}));
  EXPECT_EQ(c.get_array("plain"), (Strings{"a", "b"}));
  EXPECT_EQ(c.get_array("parens"), (Strings{"x", "y"}));
  EXPECT_TRUE(c.get_array("empty").empty());
  EXPECT_EQ(c.get_array("single"), (Strings{"7"}));
  EXPECT_EQ(c.get_array("zero"), (Strings{"b"}));
}

TEST(ConfigArrays, BlockElementsSpanLinesAndKeepTheirBrackets) {
  Config c = Config::from_text("d = (\n  [\n    x = 1\n  ]:{\n    y = 2 }\n)\n");
  Strings elements = c.get_array("d");
  ASSERT_EQ(elements.size(), 2u);
  EXPECT_EQ(elements[0], "[\n    x = 1\n  ]");
  EXPECT_EQ(elements[1], "{\n    y = 2 }");
  std::vector<Config> blocks = c.get_block_array("d");
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].get_string("x"), "1");
  EXPECT_EQ(blocks[1].get_string("y"), "2");
}

TEST(ConfigArrays, BadRepeatCount) {
  Config c = Config::from_text("a = 1*x\nb = (1*)\n", "r.cntk");
  ConfigError e = expect_config_error([&] { c.get_array("a"); });
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 7u);
  expect_config_error([&] { c.get_array("b"); });
}

TEST(ConfigArrays, NonBlockElementInABlockArrayIsAnError) {
  Config c = Config::from_text("d = ( [a=1] : plain )\n", "e.cntk");
  ConfigError e = expect_config_error([&] { c.get_block_array("d"); });
  EXPECT_EQ(e.key_path(), "global.d[1]");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 15u);
}

// ---------------------------------------------------------------------------------------------------------
// §1.1 files and overrides

TEST(ConfigOverrides, AppendedAfterTheFilesAndWin) {
  TempDir dir;
  std::string a = dir.write("a.cntk", "x = 1\ndefMbSize=false\n");
  std::string b = dir.write("b.cntk", "x = 2\ny = 2\n");
  Config c = Config::from_files({a, b}, {"defMBSize=true", "y=3"});
  EXPECT_EQ(c.get_string("x"), "2");
  EXPECT_EQ(c.get_string("y"), "3");
  EXPECT_TRUE(c.get_bool("defmbsize", false));
  EXPECT_EQ(c.keys(), (Strings{"defMbSize", "x", "y"}));
}

TEST(ConfigOverrides, OneOverrideMayHoldSeveralAssignments) {
  Config c =
      Config::from_text("truncated = false\n", "<text>", {"truncated=true, truncationLength=30", "a=1;b=2"});
  EXPECT_TRUE(c.get_bool("truncated", false));
  EXPECT_EQ(c.get_uint("truncationLength"), 30u);
  EXPECT_EQ(c.get_string("a"), "1");
  EXPECT_EQ(c.get_string("b"), "2");
}

TEST(ConfigOverrides, OverridesAreNotCommentStripped) {
  Config c = Config::from_text("", "<text>", {"a=1#x # note"});
  EXPECT_EQ(c.keys(), (Strings{"a"}));
  // Stored verbatim, but fetching re-strips the comment (CNTK's resolution step).
  EXPECT_EQ(c.get_string("a"), "1#x # note");
  Config d = Config::from_text("", "<text>", {"a=1 # note"});
  EXPECT_EQ(d.get_string("a"), "1 ");
}

TEST(ConfigOverrides, ErrorsInOverridesNameTheOverride) {
  ConfigError e = expect_config_error([] { Config::from_text("a = 1\n", "<text>", {"b=2", "c = [ x = 1"}); });
  EXPECT_EQ(e.file(), "<override 2>");
  EXPECT_EQ(e.line(), 1u);
  EXPECT_EQ(e.column(), 5u);
}

TEST(ConfigOverrides, MissingFileIsAnIoError) {
  TempDir dir;
  std::string missing = dir.path("nope.cntk");
  try {
    Config::from_files({missing});
    FAIL() << "expected IoError";
  } catch (const IoError& e) {
    EXPECT_EQ(e.path(), missing);
    EXPECT_NE(e.error_number(), 0);
  }
}

TEST(ConfigOverrides, SameFileTwiceIsAnError) {
  TempDir dir;
  std::string a = dir.write("a.cntk", "x = 1\n");
  ConfigError e = expect_config_error([&] { Config::from_files({a, a}); });
  EXPECT_EQ(e.file(), a);
  EXPECT_NE(std::string(e.what()).find("Cannot specify same config file multiple times"), std::string::npos);
}

TEST(ConfigOverrides, DefaultConstructedConfigIsAnEmptyGlobalScope) {
  Config c;
  EXPECT_EQ(c.path(), "global");
  EXPECT_TRUE(c.keys().empty());
  c.set("a", "1");
  EXPECT_EQ(c.get_uint("a"), 1u);
}

// ---------------------------------------------------------------------------------------------------------
// Errors with file, line and column (read from a real file)

class ConfigErrors : public ::testing::Test {
 protected:
  /// Writes `content` as bad.cntk and parses it.
  Config parse(const std::string& content) { return Config::from_files({file(content)}); }
  std::string file(const std::string& content) { return dir_.write("bad.cntk", content); }
  ConfigError parse_error(const std::string& content) {
    return expect_config_error([&] { parse(content); });
  }
  void expect_at(const ConfigError& e, uint64_t line, uint64_t column, const std::string& text) {
    EXPECT_EQ(e.file(), dir_.path("bad.cntk"));
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.column(), column) << e.what();
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    // what() starts with "file:line:column: "
    std::string prefix =
        dir_.path("bad.cntk") + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
    EXPECT_EQ(std::string(e.what()).substr(0, prefix.size()), prefix);
  }

  TempDir dir_;
};

TEST_F(ConfigErrors, UnmatchedBracket) {
  expect_at(parse_error("a = 1\nb = [ x = (1 ]\n"), 2, 14, "unmatched bracket found in parameters");
}

TEST_F(ConfigErrors, MissingClosingBracket) {
  expect_at(parse_error("a = 1\nb = [\n  x = 1\n"), 2, 5, "no closing ] found in parameters");
  expect_at(parse_error("b = [ c = \"abc ]\n"), 1, 11, "no closing \" found in parameters");
  expect_at(parse_error("s = {\n  t = (\n    a:b\n  ]\n}\n"), 4, 3, "unmatched bracket found in parameters");
}

TEST_F(ConfigErrors, NoValueGiven) {
  expect_at(parse_error("a = 1\n  x =   \n"), 2, 3, "ParseValue: No value given for 'x'.");
  // Inside a block the error shows when the block is fetched; the location is still exact.
  Config c = parse("S = [\n    a = 1\n    b =\n]\n");
  ConfigError e = expect_config_error([&] { c.get_block("S"); });
  expect_at(e, 3, 5, "ParseValue: No value given for 'b'.");
  EXPECT_EQ(e.key_path(), "global.S.b");
}

TEST_F(ConfigErrors, NestedSyntaxErrorInsideAnArrayElement) {
  Config c = parse("S = [\n  d = ( [ a = 1 ] :\n    [ b = ; c = 2 ] )\n]\n");
  Config s = c.get_block("S");
  ConfigError e = expect_config_error([&] { s.get_block_array("d"); });
  expect_at(e, 3, 7, "ParseValue: No value given for 'b'.");
}

TEST_F(ConfigErrors, CarriageReturnWithoutLineFeed) {
  expect_at(parse_error("a = 1\r\nb = 2\rc = 3\n"), 2, 6, "CR without LF");
  expect_at(parse_error("a = 1\r"), 1, 6, "CR without LF");
}

TEST_F(ConfigErrors, BadBoolean) {
  Config c = parse("S = [\n    flag = yes\n]\n");
  ConfigError e = expect_config_error([&] { c.get_block("S").get_bool("flag", false); });
  expect_at(e, 2, 12, "boolean argument expected");
  EXPECT_EQ(e.key_path(), "global.S.flag");
  EXPECT_NE(std::string(e.what()).find("'yes'"), std::string::npos);
}

TEST_F(ConfigErrors, BadInteger) {
  Config c = parse("S = [\n  r = [\n\tdim = 1e3\n  ]\n]\n");
  Config r = c.get_block("S").get_block("r");
  expect_at(expect_config_error([&] { r.get_uint("dim"); }), 3, 8, "invalid input string '1e3'");
  expect_at(expect_config_error([&] { r.get_uint("dim", 1); }), 3, 8, "invalid input string '1e3'");
  expect_at(expect_config_error([&] { r.get_int("dim", 1); }), 3, 8, "invalid input string '1e3'");
  EXPECT_EQ(r.get_double("dim", 0), 1000.0);
}

TEST_F(ConfigErrors, UnknownVariable) {
  Config c = parse("a = 1\nS = [\n    file = \"$Nope$/x.txt\"\n]\n");
  expect_at(expect_config_error([&] { c.get_block("S"); }), 3, 13, "No variable found with the name Nope.");
  expect_at(expect_config_error([&] { c.validate_variables(); }), 3, 13,
            "No variable found with the name Nope.");
}

TEST_F(ConfigErrors, DoubleDollar) {
  Config c = parse("price = 5$$\n");
  expect_at(expect_config_error([&] { c.get_string("price"); }), 1, 10, "$$ is not allowed");
}

TEST_F(ConfigErrors, VariableCycle) {
  Config c = parse("a = $b$\nb = $c$\nc = $a$\nx = $a$\n");
  expect_at(expect_config_error([&] { c.get_string("x"); }), 3, 5, "cyclic variable reference");
  expect_at(expect_config_error([&] { c.get_string("a"); }), 3, 5,
            "cyclic variable reference: $a$ -> $b$ -> $c$ -> $a$");
}

TEST_F(ConfigErrors, LocationsSurviveMergingAndComments) {
  // The second block comes later in the file and is merged (appended) into the first one.
  Config c = parse("# header\nX = [ a = 1 ]   # one\n\n  X = [\n    b = on\n  ]\n");
  Config x = c.get_block("X");
  expect_at(expect_config_error([&] { x.get_bool("b", false); }), 5, 9, "boolean argument expected");
  EXPECT_EQ(x.location("a").line, std::optional<uint64_t>(2));
  EXPECT_EQ(x.location("a").column, std::optional<uint64_t>(11));
}

TEST_F(ConfigErrors, LocationsAfterByteOrderMark) {
  Config c = parse(
      "\xEF\xBB\xBF"
      "flag = maybe\n");
  expect_at(expect_config_error([&] { c.get_bool("flag", false); }), 1, 11, "boolean argument expected");
}

}  // namespace
}  // namespace cntkio
