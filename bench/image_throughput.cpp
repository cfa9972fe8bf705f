// image_throughput: images/s of cntkio's image pipeline (decode + RandomSide crop + scale to 224x224 +
// transpose, through MinibatchSource) next to a plain OpenCV imread + resize loop over the same JPEGs, in one
// run. See bench/README.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.hpp"
#include "cntkio/config.hpp"
#include "cntkio/minibatch_source.hpp"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  size_t images = 300;
  size_t reps = 3;
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  size_t minibatch = 32;
  size_t only = 0;  // 1: only cntkio, 2: only the OpenCV loop (for profiling)
  size_t keep = 0;  // 1: keep the generated images for the next run
};

// A smooth photo-like picture: gradients, a few filled shapes and mild noise, 500x375, quality 90.
void generate(const fs::path& dir, size_t count) {
  std::mt19937 rng(20240607);
  std::uniform_int_distribution<int> byte(0, 255), xs(0, 499), ys(0, 374), rs(10, 120);
  std::vector<int> params = {cv::IMWRITE_JPEG_QUALITY, 90};
  std::ofstream map(dir / "map.txt");
  for (size_t i = 0; i < count; ++i) {
    cv::Mat img(375, 500, CV_8UC3);
    const int b0 = byte(rng), g0 = byte(rng), r0 = byte(rng);
    for (int y = 0; y < img.rows; ++y) {
      auto* row = img.ptr<cv::Vec3b>(y);
      for (int x = 0; x < img.cols; ++x) {
        row[x] = cv::Vec3b(static_cast<uint8_t>((b0 + x / 2) & 255), static_cast<uint8_t>((g0 + y / 2) & 255),
                           static_cast<uint8_t>((r0 + (x + y) / 4) & 255));
      }
    }
    for (int k = 0; k < 12; ++k) {
      cv::circle(img, cv::Point(xs(rng), ys(rng)), rs(rng), cv::Scalar(byte(rng), byte(rng), byte(rng)),
                 cv::FILLED);
    }
    cv::Mat noise(img.size(), CV_8UC3);
    cv::randu(noise, 0, 16);
    img += noise;
    const std::string name = "img" + std::to_string(i) + ".jpg";
    cv::imwrite((dir / name).string(), img, params);
    map << (dir / name).string() << '\t' << i % 1000 << '\n';
  }
}

std::string reader_config(const fs::path& dir, size_t threads) {
  return "reader = [\n randomize = true\n loaderThreads = " + std::to_string(threads == 1 ? 0 : threads) +
         "\n multiThreadedDeserialization = " + (threads > 1 ? "true" : "false") +
         "\n prefetch = false\n deserializers = ([\n type = \"ImageDeserializer\"\n file = \"" +
         (dir / "map.txt").string() +
         "\"\n input = [\n features = [ transforms = (\n"
         "  [ type = \"Crop\" ; cropType = \"RandomSide\" ; sideRatio = 0.5:1.0 ; jitterType = \"UniRatio\" "
         "] :\n"
         "  [ type = \"Scale\" ; width = 224 ; height = 224 ; channels = 3 ; interpolations = \"linear\" ] "
         ":\n"
         "  [ type = \"Transpose\" ] ) ]\n"
         " labels = [ labelDim = 1000 ] ] ]) ]";
}

// One sweep through cntkio; returns seconds and adds the first value of every minibatch to `checksum`.
double run_cntkio(const fs::path& dir, size_t threads, size_t images, size_t minibatch, double& checksum) {
  cntkio::Config reader = cntkio::Config::from_text(reader_config(dir, threads)).get_block("reader");
  auto source = cntkio::MinibatchSource::from_config(reader);
  const auto start = Clock::now();
  source->start_epoch(minibatch, 0, images);
  cntkio::Minibatch mb;
  size_t seen = 0;
  while (source->next_minibatch(mb)) {
    seen += mb.streams[0].layout.num_sequences();
    checksum += mb.streams[0].data<float>()[0];
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (seen != images) std::fprintf(stderr, "cntkio read %zu images, expected %zu\n", seen, images);
  return seconds;
}

// The reference: cv::imread + cv::resize(224x224, INTER_LINEAR) of every image, split over `threads` threads.
double run_opencv(const fs::path& dir, size_t threads, size_t images, double& checksum) {
  std::vector<double> sums(threads, 0);
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      cv::Mat resized;
      for (size_t i = t; i < images; i += threads) {
        cv::Mat img = cv::imread((dir / ("img" + std::to_string(i) + ".jpg")).string(), cv::IMREAD_COLOR);
        cv::resize(img, resized, cv::Size(224, 224), 0, 0, cv::INTER_LINEAR);
        sums[t] += resized.data[0];
      }
    });
  }
  for (auto& th : pool) th.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (double s : sums) checksum += s;
  return seconds;
}

using bench::median;  // bench_util.hpp: the mean of the two middle values for an even count

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i];
    const size_t value = std::stoul(argv[i + 1]);
    if (key == "--images") args.images = value;
    if (key == "--reps") args.reps = value;
    if (key == "--threads") args.threads = value;
    if (key == "--minibatch") args.minibatch = value;
    if (key == "--only") args.only = value;
    if (key == "--keep") args.keep = value;
  }
  cv::setNumThreads(1);  // OpenCV's own parallel loops off on both sides: threads are what this run sets
  const fs::path dir = fs::temp_directory_path() / "cntkio_image_throughput";
  const bool reuse = args.keep != 0 && fs::exists(dir / ("img" + std::to_string(args.images - 1) + ".jpg")) &&
                     !fs::exists(dir / ("img" + std::to_string(args.images) + ".jpg"));
  fs::create_directories(dir);
  if (!reuse) generate(dir, args.images);
  {  // warm the page cache and OpenCV
    double ignored = 0;
    run_opencv(dir, 1, args.images, ignored);
  }
  std::printf("%zu JPEGs 500x375 (quality 90), minibatch %zu, median of %zu runs\n", args.images,
              args.minibatch, args.reps);
  std::printf("%-8s %16s %16s %8s\n", "threads", "cntkio img/s", "opencv img/s", "ratio");
  std::vector<size_t> counts = {1};
  if (args.threads > 1) counts.push_back(args.threads);
  for (size_t threads : counts) {
    std::vector<double> ours, theirs;
    double check_ours = 0, check_theirs = 0;
    for (size_t r = 0; r < args.reps; ++r) {
      theirs.push_back(args.only == 1 ? 1.0 : run_opencv(dir, threads, args.images, check_theirs));
      ours.push_back(args.only == 2 ? 1.0
                                    : run_cntkio(dir, threads, args.images, args.minibatch, check_ours));
    }
    const double a = static_cast<double>(args.images) / median(ours);
    const double b = static_cast<double>(args.images) / median(theirs);
    std::printf("%-8zu %16.1f %16.1f %8.2f\n", threads, a, b, a / b);
  }
  if (args.keep == 0) fs::remove_all(dir);
  return 0;
}
