// Catalogue: image map files (ImageDeserializer) and base64 maps (Base64ImageDeserializer), spec image.md.
// Map errors name the map file and its line; an unreadable image names its map line when it is decoded.
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>

#include "catalogue/catalogue.hpp"
#include "cntkio/image.hpp"
#include "cntkio/transform.hpp"
#include "image/base64_encode.hpp"

namespace cntkio::catalogue {
namespace {

// A 2x3 PNG of one colour, written into the case folder as `name`.
void write_png(const std::string& dir, const std::string& name, int shade) {
  cv::imwrite(dir + "/" + name, cv::Mat(2, 3, CV_8UC3, cv::Scalar(shade, shade, shade)));
}

std::string png_base64(int shade) {
  std::vector<unsigned char> bytes;
  cv::imencode(".png", cv::Mat(2, 3, CV_8UC3, cv::Scalar(shade, shade, shade)), bytes);
  return testing_support::base64(bytes);
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
      ImageOptions options;
      options.file = write_file(dir, "map.txt", text);
      options.base64 = base64_map;
      options.label_dim = 3;
      options.trace_level = 0;
      options.log_sink = [](int, std::string_view) {};
      std::shared_ptr<Deserializer> d = make_image_deserializer(options);
      SequenceTransformerPtr transformer = dynamic_cast<TransformProvider&>(*d).transformers()[0];
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
      options.transforms = {transform(dir)};
      make_image_deserializer(options);
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
