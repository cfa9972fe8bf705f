// ImageDeserializer and Base64ImageDeserializer: map files, paths, zip archives, labels, keys and their
// located errors (spec image.md §3, §4).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <string>
#include <vector>

#include "cntkio/errors.hpp"
#include "cntkio/image.hpp"
#include "cntkio/registry.hpp"
#include "cntkio/transform.hpp"
#include "formats/image/image_source.hpp"
#include "image/base64_encode.hpp"

namespace cntkio {
namespace {

namespace fs = std::filesystem;

class ImageDeserializerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cntkio_image_deser_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "img");
    for (int i = 0; i < 3; ++i) {
      cv::Mat m(2, 3, CV_8UC3, cv::Scalar(10 * i, 20 * i, 30 * i));
      cv::imwrite((dir_ / "img" / ("p" + std::to_string(i) + ".png")).string(), m);
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return (dir_ / name).string();
  }

  ImageOptions options(const std::string& map, size_t label_dim = 4) {
    ImageOptions o;
    o.file = map;
    o.label_dim = label_dim;
    o.log_sink = [this](int, std::string_view line) { log_.emplace_back(line); };
    return o;
  }

  // Decodes and casts sequence `chunk` (first of its chunk) through the deserializer's own transformer.
  std::vector<float> pixels(Deserializer& d, uint32_t chunk, uint32_t index = 0) {
    ChunkPtr c = d.load_chunk(chunk);
    std::vector<SequenceData> items;
    c->get_sequence(index, items);
    // The Cast every image stream ends with: it decodes.
    auto transformer = find_transform_type("Cast")->create(TransformSpec{"Cast", "", {}}, d.streams()[0], {});
    transformer->start_batch(1);
    std::shared_ptr<const void> owner;
    SequenceData out = transformer->apply(items[0], 0, owner);
    size_t n = 1;
    for (size_t s : out.sample_shape) n *= s;
    const auto* v = static_cast<const float*>(out.values);
    return std::vector<float>(v, v + n);
  }

  int32_t label(Deserializer& d, uint32_t chunk, uint32_t index = 0) {
    ChunkPtr c = d.load_chunk(chunk);
    std::vector<SequenceData> items;
    c->get_sequence(index, items);
    EXPECT_EQ(items[1].total_nnz, 1u);
    EXPECT_EQ(static_cast<const float*>(items[1].values)[0], 1.0f);
    return items[1].indices[0];
  }

  template <typename F>
  FormatError format_error(F&& f) {
    try {
      f();
    } catch (const FormatError& e) {
      return e;
    }
    ADD_FAILURE() << "expected a FormatError";
    return FormatError("none", {});
  }

  fs::path dir_;
  std::vector<std::string> log_;
};

std::vector<float> uniform(int i) {
  std::vector<float> v;
  for (int p = 0; p < 6; ++p) {
    v.push_back(10.0f * i);
    v.push_back(20.0f * i);
    v.push_back(30.0f * i);
  }
  return v;
}

TEST_F(ImageDeserializerTest, TwoAndThreeColumnLinesAndTheirKeys) {
  const std::string map = write("map.txt", (dir_ / "img/p0.png").string() + "\t1\n" + "17\t" +
                                               (dir_ / "img/p1.png").string() + "\t3\tignored\n");
  auto d = make_image_deserializer(options(map));
  ASSERT_EQ(d->chunk_infos().size(), 2u);
  std::vector<SequenceInfo> infos;
  d->sequence_infos_for_chunk(0, infos);
  d->sequence_infos_for_chunk(1, infos);
  EXPECT_EQ(d->key_to_string(infos[0].key), "0");  // line index
  EXPECT_EQ(d->key_to_string(infos[1].key), "17");
  EXPECT_EQ(label(*d, 0), 1);
  EXPECT_EQ(label(*d, 1), 3);
  EXPECT_EQ(pixels(*d, 1), uniform(1));
  ASSERT_TRUE(d->sequence_info_by_key(SequenceKey{17, 0}));
  EXPECT_EQ(d->sequence_info_by_key(SequenceKey{17, 0})->chunk_id, 1u);
  EXPECT_FALSE(d->sequence_info_by_key(SequenceKey{5, 0}));
  EXPECT_EQ(d->streams()[0].name, "features");
  EXPECT_EQ(d->streams()[1].storage, StorageFormat::kSparseCsc);
  EXPECT_EQ(d->streams()[1].sample_shape, (std::vector<size_t>{4}));
}

TEST_F(ImageDeserializerTest, ThreeDotsExpandToTheMapFolderAndOtherPathsStayRelative) {
  const std::string map = write("map.txt", ".../img/p2.png\t0\n");
  auto d = make_image_deserializer(options(map));
  EXPECT_EQ(pixels(*d, 0), uniform(2));
}

TEST_F(ImageDeserializerTest, StringKeysAndDuplicateKeysLastLineWins) {
  ImageOptions o = options(write("map.txt", "a\t" + (dir_ / "img/p0.png").string() + "\t0\n" + "b\t" +
                                                (dir_ / "img/p1.png").string() + "\t1\n" + "a\t" +
                                                (dir_ / "img/p2.png").string() + "\t2\n"));
  o.keys = std::make_shared<KeyTable>(KeyMode::kString);
  auto d = make_image_deserializer(o);
  EXPECT_EQ(d->chunk_infos().size(), 3u);  // every line is a sequence
  uint64_t a = 0;
  ASSERT_TRUE(o.keys->try_find("a", a));
  EXPECT_EQ(d->sequence_info_by_key(SequenceKey{a, 0})->chunk_id, 2u);
}

TEST_F(ImageDeserializerTest, MultiViewMakesTenChunksPerLine) {
  ImageOptions o = options(write("map.txt", (dir_ / "img/p0.png").string() + "\t0\n"));
  o.multi_view = true;
  auto d = make_image_deserializer(o);
  EXPECT_EQ(d->chunk_infos().size(), 10u);
  ChunkPtr c = d->load_chunk(7);
  std::vector<SequenceData> items;
  c->get_sequence(0, items);
  EXPECT_EQ(static_cast<const image::NativeImage*>(items[0].native)->copy_id, 7u);
}

TEST_F(ImageDeserializerTest, MapErrorsNameFileAndLine) {
  const std::string bad = write("bad.txt", "img/p0.png\t0\n\nimg/p1.png\t1\n");
  FormatError e = format_error([&] { make_image_deserializer(options(bad)); });
  EXPECT_EQ(
      e.cntk_text(),
      "Invalid map file format, must contain 2 or 3 tab-delimited columns, line 1 in file " + bad + ".");
  EXPECT_EQ(e.location().file, bad);
  EXPECT_EQ(e.location().line, 2u);

  const std::string label = write("label.txt", "img/p0.png\t0\nimg/p1.png\tx\n");
  e = format_error([&] { make_image_deserializer(options(label)); });
  EXPECT_EQ(e.cntk_text(), "Cannot parse label value on line 1, second column, in file " + label + ".");

  const std::string range = write("range.txt", "img/p0.png\t 3abc\nimg/p1.png\t4\n");  // 3abc -> 3 is fine
  e = format_error([&] { make_image_deserializer(options(range)); });
  EXPECT_EQ(e.cntk_text(),
            "Image 'img/p1.png' has invalid class id '4'. It is exceeding the label dimension of "
            "'4'. Line 1 in file " +
                range + ".");
  EXPECT_EQ(e.location().line, 2u);

  const std::string key = write("key.txt", "abc\timg/p0.png\t0\n");
  e = format_error([&] { make_image_deserializer(options(key)); });
  EXPECT_EQ(e.location().line, 1u);

  const std::string none = (dir_ / "none.txt").string();
  try {
    make_image_deserializer(options(none));
    FAIL() << "a missing map file must fail";
  } catch (const IoError& io) {
    EXPECT_EQ(io.path(), none);
    EXPECT_EQ(io.error_number(), ENOENT);
    EXPECT_EQ(std::string(io.what()).rfind("Could not open " + none + " for reading.", 0), 0u);
  }
}

TEST_F(ImageDeserializerTest, MissingAndCorruptImagesFailWhenReadWithTheirLine) {
  write("corrupt.png", "this is not an image");
  const std::string map =
      write("map.txt", (dir_ / "img/p0.png").string() + "\t0\n" + (dir_ / "nope.png").string() + "\t0\n" +
                           (dir_ / "corrupt.png").string() + "\t1\n");
  auto d = make_image_deserializer(options(map));  // construction does not open images
  EXPECT_EQ(pixels(*d, 0), uniform(0));
  FormatError e = format_error([&] { pixels(*d, 1); });
  EXPECT_EQ(e.cntk_text(), "Cannot open file '" + (dir_ / "nope.png").string() + "'");
  EXPECT_EQ(e.location().line, 2u);
  e = format_error([&] { pixels(*d, 2); });
  EXPECT_EQ(e.cntk_text(), "Cannot open file '" + (dir_ / "corrupt.png").string() + "'");
  EXPECT_EQ(e.location().file, map);
  EXPECT_EQ(e.location().line, 3u);
}

std::string conformance_zip() {
  return std::string(CNTKIO_CONFORMANCE_DIR) + "/data/images/simple.zip";
}

TEST_F(ImageDeserializerTest, ZipEntriesIncludingDuplicatesAndBackslashes) {
  const std::string zip = conformance_zip();
  const std::string map = write("map.txt", zip + "@/chunk1/red.jpg\t0\n" + zip + "@\\chunk0\\blue.jpg\t1\n" +
                                               zip + "@/chunk1/red.jpg\t2\n");
  auto d = make_image_deserializer(options(map));
  const std::vector<float> red = pixels(*d, 0);
  ASSERT_EQ(red.size(), 96u);
  for (size_t i = 0; i < red.size(); i += 3) {  // red.jpg decodes to BGR (0, 0, 254)
    EXPECT_EQ(red[i], 0);
    EXPECT_EQ(red[i + 2], 254);
  }
  EXPECT_EQ(pixels(*d, 2), red);  // the same entry twice
  EXPECT_EQ(pixels(*d, 1)[0], 254);
}

TEST_F(ImageDeserializerTest, MissingZipEntriesAreReportedAtConstruction) {
  const std::string zip = conformance_zip();
  const std::string map = write("map.txt", zip + "@/chunk1/red.jpg\t0\n" + zip + "@/nothere.jpg\t1\n" + zip +
                                               "@/nothere.jpg\t1\n" + zip + "@chunk1/red.jpg\t1\n");
  FormatError e = format_error([&] { make_image_deserializer(options(map)); });
  EXPECT_EQ(e.cntk_text(),
            "Cannot retrieve image data for some sequences. For more detail, please see the log file.");
  EXPECT_EQ(e.location().line, 2u);
  // The character after '@' is always dropped: "chunk1/red.jpg" looks up "hunk1/red.jpg".
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_EQ(log_[0], "Sequence hunk1/red.jpg is not found in container " + zip + ".");
  EXPECT_EQ(log_[1], "Sequence nothere.jpg is not found in container " + zip + ".");
}

TEST_F(ImageDeserializerTest, UnreadableZipArchive) {
  const std::string fake = write("fake.zip", "not a zip");
  FormatError e =
      format_error([&] { make_image_deserializer(options(write("map.txt", fake + "@/a.jpg\t0\n"))); });
  EXPECT_EQ(e.cntk_text().rfind("Failed to open " + fake + ", zip library error: ", 0), 0u);
}

using testing_support::base64;

std::string png_base64(int i) {
  std::vector<unsigned char> bytes;
  cv::imencode(".png", cv::Mat(2, 3, CV_8UC3, cv::Scalar(10 * i, 20 * i, 30 * i)), bytes);
  return base64(bytes);
}

TEST(ImageBase64, DecodeFollowsCntksRules) {
  std::vector<unsigned char> out;
  ASSERT_TRUE(image::decode_base64("TWFu", out));
  EXPECT_EQ(std::string(out.begin(), out.end()), "Man");
  ASSERT_TRUE(image::decode_base64("TWE=", out));
  EXPECT_EQ(std::string(out.begin(), out.end()), "Ma");
  ASSERT_TRUE(image::decode_base64("TQ==", out));
  EXPECT_EQ(std::string(out.begin(), out.end()), "M");
  EXPECT_FALSE(image::decode_base64("TWF", out));
  ASSERT_TRUE(image::decode_base64("T!Fu", out));  // outside the alphabet: 0 bits
  EXPECT_EQ(out[0], 'L');
}

TEST_F(ImageDeserializerTest, Base64LinesWithAndWithoutKeys) {
  ImageOptions o = options(write("b64.txt", "2\t" + png_base64(1) + "\n0\t" + png_base64(2) + "\r\n"));
  o.base64 = true;
  auto d = make_image_deserializer(o);
  ASSERT_EQ(d->chunk_infos().size(), 1u);
  EXPECT_EQ(d->chunk_infos()[0].number_of_sequences, 2u);
  EXPECT_EQ(label(*d, 0, 0), 2);
  EXPECT_EQ(pixels(*d, 0, 0), uniform(1));
  EXPECT_EQ(pixels(*d, 0, 1), uniform(2));  // trailing \r removed

  ImageOptions k = options(write("keys.txt", "x\t1\t" + png_base64(0) + "\ny\t3\t" + png_base64(2) + "\n"));
  k.base64 = true;
  k.keys = std::make_shared<KeyTable>(KeyMode::kString);
  auto dk = make_image_deserializer(k);
  uint64_t y = 0;
  ASSERT_TRUE(k.keys->try_find("y", y));
  ASSERT_TRUE(dk->sequence_info_by_key(SequenceKey{y, 0}));
  EXPECT_EQ(dk->sequence_info_by_key(SequenceKey{y, 0})->index_in_chunk, 1u);
  EXPECT_EQ(label(*dk, 0, 1), 3);
}

TEST_F(ImageDeserializerTest, Base64UndecodableImagesAreInvalidWithAWarning) {
  ImageOptions o = options(write("b64.txt", "1\tABC\n2\tAAAA\n"));
  o.base64 = true;
  auto d = make_image_deserializer(o);
  ChunkPtr c = d->load_chunk(0);
  std::vector<SequenceData> items;
  c->get_sequence(0, items);
  c->get_sequence(1, items);
  EXPECT_FALSE(items[0].valid);
  EXPECT_TRUE(items[1].valid);  // the label stays valid
  EXPECT_FALSE(items[2].valid);
  ASSERT_EQ(log_.size(), 2u);
  EXPECT_EQ(log_[0], "WARNING: Cannot decode sequence with id 0 in the input file '" + o.file + "'");
  EXPECT_EQ(log_[1], "WARNING: Could not decompress sequence with id '1'");
}

TEST_F(ImageDeserializerTest, Base64LineErrorsAreRaisedWhenTheChunkLoads) {
  ImageOptions o = options(write("b64.txt", "1\t" + png_base64(0) + "\n9\t" + png_base64(1)));
  o.base64 = true;
  auto d = make_image_deserializer(o);
  FormatError e = format_error([&] { d->load_chunk(0); });
  EXPECT_EQ(e.cntk_text(),
            "Image with id '1' has invalid class id '9'. It is exceeding the label dimension of '4'");
  EXPECT_EQ(e.location().line, 2u);

  ImageOptions last = options(write("last.txt", "1\t" + png_base64(0)));
  last.base64 = true;
  auto dl = make_image_deserializer(last);
  e = format_error([&] { dl->load_chunk(0); });
  EXPECT_EQ(e.cntk_text(), "Empty image for sequence '0'");

  ImageOptions strings = options(write("s.txt", "1\t" + png_base64(0) + "\n"));
  strings.base64 = true;
  strings.keys = std::make_shared<KeyTable>(KeyMode::kString);
  e = format_error([&] { make_image_deserializer(strings); });
  EXPECT_EQ(
      e.cntk_text(),
      "Corpus expects non-numeric sequence keys present but the input file does not have them.Please use the "
      "configuration to enable numeric keys instead.");

  ImageOptions empty = options(write("e.txt", "  \n"));
  empty.base64 = true;
  e = format_error([&] { make_image_deserializer(empty); });
  EXPECT_EQ(e.cntk_text(), "Input file is empty");
}

TEST_F(ImageDeserializerTest, Base64BlankLineRepeatsTheNextImageUnderItsOwnKey) {
  ImageOptions o = options(write("b64.txt", "1\t" + png_base64(0) + "\n\n3\t" + png_base64(2) + "\n"));
  o.base64 = true;
  auto d = make_image_deserializer(o);
  EXPECT_EQ(d->chunk_infos()[0].number_of_sequences, 3u);
  EXPECT_EQ(label(*d, 0, 1), 3);
  EXPECT_EQ(pixels(*d, 0, 1), uniform(2));
}

}  // namespace
}  // namespace cntkio
