// Random image transforms and checkpoints: a restored reader, or a fresh one asked for a later epoch, gives
// the pixels of the uninterrupted run (the engines' draws are recorded in the reader state and replayed).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"
#include "cntkio/minibatch_source.hpp"
#include "pipeline/settings_invariants.hpp"

namespace cntkio {
namespace {

namespace fs = std::filesystem;

constexpr size_t kImages = 8;
constexpr size_t kMinibatch = 3;

class ImageCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("cntkio_image_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream map(dir_ / "map.txt");
    cv::RNG rng(11);
    for (size_t i = 0; i < kImages; ++i) {
      cv::Mat m(9 + static_cast<int>(i % 4), 12 - static_cast<int>(i % 3), CV_8UC3);
      rng.fill(m, cv::RNG::UNIFORM, 0, 256);
      const std::string name = "i" + std::to_string(i) + ".png";
      cv::imwrite((dir_ / name).string(), m);
      map << ".../" << name << "\t" << i % 4 << "\n";
    }
    cv::FileStorage eigen((dir_ / "eigen.xml").string(), cv::FileStorage::WRITE);
    eigen << "EigVal" << cv::Mat(cv::Matx13f(0.2175f, 0.0188f, 0.0045f));
    eigen << "EigVec"
          << cv::Mat(cv::Matx33f(-0.5675f, 0.7192f, 0.4009f, -0.5808f, -0.0045f, -0.8140f, -0.5836f, -0.6948f,
                                 0.4203f));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A composite reader: random-side crop with ratio jitter, scale, colour jitter, intensity noise, transpose.
  std::unique_ptr<MinibatchSource> source(const std::string& transforms = "", const std::string& extra = "") {
    const std::string chain =
        !transforms.empty()
            ? transforms
            : "[ type = \"Crop\" ; cropType = \"RandomSide\" ; sideRatio = 0.5:0.9 ; jitterType = "
              "\"UniRatio\" ] "
              ": [ type = \"Scale\" ; width = 5 ; height = 4 ; channels = 3 ] : [ type = \"Color\" ; "
              "brightnessRadius = 0.3 ; contrastRadius = 0.3 ; saturationRadius = 0.3 ] : [ type = "
              "\"Intensity\" ; intensityStdDev = 0.1 ; intensityFile = \"" +
                  (dir_ / "eigen.xml").string() + "\" ] : [ type = \"Transpose\" ]";
    const std::string text = "reader = [ randomize = true ; traceLevel = 1\n" + extra +
                             "\n deserializers = ([ type = \"ImageDeserializer\"\n file = \"" +
                             (dir_ / "map.txt").string() + "\"\n input = [ features = [ transforms = (" +
                             chain + ") ]\n labels = [ labelDim = 4 ] ] ]) ]";
    return MinibatchSource::from_config(Config::from_text(text).get_block("reader"));
  }

  // Every key and value byte of a minibatch.
  static std::string render(const Minibatch& mb) {
    std::string out;
    for (const std::string& key : mb.keys) out += key + ",";
    for (const StreamBatch& s : mb.streams) out.append(s.values.begin(), s.values.end());
    return out;
  }

  // The rest of the current v1 epoch, one string per minibatch.
  static std::vector<std::string> rest_of_epoch(MinibatchSource& s) {
    std::vector<std::string> out;
    Minibatch mb;
    while (s.next_minibatch(mb)) out.push_back(render(mb));
    return out;
  }

  static std::vector<std::string> epoch(MinibatchSource& s, size_t index) {
    s.start_epoch(kMinibatch, index, kImages);
    return rest_of_epoch(s);
  }

  fs::path dir_;
};

TEST_F(ImageCheckpointTest, ARestoreInMidEpochContinuesTheUninterruptedPixels) {
  auto run = source();
  const std::vector<std::string> epoch0 = epoch(*run, 0);
  run->start_epoch(kMinibatch, 1, kImages);
  Minibatch mb;
  ASSERT_TRUE(run->next_minibatch(mb));
  const ReaderState checkpoint = run->state();
  ASSERT_TRUE(checkpoint.transform_draws.has_value());
  const std::vector<std::string> rest1 = rest_of_epoch(*run);
  const std::vector<std::string> epoch2 = epoch(*run, 2);
  ASSERT_FALSE(rest1.empty());

  // A new reader (as in a new process) restored from the JSON form of the state.
  auto restored = source();
  restored->start_epoch(kMinibatch, 1, kImages);
  restored->restore(ReaderState::from_json(checkpoint.to_json()));
  EXPECT_EQ(rest_of_epoch(*restored), rest1);
  EXPECT_EQ(epoch(*restored, 2), epoch2);

  // The transforms are random at all: epochs differ from one another.
  EXPECT_NE(epoch0, epoch2);
}

TEST_F(ImageCheckpointTest, ARestoreInV2ReadingContinuesTheUninterruptedPixels) {
  auto run = source();
  run->set_v2_limits(kInfinitelyRepeat, kInfinitelyRepeat);
  Minibatch mb;
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(run->next_minibatch_v2(kMinibatch, 1, 0, mb));
  const std::string checkpoint = run->state().to_json();
  std::vector<std::string> expected;
  for (int i = 0; i < 6; ++i) {  // across two sweeps
    ASSERT_TRUE(run->next_minibatch_v2(kMinibatch, 1, 0, mb));
    expected.push_back(render(mb));
  }
  auto restored = source();
  restored->set_v2_limits(kInfinitelyRepeat, kInfinitelyRepeat);
  restored->restore(ReaderState::from_json(checkpoint));
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_TRUE(restored->next_minibatch_v2(kMinibatch, 1, 0, mb));
    EXPECT_EQ(render(mb), expected[i]) << "minibatch " << i << " after the restore";
  }
}

TEST_F(ImageCheckpointTest, AFreshReaderAskedForEpochTwoReplaysTheEpochsBeforeItOnce) {
  auto run = source();
  epoch(*run, 0);
  const std::vector<std::string> epoch1 = epoch(*run, 1);
  const std::vector<std::string> epoch2 = epoch(*run, 2);

  auto fresh = source();
  testing::internal::CaptureStderr();
  const std::vector<std::string> fresh2 = epoch(*fresh, 2);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(fresh2, epoch2);
  EXPECT_NE(log.find("reading epochs 0 to 1 again"), std::string::npos) << log;
  EXPECT_NE(log.find("restoring a checkpoint"), std::string::npos) << log;
  EXPECT_EQ(log.find("WARNING"), log.rfind("WARNING")) << "one warning: " << log;

  // Back to an earlier epoch, and on after an epoch cut short: each epoch keeps its pixels, without replay
  // where the epoch's start is known.
  testing::internal::CaptureStderr();
  EXPECT_EQ(epoch(*fresh, 1), epoch1);
  fresh->start_epoch(kMinibatch, 1, kImages);
  Minibatch mb;
  ASSERT_TRUE(fresh->next_minibatch(mb));
  EXPECT_EQ(epoch(*fresh, 2), epoch2);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST_F(ImageCheckpointTest, AStateWithoutDrawsRestartsTheEnginesFromTheirSeeds) {
  auto run = source();
  epoch(*run, 0);
  run->start_epoch(kMinibatch, 1, kImages);
  Minibatch mb;
  ASSERT_TRUE(run->next_minibatch(mb));
  ReaderState older = run->state();  // as an older cntkio wrote it
  older.transform_draws.reset();
  EXPECT_EQ(ReaderState::from_json(older.to_json()).transform_draws, std::nullopt);

  run->restore(older);  // this reader's engines have drawn: they go back to their seeds
  const std::vector<std::string> continued = rest_of_epoch(*run);
  auto fresh = source();
  fresh->start_epoch(kMinibatch, 1, kImages);
  fresh->restore(older);
  EXPECT_EQ(rest_of_epoch(*fresh), continued);
}

TEST_F(ImageCheckpointTest, ReadersWithoutRandomTransformsRecordNoDrawsAndRefuseStatesWithThem) {
  const std::string fixed = "[ type = \"Scale\" ; width = 5 ; height = 4 ; channels = 3 ]";
  auto plain = source(fixed);
  epoch(*plain, 0);
  EXPECT_FALSE(plain->state().transform_draws.has_value());
  EXPECT_EQ(plain->state().to_json().find("transformDraws"), std::string::npos);
  // Centre crops, and colour with all radii 0, never draw either.
  auto centred = source("[ type = \"Crop\" ; sideRatio = 0.5 ] : " + fixed + " : [ type = \"Color\" ]");
  epoch(*centred, 0);
  EXPECT_FALSE(centred->state().transform_draws.has_value());

  auto random = source();
  epoch(*random, 0);
  const ReaderState with_draws = random->state();
  ASSERT_TRUE(with_draws.transform_draws.has_value());
  EXPECT_EQ(with_draws.transform_draws->size(), 3u);  // crop, colour, intensity
  EXPECT_THROW(plain->restore(with_draws), UsageError);
  ReaderState wrong = with_draws;
  const std::vector<std::vector<uint64_t>>& draws = *with_draws.transform_draws;
  wrong.transform_draws = std::vector<std::vector<uint64_t>>(draws.begin(), draws.begin() + 2);
  EXPECT_THROW(random->restore(wrong), UsageError);
  EXPECT_THROW(ReaderState::from_json(R"({"minibatchSourcePosition": 0, "transformDraws": [[-1]]})"),
               UsageError);
  EXPECT_THROW(ReaderState::from_json(R"({"minibatchSourcePosition": 0, "transformDraws": [3]})"),
               UsageError);
}

// Random combinations of transforms and reader settings (a fixed seed; CNTKIO_RANDOM_ROUNDS=n runs more): for
// each, any loader thread count and prefetch give the same pixels, a restore from the JSON state after any
// minibatch continues with exactly the pixels that followed, and a v1 epoch of one sweep gives every image
// once across the workers.
TEST_F(ImageCheckpointTest, RandomTransformsAndSettingsKeepTheirInvariants) {
  std::mt19937_64 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto ratio = [&] {
    const size_t low = 3 + pick(5);
    return "0." + std::to_string(low) + ":0." + std::to_string(low + pick(10 - low));
  };
  for (size_t round = 0; round < settings_test::rounds(12); ++round) {
    std::vector<std::string> steps;
    switch (pick(4)) {
      case 0:
        break;
      case 1:
        steps.push_back("[ type = \"Crop\" ; cropType = \"Center\" ; sideRatio = " + ratio() + " ]");
        break;
      case 2:
        steps.push_back("[ type = \"Crop\" ; cropType = \"RandomSide\" ; sideRatio = " + ratio() +
                        " ; jitterType = \"UniRatio\" ; hflip = " + (pick(2) ? "true" : "false") + " ]");
        break;
      default:
        steps.push_back("[ type = \"Crop\" ; cropType = \"RandomArea\" ; areaRatio = " + ratio() +
                        " ; aspectRatio = 0.8:1 ]");
        break;
    }
    steps.push_back("[ type = \"Scale\" ; width = " + std::to_string(3 + pick(5)) +
                    " ; height = " + std::to_string(3 + pick(5)) + " ; channels = 3 ; interpolations = \"" +
                    std::vector<std::string>{"linear", "nearest", "cubic"}[pick(3)] + "\" ]");
    if (pick(2)) steps.push_back("[ type = \"Color\" ; brightnessRadius = 0.2 ; contrastRadius = 0.3 ]");
    if (pick(2)) {
      steps.push_back("[ type = \"Intensity\" ; intensityStdDev = 0.1 ; intensityFile = \"" +
                      (dir_ / "eigen.xml").string() + "\" ]");
    }
    if (pick(2)) steps.push_back("[ type = \"Transpose\" ]");
    std::string chain;
    for (const std::string& step : steps) chain += (chain.empty() ? "" : " : ") + step;
    std::string settings = pick(4) == 0
                               ? "randomize = false\n"
                               : "randomize = true ; randomizationSeed = " + std::to_string(pick(4)) + "\n";
    const size_t minibatch = 1 + pick(5);
    const size_t workers = 1 + pick(3);
    const bool v2 = pick(3) == 0;
    const size_t epoch_index = pick(3);
    const std::string threads = std::vector<std::string>{"loaderThreads = 1", "loaderThreads = 2",
                                                         "loaderThreads = 3 ; prefetch = false"}[pick(3)];
    SCOPED_TRACE(settings + threads + " | " + chain + " | mb " + std::to_string(minibatch) + " workers " +
                 std::to_string(workers) + (v2 ? " v2" : " epoch " + std::to_string(epoch_index)));
    settings_test::WorkerReading reading;
    reading.make = [&](const std::string& loaders) {
      const std::string text = "reader = [ traceLevel = 0 ; " + settings + loaders +
                               "\n deserializers = ([ type = \"ImageDeserializer\"\n file = \"" +
                               (dir_ / "map.txt").string() + "\"\n input = [ features = [ transforms = (" +
                               chain + ") ]\n labels = [ labelDim = 4 ] ] ]) ]";
      auto source = MinibatchSource::from_config(Config::from_text(text).get_block("reader"));
      if (v2) source->set_v2_limits(kInfinitelyRepeat, 2);
      return source;
    };
    reading.start = [&](MinibatchSource& source, size_t rank) {
      if (!v2) source.start_epoch(minibatch, epoch_index, kImages, rank, workers);
    };
    reading.next = [&](MinibatchSource& source, size_t rank, Minibatch& mb) {
      return v2 ? source.next_minibatch_v2(minibatch, workers, rank, mb) : source.next_minibatch(mb);
    };
    reading.render = render;
    std::multiset<std::string> keys;
    testing::internal::CaptureStderr();  // a fresh reader asked for a later epoch says it reads earlier ones
    for (size_t rank = 0; rank < workers; ++rank) {
      settings_test::check_worker(reading, rank, "loaderThreads = 0 ; prefetch = false", threads, rng,
                                  [&](const Minibatch& mb) { keys.insert(mb.keys.begin(), mb.keys.end()); });
    }
    testing::internal::GetCapturedStderr();
    if (!v2) {
      EXPECT_EQ(keys.size(), kImages);
      EXPECT_EQ(std::set<std::string>(keys.begin(), keys.end()).size(), kImages) << "an image twice";
    }
  }
}

}  // namespace
}  // namespace cntkio
