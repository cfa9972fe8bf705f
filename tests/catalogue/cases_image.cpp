// Catalogue: image map files (ImageDeserializer) and base64 maps (Base64ImageDeserializer), spec image.md.
// Map errors name the map file and its line; an unreadable image names its map line when it is decoded.
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <optional>

#include "catalogue/catalogue.hpp"
#include "cntkio/image.hpp"
#include "cntkio/registry.hpp"
#include "cntkio/transform.hpp"
#include "image/base64_encode.hpp"

namespace cntkio::catalogue {
namespace {

// A 2x3 PNG of one colour, written into the case folder as `name`.
void write_png(const std::string& dir, const std::string& name, int shade) {
  cv::imwrite(dir + "/" + name, cv::Mat(2, 3, CV_8UC3, cv::Scalar(shade, shade, shade)));
}

std::string png_of(int shade) {
  std::vector<unsigned char> bytes;
  cv::imencode(".png", cv::Mat(2, 3, CV_8UC3, cv::Scalar(shade, shade, shade)), bytes);
  return std::string(bytes.begin(), bytes.end());
}

std::string png_base64(int shade) {
  const std::string png = png_of(shade);
  return testing_support::base64(std::vector<unsigned char>(png.begin(), png.end()));
}

uint32_t crc32(const std::string& bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char byte : bytes) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xFF));
}
void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

// A real 8x8 JPEG whose frame header is changed to declare `width` x `height` (a few hundred bytes).
std::string jpeg_declaring(uint16_t width, uint16_t height) {
  std::vector<unsigned char> bytes;
  cv::imencode(".jpg", cv::Mat(8, 8, CV_8UC3, cv::Scalar(1, 2, 3)), bytes);
  for (size_t p = 2; p + 9 < bytes.size(); ++p) {
    if (bytes[p] == 0xFF && bytes[p + 1] == 0xC0) {
      bytes[p + 5] = static_cast<unsigned char>(height >> 8);
      bytes[p + 6] = static_cast<unsigned char>(height & 0xFF);
      bytes[p + 7] = static_cast<unsigned char>(width >> 8);
      bytes[p + 8] = static_cast<unsigned char>(width & 0xFF);
      break;
    }
  }
  return std::string(bytes.begin(), bytes.end());
}

// A PNG header (signature, IHDR of an RGB image with valid CRC, an empty IDAT and IEND) declaring `width` x
// `height` at `depth` bits per sample.
std::string png_declaring(uint32_t width, uint32_t height, int depth = 8) {
  std::string out("\x89PNG\r\n\x1a\n", 8);
  auto chunk = [&out](const std::string& type, const std::string& data) {
    put_be32(out, static_cast<uint32_t>(data.size()));
    out += type + data;
    put_be32(out, crc32(type + data));
  };
  std::string ihdr;
  put_be32(ihdr, width);
  put_be32(ihdr, height);
  ihdr += std::string{static_cast<char>(depth), 2, 0, 0, 0};
  chunk("IHDR", ihdr);
  chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8));
  chunk("IEND", "");
  return out;
}

// A zip archive holding `content` as the stored (uncompressed) entry `name`, whose headers declare
// `declared_size` uncompressed bytes (default: the true size).
std::string stored_zip(const std::string& name, const std::string& content,
                       std::optional<uint32_t> declared_size = std::nullopt) {
  const uint32_t size = static_cast<uint32_t>(content.size());
  const uint32_t declared = declared_size.value_or(size);
  const uint32_t crc = crc32(content);
  std::string out;
  auto common = [&](std::string& header) {
    put_le(header, 20, 2);  // version needed
    put_le(header, 0, 2);   // flags
    put_le(header, 0, 2);   // method: stored
    put_le(header, 0, 4);   // time, date
    put_le(header, crc, 4);
    put_le(header, size, 4);
    put_le(header, declared, 4);
    put_le(header, name.size(), 2);
    put_le(header, 0, 2);  // extra
  };
  put_le(out, 0x04034b50, 4);
  common(out);
  out += name + content;
  const uint32_t directory = static_cast<uint32_t>(out.size());
  put_le(out, 0x02014b50, 4);
  put_le(out, 20, 2);  // version made by
  common(out);
  put_le(out, 0, 2);  // comment
  put_le(out, 0, 2);  // disk
  put_le(out, 0, 2);  // internal attributes
  put_le(out, 0, 4);  // external attributes
  put_le(out, 0, 4);  // local header offset
  out += name;
  const uint32_t directory_size = static_cast<uint32_t>(out.size()) - directory;
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 4);  // disks
  put_le(out, 1, 2);
  put_le(out, 1, 2);
  put_le(out, directory_size, 4);
  put_le(out, directory, 4);
  put_le(out, 0, 2);
  return out;
}

// Writes p0.png..p2.png and the map (`{dir}` in it becomes the case folder), opens it with labelDim 3 and
// decodes every image; the data are "label:first pixel" per sequence in chunk order.
Case image_map(std::string name, std::string map, Expect expect, bool base64_map = false) {
  Case c;
  c.name = std::move(name);
  c.run = [map = std::move(map), base64_map](const std::string& dir) {
    return capture(dir, [&](Outcome& o) {
      for (int i = 0; i < 3; ++i) write_png(dir, "p" + std::to_string(i) + ".png", 10 * i);
      std::string text = map;
      for (size_t at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}")) {
        text.replace(at, 5, dir);
      }
      for (size_t at = text.find("{png}"); at != std::string::npos; at = text.find("{png}")) {
        text.replace(at, 5, png_base64(40));
      }
      for (size_t at = text.find("{bomb}"); at != std::string::npos; at = text.find("{bomb}")) {
        const std::string bomb = png_declaring(30000, 30000);
        text.replace(at, 6, testing_support::base64(std::vector<unsigned char>(bomb.begin(), bomb.end())));
      }
      ImageOptions options;
      options.file = write_file(dir, "map.txt", text);
      options.base64 = base64_map;
      options.label_dim = 3;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      std::shared_ptr<Deserializer> d = make_image_deserializer(options);
      SequenceTransformerPtr transformer =
          find_transform_type("Cast")->create(TransformSpec{"Cast", "", {}}, d->streams()[0], {});
      for (const ChunkInfo& info : d->chunk_infos()) {
        ChunkPtr chunk = d->load_chunk(info.id);
        std::vector<SequenceInfo> sequences;
        d->sequence_infos_for_chunk(info.id, sequences);
        for (const SequenceInfo& s : sequences) {
          std::vector<SequenceData> items;
          chunk->get_sequence(s.index_in_chunk, items);
          const int label = items[1].total_nnz == 1 ? items[1].indices[0] : -1;
          std::string pixel = "invalid";
          if (items[0].valid) {
            transformer->start_batch(1);
            std::shared_ptr<const void> owner;
            const SequenceData image = transformer->apply(items[0], 0, owner);
            pixel = std::to_string(static_cast<int>(static_cast<const float*>(image.values)[0]));
          }
          o.data += std::to_string(label) + ":" + pixel + " ";
        }
      }
    });
  };
  c.expect = std::move(expect);
  return c;
}

// `c` with `setup(dir)` run first.
Case with_setup(Case c, std::function<void(const std::string& dir)> setup) {
  c.run = [run = c.run, setup = std::move(setup)](const std::string& dir) {
    setup(dir);
    return run(dir);
  };
  return c;
}

// Builds a deserializer with the one transform `transform(dir)` after `setup(dir)`.
Case transform_case(std::string name, std::function<ImageTransformOptions(const std::string& dir)> transform,
                    std::function<void(const std::string& dir)> setup, Expect expect) {
  Case c;
  c.name = std::move(name);
  c.run = [transform = std::move(transform), setup = std::move(setup)](const std::string& dir) {
    return capture(dir, [&](Outcome&) {
      setup(dir);
      write_png(dir, "p0.png", 0);
      ImageOptions options;
      options.file = write_file(dir, "map.txt", dir + "/p0.png\t0\n");
      options.label_dim = 3;
      options.trace_level = 0;
      std::shared_ptr<Deserializer> d = make_image_deserializer(options);
      // The transform is made (its files read) when a reader assembles the stream's chain.
      const ImageTransformOptions t = transform(dir);
      const char* kNames[] = {"Crop", "Scale", "Color", "Intensity", "Mean", "Transpose"};
      TransformSpec spec{kNames[t.index()], "", std::visit([](const auto& o) { return std::any(o); }, t)};
      TransformContext context;
      context.trace_level = 0;
      find_transform_type(spec.type)->create(spec, d->streams()[0], context);
    });
  };
  c.expect = std::move(expect);
  return c;
}

}  // namespace

std::vector<Case> image_cases() {
  std::vector<Case> cases;
  auto add = [&cases](Case c) { cases.push_back(std::move(c)); };
  add(image_map("image_map_reads", "{dir}/p0.png\t0\n{dir}/p2.png\t2\n", ok("0:0 2:20 ")));
  add(image_map("image_map_one_column", "{dir}/p0.png\t0\n{dir}/p1.png\n",
                format_error("Invalid map file format, must contain 2 or 3 tab-delimited columns, line 1 in "
                             "file map.txt.",
                             "map.txt", 2, 0, std::nullopt)));
  add(image_map("image_map_blank_line", "{dir}/p0.png\t0\n\n{dir}/p1.png\t1\n",
                format_error("Invalid map file format, must contain 2 or 3 tab-delimited columns, line 1 in "
                             "file map.txt.",
                             "map.txt", 2, 0, std::nullopt)));
  add(image_map("image_map_label_not_a_number", "{dir}/p0.png\tx\n",
                format_error("Cannot parse label value on line 0, second column, in file map.txt.", "map.txt",
                             1, 0, std::nullopt)));
  add(image_map("image_map_label_beyond_label_dim", "{dir}/p0.png\t0\n{dir}/p1.png\t3\n",
                format_error("Image 'p1.png' has invalid class id '3'. It is exceeding the label "
                             "dimension of '3'. Line 1 in file map.txt.",
                             "map.txt", 2, 0, std::nullopt)));
  add(image_map("image_map_missing_image_fails_when_decoded", "{dir}/p0.png\t0\n{dir}/none.png\t1\n",
                format_error("Cannot open file 'none.png'", "map.txt", 2, 0, std::nullopt)));
  {
    Case c = image_map("image_map_corrupt_image_fails_when_decoded", "{dir}/p0.png\t0\n{dir}/bad.png\t1\n",
                       format_error("Cannot open file 'bad.png'", "map.txt", 2, 0, std::nullopt));
    auto run = c.run;
    c.run = [run](const std::string& dir) {
      write_file(dir, "bad.png", std::string("\x89PNG\r\n\x1a\n truncated", 18));
      return run(dir);
    };
    add(std::move(c));
  }
  {
    Case c;
    c.name = "image_map_missing";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        ImageOptions options;
        options.file = dir + "/none.txt";
        options.label_dim = 3;
        make_image_deserializer(options);
      });
    };
    c.expect = io_error("Could not open none.txt for reading.", "none.txt", ENOENT);
    add(std::move(c));
  }
  add(image_map("image_map_missing_zip_archive", "{dir}/none.zip@/a.png\t0\n",
                io_error("Failed to open none.zip", "none.zip", ENOENT)));
  add(with_setup(image_map("image_map_zip_archive_not_a_zip", "{dir}/fake.zip@/a.png\t0\n",
                           format_error("Failed to open fake.zip, zip library error: Not a zip archive",
                                        "fake.zip", 0, 0, std::nullopt)),
                 [](const std::string& dir) { write_file(dir, "fake.zip", "not a zip archive"); }));
  add(image_map(
      "image_map_empty", "",
      format_error("The input has no data: the map file lists no image.", "map.txt", 0, 0, std::nullopt)));

  // ---- inputs that are not regular files: refused at once (a FIFO used to block, /dev/zero to read until
  // memory ran out)
  {
    Case c;
    c.name = "image_map_fifo_does_not_block";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        ::mkfifo((dir + "/pipe.txt").c_str(), 0600);
        ImageOptions options;
        options.file = dir + "/pipe.txt";
        options.label_dim = 3;
        make_image_deserializer(options);
      });
    };
    c.expect =
        io_error("Could not open pipe.txt for reading. (it is a FIFO, not a regular file)", "pipe.txt", 0);
    add(std::move(c));
  }
  {
    Case c;
    c.name = "base64_map_fifo_does_not_block";
    c.run = [](const std::string& dir) {
      return capture(dir, [&](Outcome&) {
        ::mkfifo((dir + "/pipe.txt").c_str(), 0600);
        ImageOptions options;
        options.file = dir + "/pipe.txt";
        options.base64 = true;
        options.label_dim = 3;
        make_image_deserializer(options);
      });
    };
    c.expect =
        io_error("Could not open 'pipe.txt' for reading. (it is a FIFO, not a regular file)", "pipe.txt", 0);
    add(std::move(c));
  }
  add(with_setup(image_map("image_fifo_image_does_not_block", "{dir}/p0.png\t0\n{dir}/pipe.png\t1\n",
                           format_error("Cannot open file 'pipe.png'", "map.txt", 2, 0, std::nullopt)),
                 [](const std::string& dir) { ::mkfifo((dir + "/pipe.png").c_str(), 0600); }));
  add(image_map("image_dev_zero_image_is_refused", "/dev/zero\t0\n",
                format_error("Cannot open file '/dev/zero'", "map.txt", 1, 0, std::nullopt)));
  add(with_setup(image_map("image_directory_as_image", "{dir}/folder\t0\n",
                           format_error("Cannot open file 'folder'", "map.txt", 1, 0, std::nullopt)),
                 [](const std::string& dir) { std::filesystem::create_directories(dir + "/folder"); }));
  add(with_setup(
      image_map("image_fifo_zip_archive_does_not_block", "{dir}/pipe.zip@/a.png\t0\n",
                io_error("Failed to open pipe.zip (it is a FIFO, not a regular file)", "pipe.zip", 0)),
      [](const std::string& dir) { ::mkfifo((dir + "/pipe.zip").c_str(), 0600); }));
  auto mean_file = [](const std::string& dir) -> ImageTransformOptions {
    return ImageMeanOptions{dir + "/pipe.xml"};
  };
  auto make_fifo = [](const std::string& dir) { ::mkfifo((dir + "/pipe.xml").c_str(), 0600); };
  add(transform_case(
      "image_mean_file_fifo_does_not_block", mean_file, make_fifo,
      io_error("Could not open file: pipe.xml (it is a FIFO, not a regular file)", "pipe.xml", 0)));
  add(transform_case(
      "image_intensity_file_fifo_does_not_block",
      [](const std::string& dir) -> ImageTransformOptions {
        return ImageIntensityOptions{0.1, dir + "/pipe.xml", 0};
      },
      make_fifo,
      io_error("Could not open file: pipe.xml (it is a FIFO, not a regular file)", "pipe.xml", 0)));
  add(transform_case(
      "image_mean_file_is_a_directory", mean_file,
      [](const std::string& dir) { std::filesystem::create_directories(dir + "/pipe.xml"); },
      io_error("Could not open file: pipe.xml (it is a directory)", "pipe.xml", EISDIR)));
  add(transform_case(
      "image_mean_file_dev_zero_is_refused",
      [](const std::string&) -> ImageTransformOptions { return ImageMeanOptions{"/dev/zero"}; },
      [](const std::string&) {},
      io_error("Could not open file: /dev/zero (it is a device, not a regular file)", "/dev/zero", 0)));

  // ---- decompression bombs: what a header declares is checked before anything is decoded or inflated
  add(with_setup(image_map("image_jpeg_declaring_65500_squared_pixels", "{dir}/bomb.jpg\t0\n",
                           format_error("Image 'bomb.jpg' declares 65500 x 65500 pixels (JPEG), more than "
                                        "maxImagePixels = 268435456",
                                        "map.txt", 1, 0, std::nullopt)),
                 [](const std::string& dir) { write_file(dir, "bomb.jpg", jpeg_declaring(65500, 65500)); }));
  add(with_setup(image_map("image_png_declaring_30000_squared_pixels", "{dir}/bomb.png\t0\n",
                           format_error("Image 'bomb.png' declares 30000 x 30000 pixels (PNG), more than "
                                        "maxImagePixels = 268435456",
                                        "map.txt", 1, 0, std::nullopt)),
                 [](const std::string& dir) { write_file(dir, "bomb.png", png_declaring(30000, 30000)); }));
  add(with_setup(
      image_map("image_png_within_pixels_beyond_bytes", "{dir}/wide.png\t0\n",
                format_error("Image 'wide.png' declares 16384 x 16384 pixels (PNG), 1610612736 bytes "
                             "decoded, more than maxImageBytes = 1073741824",
                             "map.txt", 1, 0, std::nullopt)),
      [](const std::string& dir) { write_file(dir, "wide.png", png_declaring(16384, 16384, 16)); }));
  add(with_setup(image_map("base64_png_declaring_30000_squared_pixels", "0\t{bomb}\n",
                           format_error("The image of sequence '0' declares 30000 x 30000 pixels (PNG), more "
                                        "than maxImagePixels = 268435456",
                                        "map.txt", 1, 0, std::nullopt, "features", "0"),
                           true),
                 [](const std::string&) {}));
  // Zip entries: the declared size is checked before inflating; an entry inflating beyond it is stopped
  // there.
  add(with_setup(
      image_map("image_zip_entry_declaring_2_gb", "{dir}/bomb.zip@/big.png\t0\n",
                format_error("Zip entry 'big.png' of bomb.zip (image 'bomb.zip@/big.png') declares "
                             "2000000000 bytes uncompressed, more than maxImageBytes = 1073741824",
                             "map.txt", 1, 0, std::nullopt)),
      [](const std::string& dir) {
        write_file(dir, "bomb.zip", stored_zip("big.png", png_of(3), 2000000000));
      }));
  add(with_setup(
      image_map("image_zip_entry_larger_than_it_declares", "{dir}/lie.zip@/small.png\t0\n",
                format_error("Cannot read entry 0 ('small.png') of lie.zip: the entry inflates to more "
                             "than the 20 bytes it declares",
                             "lie.zip", 0, 0, std::nullopt)),
      [](const std::string& dir) { write_file(dir, "lie.zip", stored_zip("small.png", png_of(3), 20)); }));
  add(with_setup(
      image_map("image_zip_entry_reads", "{dir}/ok.zip@/ok.png\t2\n", ok("2:30 ")),
      [](const std::string& dir) { write_file(dir, "ok.zip", stored_zip("ok.png", png_of(30))); }));
  add(image_map("base64_map_reads", "1\t{png}\n2\t{png}\n", ok("1:40 2:40 "), true));
  add(image_map(
      "base64_map_label_beyond_label_dim", "3\t{png}\n",
      format_error("Image with id '0' has invalid class id '3'. It is exceeding the label dimension "
                   "of '3'",
                   "map.txt", 1, 0, std::nullopt, "features", "0"),
      true));
  add(image_map("base64_map_undecodable_image_is_an_invalid_sequence", "0\tAAAA\n1\t{png}\n",
                ok("0:invalid 1:40 "), true));
  add(image_map("base64_map_empty", " \n", format_error("Input file is empty", "map.txt", 0, 0, std::nullopt),
                true));
  return cases;
}

}  // namespace cntkio::catalogue
