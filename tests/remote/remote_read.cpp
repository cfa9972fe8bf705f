// cntkio_remote_read PATH OP...: opens PATH through Env::current() and runs each OP, printing one line per
// OP, for tests/remote's Python tests (which start the servers and change files between OPs):
//   read:OFFSET:N  read_at; prints "ok <bytes> <FNV-1a of the bytes, hex>" or "error <IoError text>"
//   map:OFFSET:N   the bytes of a core::MappedFile (a lazy mapping for remote files), then check_intact()
//   forkmap:OFFSET:N  as map:, in a child process (fork) of this one: the mapping must exist already
//   willneed:OFFSET:N  tells the core::MappedFile (made if there is none) that the range will be read soon;
//                  prints "hinted"
//   wait           reads a line from standard input (the test acts in between)
//   size           prints the size the file had when opened
//   mappable       prints "mappable yes" when the Env maps the file (remote: userfaultfd works here), else
//   "no"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "core/mapped_file.hpp"

namespace {

uint64_t fnv1a(const char* data, size_t n) {
  uint64_t hash = 14695981039346656037ull;
  for (size_t i = 0; i < n; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 1099511628211ull;
  }
  return hash;
}

void print_ok(const char* data, size_t n) {
  std::printf("ok %zu %016" PRIx64 "\n", n, fnv1a(data, n));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cntkio_remote_read PATH OP...\n");
    return 2;
  }
  const std::string path = argv[1];
  std::unique_ptr<cntkio::RandomAccessFile> file;
  std::unique_ptr<cntkio::core::MappedFile> mapped;
  try {
    file = cntkio::Env::current()->new_random_access_file(path);
  } catch (const cntkio::Error& e) {
    std::printf("error %s\n", e.what());
    return 0;
  }
  for (int i = 2; i < argc; ++i) {
    const std::string op = argv[i];
    try {
      if (op == "wait") {
        std::string line;
        std::getline(std::cin, line);
        std::printf("continued\n");
      } else if (op.rfind("forkmap:", 0) == 0) {
        if (!mapped) throw cntkio::UsageError("forkmap: no mapping yet (map: first)");
        std::fflush(stdout);
        const pid_t child = ::fork();
        if (child == 0) {
          const size_t colon = op.find(':', 8);
          const uint64_t offset = std::stoull(op.substr(8, colon - 8));
          const size_t n = std::min<size_t>(std::stoull(op.substr(colon + 1)), mapped->size() - offset);
          std::vector<char> copy(mapped->data() + offset, mapped->data() + offset + n);
          try {
            mapped->check_intact();
            print_ok(copy.data(), n);
          } catch (const cntkio::Error& e) {
            std::printf("error %s\n", e.what());
          }
          std::fflush(stdout);
          ::_exit(0);
        }
        int status = 0;
        ::waitpid(child, &status, 0);
      } else if (op.rfind("willneed:", 0) == 0) {
        const size_t colon = op.find(':', 9);
        if (!mapped) mapped = std::make_unique<cntkio::core::MappedFile>(path);
        mapped->will_need(std::stoull(op.substr(9, colon - 9)), std::stoull(op.substr(colon + 1)));
        std::printf("hinted\n");
      } else if (op == "mappable") {
        std::printf("mappable %s\n", file->map() ? "yes" : "no");
      } else if (op == "size") {
        std::printf("size %" PRIu64 "\n", file->size());
      } else if (op.rfind("read:", 0) == 0 || op.rfind("map:", 0) == 0) {
        const size_t colon = op.find(':');
        const size_t second = op.find(':', colon + 1);
        const uint64_t offset = std::stoull(op.substr(colon + 1, second - colon - 1));
        const size_t n = std::stoull(op.substr(second + 1));
        if (op[0] == 'r') {
          std::vector<char> buffer(n);
          const size_t got = file->read_at(offset, buffer.data(), n);
          print_ok(buffer.data(), got);
        } else {
          if (!mapped) mapped = std::make_unique<cntkio::core::MappedFile>(path);
          const size_t got = offset >= mapped->size() ? 0 : std::min<size_t>(n, mapped->size() - offset);
          std::vector<char> copy(mapped->data() + offset, mapped->data() + offset + got);
          mapped->check_intact();
          print_ok(copy.data(), got);
        }
      } else {
        std::fprintf(stderr, "unknown op %s\n", op.c_str());
        return 2;
      }
    } catch (const cntkio::Error& e) {
      std::printf("error %s\n", e.what());
    }
    std::fflush(stdout);
  }
  return 0;
}
