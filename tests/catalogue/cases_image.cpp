// Catalogue: image map files (ImageDeserializer) and base64 maps (Base64ImageDeserializer), spec image.md.
// Map errors name the map file and its line; an unreadable image names its map line when it is decoded.
#include <cerrno>
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
    c.expect = format_error("Could not open none.txt for reading.", "none.txt", 0, 0, std::nullopt);
    add(std::move(c));
  }
  add(image_map("image_map_missing_zip_archive", "{dir}/none.zip@/a.png\t0\n",
                format_error("Failed to open none.zip, zip library error: No such file", "none.zip", 0, 0,
                             std::nullopt)));
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
