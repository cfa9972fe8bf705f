// The Env (include/cntkio/env.hpp): the POSIX Env's files, its atomic writes, listing and globbing, and the
// process's Env that every file access of cntkio goes through.
#include "cntkio/env.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cntkio/errors.hpp"
#include "config/config_test_util.hpp"
#include "core/env/fault_env.hpp"
#include "core/input_file.hpp"
#include "core/mapped_file.hpp"

using namespace cntkio;
using cntkio::config_test::TempDir;
namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
}  // namespace

TEST(Env, AWritableFileAppearsAtItsNameOnlyWhenCommitted) {
  TempDir dir;
  const std::string path = dir.path("out.bin");
  Env& env = *Env::default_env();
  {
    auto file = env.new_writable_file(path);
    EXPECT_EQ(file->temp_path(), path + ".partial");
    file->append("hello ", 6);
    const std::string big(3 << 20, 'x');  // larger than the buffer: written straight through
    file->append(big.data(), big.size());
    file->append("!", 1);
    file->write_at(0, "J", 1);
    EXPECT_EQ(file->position(), 6 + big.size() + 1);
    EXPECT_THROW(file->write_at(file->position(), "x", 1), UsageError);
    EXPECT_FALSE(fs::exists(path));
    file->commit();
    EXPECT_FALSE(fs::exists(path + ".partial"));
    const std::string content = slurp(path);
    EXPECT_EQ(content.substr(0, 6), "Jello ");
    EXPECT_EQ(content.size(), 6 + big.size() + 1);
    EXPECT_EQ(content.back(), '!');
  }
  EXPECT_TRUE(fs::exists(path));
}

TEST(Env, AnAbandonedOrDestroyedWriterLeavesNothingAndNeverTouchesAnotherWritersTemporary) {
  TempDir dir;
  const std::string path = dir.write("out.txt", "before");
  Env& env = *Env::default_env();
  {
    auto file = env.new_writable_file(path);
    file->append("after", 5);
    file->flush();
    EXPECT_EQ(slurp(file->temp_path()), "after");
  }
  EXPECT_EQ(slurp(path), "before");
  EXPECT_FALSE(fs::exists(path + ".partial"));
  dir.write("out.txt.partial", "someone else's");
  {
    auto file = env.new_writable_file(path);
    EXPECT_EQ(file->temp_path().rfind(path + ".partial.", 0), 0u) << file->temp_path();
    file->append("x", 1);
    file->abandon();
    EXPECT_FALSE(fs::exists(file->temp_path()));
  }
  EXPECT_EQ(slurp(path + ".partial"), "someone else's");
  EXPECT_EQ(slurp(path), "before");
  WritableFileOptions named;
  named.temp_path = dir.path("mine.tmp");
  dir.write("mine.tmp", "stale bytes of a dead writer");
  auto file = env.new_writable_file(path, named);
  file->append("new", 3);
  file->commit();
  EXPECT_EQ(slurp(path), "new");
  EXPECT_FALSE(fs::exists(named.temp_path));
}

TEST(Env, RandomAccessAndSequentialFilesReadRegularFilesOnly) {
  TempDir dir;
  const std::string path = dir.write("d.txt", "0123456789");
  Env& env = *Env::default_env();
  auto file = env.new_random_access_file(path);
  EXPECT_EQ(file->size(), 10u);
  char buffer[8] = {};
  EXPECT_EQ(file->read_at(6, buffer, 8), 4u);
  EXPECT_EQ(std::string(buffer, 4), "6789");
  EXPECT_EQ(file->identity(), env.file_identity(path));
  auto sequential = env.new_sequential_file(path);
  sequential->skip(3);
  EXPECT_EQ(sequential->read(buffer, 8), 7u);
  EXPECT_EQ(std::string(buffer, 7), "3456789");
  EXPECT_EQ(sequential->read(buffer, 8), 0u);
  try {
    env.new_random_access_file(dir.path(""), "cannot open it");
    FAIL();
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open it (it is a directory)"), std::string::npos)
        << e.what();
  }
  const std::string fifo = dir.path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(env.new_random_access_file(fifo), IoError);  // refused without waiting for a writer
  EXPECT_THROW(env.new_sequential_file(fifo), IoError);
  EXPECT_THROW(env.file_identity(dir.path("absent")), IoError);
}

TEST(Env, ListsAndGlobsAFolder) {
  TempDir dir;
  for (const char* name : {"b.ctf", "a.ctf", "a.txt", ".hidden.ctf"}) dir.write(name, "x");
  Env& env = *Env::default_env();
  EXPECT_EQ(env.list_dir(dir.path("")), (std::vector<std::string>{".hidden.ctf", "a.ctf", "a.txt", "b.ctf"}));
  const std::string base = dir.path("");
  const std::string prefix = base.back() == '/' ? base : base + "/";
  EXPECT_EQ(env.glob(prefix + "*.ctf"), (std::vector<std::string>{prefix + "a.ctf", prefix + "b.ctf"}));
  EXPECT_EQ(env.glob(prefix + "a.?[t-x]?"), (std::vector<std::string>{prefix + "a.ctf", prefix + "a.txt"}));
  EXPECT_EQ(env.glob(prefix + "a.txt"), (std::vector<std::string>{prefix + "a.txt"}));
  EXPECT_TRUE(env.glob(prefix + "none").empty());
  EXPECT_THROW(env.list_dir(dir.path("absent")), IoError);
  env.rename_file(prefix + "a.txt", prefix + "c.txt");
  env.remove_file(prefix + "c.txt");
  EXPECT_FALSE(env.file_exists(prefix + "c.txt"));
  EXPECT_THROW(env.remove_file(prefix + "c.txt"), IoError);
  EXPECT_TRUE(env.create_dir(prefix + "sub"));
  EXPECT_FALSE(env.create_dir(prefix + "sub"));  // already a folder
  EXPECT_TRUE(env.is_dir(prefix + "sub"));
  EXPECT_FALSE(env.is_dir(prefix + "a.ctf"));
  try {
    env.create_dir(prefix + "a.ctf");
    FAIL() << "a folder over a file";
  } catch (const IoError& e) {
    EXPECT_EQ(e.error_number(), EEXIST);
  }
  dir.write("sub/x", "x");
  EXPECT_THROW(env.remove_dir(prefix + "sub"), IoError);  // not empty
  env.remove_file(prefix + "sub/x");
  env.remove_dir(prefix + "sub");
  EXPECT_FALSE(env.file_exists(prefix + "sub"));
  env.sync_folder(base);
  env.sync_storage(prefix + "a.ctf");
}

TEST(Env, InputFilesMappedFilesAndOutputFilesGoThroughTheInstalledEnv) {
  TempDir dir;
  const std::string big(200000, 'y');
  const std::string path = dir.write("d.bin", big);
  auto env = std::make_shared<core::FaultEnv>();
  {
    ScopedEnv scoped(env);
    EXPECT_EQ(Env::current(), env);
    EXPECT_EQ(core::read_input_file(path), big);
    const core::MappedFile mapped(path);  // a FaultEnv does not map: read with read_at
    EXPECT_EQ(mapped.view(), big);
    EXPECT_GE(env->count(core::Fault::Op::kRead), 2u);
  }
  EXPECT_EQ(Env::current(), Env::default_env());
  const uint64_t reads = env->count(core::Fault::Op::kRead);
  EXPECT_EQ(core::read_input_file(path), big);
  EXPECT_EQ(env->count(core::Fault::Op::kRead), reads) << "the restored Env is not the FaultEnv";
  // The POSIX Env maps a large file.
  auto file = Env::default_env()->new_random_access_file(path);
  const auto mapping = file->map();
  ASSERT_NE(mapping, nullptr);
  EXPECT_EQ(std::string(mapping->data(), mapping->size()), big);
  EXPECT_TRUE(mapping->intact());
}
