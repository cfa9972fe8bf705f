// Helpers shared by the config tests.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cntkio/config.hpp"
#include "cntkio/errors.hpp"

namespace cntkio::config_test {

/// Runs `fn`, which must throw ConfigError, and returns the error (a failed assertion otherwise).
template <class Fn>
ConfigError expect_config_error(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected ConfigError, got another exception: " << e.what();
    return ConfigError("<wrong exception>");
  }
  ADD_FAILURE() << "expected ConfigError, nothing was thrown";
  return ConfigError("<nothing thrown>");
}

/// A fresh folder per test for config files; removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("cntkio_config_" + std::to_string(::getpid()) + "_" +
                                                      info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// Writes `content` byte for byte to `name` inside the folder and returns the full path.
  std::string write(const std::string& name, const std::string& content) const {
    std::filesystem::path file = path_ / name;
    std::ofstream out(file, std::ios::binary);
    out << content;
    return file.string();
  }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace cntkio::config_test
