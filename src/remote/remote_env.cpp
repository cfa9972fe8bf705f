// The remote Env: http://, https:// and s3:// paths read with ranged GETs (docs/remote-data.md). A file is
// read in blocks (RemoteSettings::block_size) kept in a cache of bounded size shared by every remote file of
// the process; a read fetches the blocks it lacks in parallel, and reads that walk forward fetch the next
// blocks ahead. Every response must carry the ETag and size the file had when it was opened: a file changed
// under its reader is an IoError, never a mix of two versions. Remote paths are read-only.
#include "remote/remote_env.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "cntkio/env.hpp"
#include "cntkio/errors.hpp"
#include "remote/http_client.hpp"
#include "remote/lazy_mapping.hpp"

namespace cntkio::remote {
namespace {

// A block's bytes: a view into the body of the GET that fetched it (one GET fetches a run of blocks).
struct Block {
  std::shared_ptr<const std::string> body;
  size_t offset = 0;
  size_t size = 0;
  const char* data() const { return body->data() + offset; }
};

// Limits the GETs in flight of the whole process.
class Semaphore {
 public:
  explicit Semaphore(unsigned count) : count_(count) {}
  void acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return count_ > 0; });
    --count_;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++count_;
    }
    ready_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  unsigned count_;
};

// Fetched blocks by (URL, ETag, block number), least recently used evicted first once they hold more than
// the bound. A block being fetched counts with the size it will have.
class BlockCache {
 public:
  explicit BlockCache(uint64_t bound) : bound_(bound) {}

  struct Key {
    std::string url;
    std::string etag;
    uint64_t block;
    bool operator<(const Key& o) const {
      return std::tie(url, etag, block) < std::tie(o.url, o.etag, o.block);
    }
  };

  // The block's future, and whether the caller must start its fetch (fulfil `promise`).
  std::shared_future<Block> find_or_claim(const Key& key, uint64_t bytes, std::promise<Block>& promise,
                                          bool& claimed) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      claimed = false;
      return it->second.future;
    }
    claimed = true;
    std::shared_future<Block> future = promise.get_future().share();
    lru_.push_front(key);
    entries_.emplace(key, Entry{future, bytes, lru_.begin()});
    held_ += bytes;
    while (held_ > bound_ && lru_.size() > 1) evict(lru_.back());
    return future;
  }

  // Adds a block already fetched, unless the cache has it.
  void insert(const Key& key, Block block) {
    std::promise<Block> promise;
    bool claimed = false;
    find_or_claim(key, block.size, promise, claimed);
    if (claimed) promise.set_value(std::move(block));
  }

  uint64_t bound() const { return bound_; }

  // The block when it is here already (fetched, not failed), else a Block without bytes.
  Block peek(const Key& key) {
    std::shared_future<Block> future;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it == entries_.end()) return {};
      future = it->second.future;
    }
    if (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return {};
    try {
      return future.get();
    } catch (...) {
      return {};
    }
  }

  bool contains(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.count(key) != 0;
  }

  // Drops a block whose fetch failed, so that a later read tries again.
  void forget(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.count(key)) evict(key);
  }

  uint64_t held() {
    std::lock_guard<std::mutex> lock(mutex_);
    return held_;
  }

 private:
  struct Entry {
    std::shared_future<Block> future;
    uint64_t bytes;
    std::list<Key>::iterator lru;
  };
  void evict(const Key& key) {
    auto it = entries_.find(key);
    held_ -= it->second.bytes;
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }

  std::mutex mutex_;
  uint64_t bound_;
  uint64_t held_ = 0;
  std::list<Key> lru_;
  std::map<Key, Entry> entries_;
};

// A server that ignores Range (python -m http.server, for one) answers every ranged GET with the whole file
// (HTTP 200). The body's blocks all go into the cache, so that the file is downloaded once while the cache
// holds it; a file larger than the cache would be downloaded whole again for read after read: refused.
[[noreturn]] void throw_whole_file_too_large(const std::string& size, uint64_t bound,
                                             const std::string& path) {
  throw IoError(
      "the server ignores Range requests (it answered a ranged GET with the whole file, HTTP 200), and the "
      "file's " +
          size + " bytes do not fit the block cache (" + std::to_string(bound) +
          " bytes, CNTKIO_REMOTE_CACHE_BYTES): every read would download it whole again. Serve it from a "
          "server "
          "that supports ranges (nginx, S3) or copy it to a local disk:",
      path, EOPNOTSUPP);
}

// A 200 answer stopped because it outgrew the block cache (Request::max_whole_body).
void check_whole_body(const Response& response, uint64_t bound, const std::string& path) {
  if (!response.too_large) return;
  throw_whole_file_too_large(response.content_length > bound ? std::to_string(response.content_length)
                                                             : "more than " + std::to_string(bound),
                             bound, path);
}

void keep_whole_file(BlockCache& cache, uint64_t block_size, const std::string& url, const std::string& etag,
                     const std::string& path, std::shared_ptr<const std::string> body) {
  if (body->size() > cache.bound())
    throw_whole_file_too_large(std::to_string(body->size()), cache.bound(), path);
  for (uint64_t b = 0; b * block_size < body->size(); ++b) {
    const uint64_t offset = b * block_size;
    cache.insert(
        BlockCache::Key{url, etag, b},
        Block{body, offset, static_cast<size_t>(std::min<uint64_t>(block_size, body->size() - offset))});
  }
}

// Percent-encodes an S3 key (its '/' kept).
std::string encode_key(std::string_view key) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::string xml_unescape(std::string text) {
  static const std::pair<const char*, const char*> entities[] = {
      {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
  for (const auto& [from, to] : entities) {
    for (size_t at = 0; (at = text.find(from, at)) != std::string::npos; at += std::strlen(to)) {
      text.replace(at, std::strlen(from), to);
    }
  }
  return text;
}

// The texts of every <tag>...</tag> in `xml` (S3's listings: no nesting of the same tag).
std::vector<std::string> xml_values(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "<" + tag + ">";
  const std::string close = "</" + tag + ">";
  for (size_t at = 0; (at = xml.find(open, at)) != std::string::npos;) {
    const size_t start = at + open.size();
    const size_t end = xml.find(close, start);
    if (end == std::string::npos) break;
    out.push_back(xml_unescape(xml.substr(start, end - start)));
    at = end + close.size();
  }
  return out;
}

class RemoteEnv;

// What a block's fetch needs: shared with the fetches in flight, which may outlive the file.
struct Target {
  std::shared_ptr<RemoteEnv> env;
  std::string path;
  std::string url;
  bool s3 = false;
  FileIdentity identity;
};

class RemoteFile final : public RandomAccessFile {
 public:
  explicit RemoteFile(std::shared_ptr<const Target> target) : target_(std::move(target)) {}

  const std::string& path() const override { return target_->path; }
  const FileIdentity& identity() const override { return target_->identity; }
  size_t read_at(uint64_t offset, void* buffer, size_t n) const override;
  uint64_t current_size() const override;
  std::unique_ptr<FileMapping> map() const override;

 private:
  // The futures of blocks [first, last], after claiming [first, ahead_to] and starting GETs for what the
  // cache lacks.
  std::vector<std::shared_future<Block>> blocks(uint64_t first, uint64_t last, uint64_t ahead_to) const;
  uint64_t ahead_to(uint64_t offset, size_t n, uint64_t last) const;

 private:
  std::shared_ptr<const Target> target_;
  mutable std::mutex mutex_;
  // Reads that walk forward (a few at once: threads parsing parts of one chunk): where each starts next and
  // how far it has walked.
  struct Walk {
    uint64_t end = UINT64_MAX;
    uint64_t walked = 0;
  };
  mutable std::array<Walk, 8> walks_;
  mutable size_t next_walk_ = 0;
};

class RemoteSequentialFile final : public SequentialFile {
 public:
  explicit RemoteSequentialFile(std::unique_ptr<RandomAccessFile> file) : file_(std::move(file)) {}
  const std::string& path() const override { return file_->path(); }
  size_t read(void* buffer, size_t n) override {
    const size_t got = file_->read_at(position_, buffer, n);
    position_ += got;
    return got;
  }
  void skip(uint64_t n) override { position_ = std::min(file_->size(), position_ + n); }

 private:
  std::unique_ptr<RandomAccessFile> file_;
  uint64_t position_ = 0;
};

class RemoteEnv final : public Env, public std::enable_shared_from_this<RemoteEnv> {
 public:
  RemoteEnv()
      : client_(RemoteSettings::from_environment()),
        cache_(client_.settings().cache_bytes),
        slots_(client_.settings().parallel) {}

  HttpClient& client() { return client_; }
  BlockCache& cache() { return cache_; }
  Semaphore& slots() { return slots_; }

  // The http(s) URL of `path`, and whether it is signed as S3.
  std::string url_of(const std::string& path, bool& s3) const {
    s3 = Env::url_scheme(path) == "s3";
    if (!s3) return path;
    const std::string rest = path.substr(5);
    const size_t slash = rest.find('/');
    const std::string bucket = rest.substr(0, slash);
    const std::string key = slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (bucket.empty()) throw UsageError("'" + path + "' names no bucket (s3://bucket/key)");
    const S3Settings s = HttpClient::s3();
    if (!s.endpoint.empty()) return s.endpoint + "/" + bucket + "/" + encode_key(key);
    return "https://" + bucket + ".s3." + s.region + ".amazonaws.com/" + encode_key(key);
  }

  // HEAD: the identity of the remote file. Throws IoError (ENOENT for 404 and
  // 403 without a listing right).
  FileIdentity head(const std::string& path, std::string_view open_failure, bool first_block = true) {
    // A reader asks for the identity of a file and opens it right after (the CTF index cache's name, then
    // the file): one HEAD serves the requests of a second.
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard<std::mutex> lock(heads_mutex_);
      const auto it = heads_.find(path);
      if (it != heads_.end() && now - it->second.first < std::chrono::seconds(1)) return it->second.second;
    }
    FileIdentity identity = head_now(path, open_failure, first_block);
    std::lock_guard<std::mutex> lock(heads_mutex_);
    if (heads_.size() > 4096) heads_.clear();
    heads_[path] = {now, identity};
    return identity;
  }

  // The identity from a GET of the first block, which goes into the cache (a reader that opens a file reads
  // its first bytes next: one request instead of two), or from a HEAD.
  FileIdentity head_now(const std::string& path, std::string_view open_failure, bool first_block,
                        bool may_retry = true) {
    bool s3 = false;
    Request request;
    request.url = url_of(path, s3);
    request.head = !first_block;
    request.has_range = first_block;
    request.range_last = client_.settings().block_size - 1;
    request.sign_s3 = s3;
    request.max_whole_body = cache_.bound();
    unsigned tries = 0;
    Response response = client_.perform(request, path, &tries);
    check_whole_body(response, cache_.bound(), path);
    if (may_retry && first_block && response.status == 416) {
      return head_now(path, open_failure, false, false);  // an empty file
    }
    if (may_retry && !first_block && response.status >= 200 && response.status < 300 &&
        !response.total_size_known) {
      return head_now(path, open_failure, true, false);  // a HEAD without Content-Length: the first block
    }
    if (may_retry && !first_block && (response.status == 405 || response.status == 501)) {
      return head_now(path, open_failure, true,
                      false);  // a server that refuses HEAD: a GET of the first block
    }
    if (first_block && response.status == 206 && (!response.range_known || response.range_first != 0)) {
      throw IoError(std::string(open_failure) + " (the server answered a request for the first " +
                        std::to_string(request.range_last + 1) + " bytes with " +
                        (response.range_known ? "bytes " + std::to_string(response.range_first) + "-" +
                                                    std::to_string(response.range_last)
                                              : std::string("no usable Content-Range")) +
                        ")",
                    path, EIO);
    }
    if (first_block && response.status == 206 && !response.total_size_known) {
      throw IoError(std::string(open_failure) +
                        " (the server does not give the file's size: Content-Range '*', which a reader that "
                        "reads ranges of the file cannot work with)",
                    path, EIO);
    }
    if (first_block && response.status == 206) {
      const uint64_t expected = std::min(client_.settings().block_size, response.total_size);
      if (response.body.size() == expected && expected > 0) {
        auto body = std::make_shared<const std::string>(std::move(response.body));
        cache_.insert(BlockCache::Key{request.url, response.etag, 0}, Block{body, 0, body->size()});
      }
    } else if (first_block && response.status == 200) {
      response.total_size = response.body.size();  // a server that ignores ranges: the whole file came
      keep_whole_file(cache_, client_.settings().block_size, request.url, response.etag, path,
                      std::make_shared<const std::string>(std::move(response.body)));
    }
    if (response.status == 404) {
      throw IoError(std::string(open_failure) + " (HTTP 404)", path, ENOENT);
    }
    if (response.status < 200 || response.status >= 300) {
      throw IoError(std::string(open_failure) + " (HTTP " + std::to_string(response.status) +
                        (tries > 1 ? ", after " + std::to_string(tries) + " tries)" : ")"),
                    path, response.status == 403 ? EACCES : EIO);
    }
    // A size no storage holds (a server's garbage) would size the mapping and the index: refused here.
    constexpr uint64_t kLargestFile = uint64_t{1} << 50;  // 1 PiB
    if (response.total_size > kLargestFile) {
      throw IoError(std::string(open_failure) + " (the server gives its size as " +
                        std::to_string(response.total_size) + " bytes, more than 1 PiB)",
                    path, EIO);
    }
    FileIdentity identity;
    identity.size = response.total_size;
    identity.etag = response.etag;
    identity.mtime_ns = response.mtime_s < 0 ? 0 : response.mtime_s * 1000000000;
    identity.ctime_ns = identity.mtime_ns;
    return identity;
  }

  std::unique_ptr<RandomAccessFile> new_random_access_file(const std::string& path,
                                                           std::string_view open_failure) override {
    if (path.find('\0') != std::string::npos) throw UsageError("a path holds a NUL byte");
    bool s3 = false;
    std::string url = url_of(path, s3);
    if (url.back() == '/') throw IoError(std::string(open_failure) + " (a folder)", path, EISDIR);
    auto target = std::make_shared<Target>();
    target->identity = head(path, open_failure);
    target->env = shared_from_this();
    target->path = path;
    target->url = std::move(url);
    target->s3 = s3;
    return std::make_unique<RemoteFile>(std::move(target));
  }
  std::unique_ptr<SequentialFile> new_sequential_file(const std::string& path) override {
    return std::make_unique<RemoteSequentialFile>(new_random_access_file(path, "cannot open input file"));
  }
  std::unique_ptr<WritableFile> new_writable_file(const std::string& path,
                                                  const WritableFileOptions&) override {
    refuse_write(path);
  }
  bool file_exists(const std::string& path) override {
    try {
      head(path, "cannot find", false);
      return true;
    } catch (const IoError&) {
      return is_dir(path);
    }
  }
  // A HEAD: who asks for an identity alone (a cache's name, a check for changes) reads nothing of the file
  // next, or not at once.
  FileIdentity file_identity(const std::string& path) override { return head(path, "cannot find", false); }
  std::vector<std::string> list_dir(const std::string& dir) override;
  void remove_file(const std::string& path) override { refuse_write(path); }
  void rename_file(const std::string&, const std::string& to) override { refuse_write(to); }
  bool create_dir(const std::string& dir) override { refuse_write(dir); }
  void remove_dir(const std::string& dir) override { refuse_write(dir); }
  bool is_dir(const std::string& path) override {
    if (Env::url_scheme(path) != "s3") return false;
    try {
      return !list_dir(path).empty();
    } catch (const Error&) {
      return false;
    }
  }
  void sync_folder(const std::string& dir) override { refuse_write(dir); }
  void sync_storage(const std::string& path) override { refuse_write(path); }

 private:
  [[noreturn]] static void refuse_write(const std::string& path) {
    throw UsageError("cannot write '" + path +
                     "': remote paths are read-only in cntkio (write to a local path; index "
                     "caches of remote "
                     "files are kept in the local cache folder, docs/remote-data.md)");
  }

  HttpClient client_;
  BlockCache cache_;
  Semaphore slots_;
  std::mutex heads_mutex_;
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, FileIdentity>> heads_;
};

std::vector<std::string> RemoteEnv::list_dir(const std::string& dir) {
  if (Env::url_scheme(dir) != "s3") {
    throw IoError(
        "cannot list (an HTTP server gives no standard listing: name the files, "
        "or use a list file)",
        dir, ENOTSUP);
  }
  const std::string rest = dir.substr(5);
  const size_t slash = rest.find('/');
  const std::string bucket = rest.substr(0, slash);
  std::string prefix = slash == std::string::npos ? "" : rest.substr(slash + 1);
  if (!prefix.empty() && prefix.back() != '/') prefix.push_back('/');
  const S3Settings s = HttpClient::s3();
  const std::string base = !s.endpoint.empty() ? s.endpoint + "/" + bucket + "/"
                                               : "https://" + bucket + ".s3." + s.region + ".amazonaws.com/";
  std::vector<std::string> names;
  std::string token;
  for (;;) {
    std::string query = "?delimiter=%2F&list-type=2&prefix=" + encode_key(prefix);
    for (size_t at = 0; (at = query.find('/', at)) != std::string::npos;) query.replace(at, 1, "%2F");
    if (!token.empty()) query = "?continuation-token=" + encode_key(token) + "&" + query.substr(1);
    Request request;
    request.url = base + query;
    request.sign_s3 = true;
    unsigned tries = 0;
    const Response response = client_.perform(request, dir, &tries);
    if (response.status == 404) throw IoError("cannot list (HTTP 404: no such bucket)", dir, ENOENT);
    if (response.status != 200) {
      throw IoError("cannot list (HTTP " + std::to_string(response.status) + ")", dir,
                    response.status == 403 ? EACCES : EIO);
    }
    for (const std::string& key : xml_values(response.body, "Key")) {
      if (key.size() > prefix.size()) names.push_back(key.substr(prefix.size()));
    }
    for (const std::string& common : xml_values(response.body, "Prefix")) {
      if (common.size() > prefix.size() && common.back() == '/') {
        names.push_back(common.substr(prefix.size(), common.size() - prefix.size() - 1));
      }
    }
    const std::vector<std::string> next = xml_values(response.body, "NextContinuationToken");
    const std::vector<std::string> truncated = xml_values(response.body, "IsTruncated");
    if (next.empty() || truncated.empty() || truncated[0] != "true") break;
    token = next[0];
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

// Throws the IoError for an answer to a ranged GET that is no good: an error status, or another version of
// the file than the one opened (`etag`, `total`: the answer's).
void check_answer(const Target& target, const Request& request, const Response& response, unsigned tries,
                  const std::string& etag, uint64_t total) {
  const FileIdentity& identity = target.identity;
  const std::string range = range_text(request.range_first, request.range_last);
  const std::string after = tries > 1 ? " (after " + std::to_string(tries) + " tries)" : "";
  if (response.status == 404) throw IoError("HTTP 404 reading " + range + after + " of", target.path, ENOENT);
  if (response.status != 206 && response.status != 200) {
    throw IoError("HTTP " + std::to_string(response.status) + " reading " + range + after + " of",
                  target.path, response.status == 403 ? EACCES : EIO);
  }
  // A 206 must hold the bytes asked for: other bytes (a server or proxy that shifts ranges) would be read as
  // the file's.
  if (response.status == 206 && (!response.range_known || response.range_first != request.range_first ||
                                 response.range_last != request.range_last)) {
    throw IoError("the server answered " +
                      (response.range_known ? "with " + range_text(response.range_first, response.range_last)
                                            : std::string("without a usable Content-Range")) +
                      " to a request for " + range + after + " of",
                  target.path, EIO);
  }
  if (etag != identity.etag || total != identity.size) {
    throw IoError("the remote file changed while being read (ETag " + identity.etag + ", " +
                      std::to_string(identity.size) + " bytes when opened; now ETag " + etag + ", " +
                      std::to_string(total) + " bytes) at " + range + "; nothing read from it since is used:",
                  target.path, ESTALE);
  }
}

// Runs `request` within the process's limit of GETs in flight.
Response perform_limited(const Target& target, const Request& request, unsigned& tries) {
  RemoteEnv& env = *target.env;
  env.slots().acquire();
  try {
    Response response = env.client().perform(request, target.path, &tries);
    env.slots().release();
    return response;
  } catch (...) {
    env.slots().release();
    throw;
  }
}

// Fetches blocks [first, first + count) with one ranged GET and checks the answer's version.
std::shared_ptr<const std::string> fetch_run(const Target& target, uint64_t first, uint64_t count) {
  RemoteEnv& env = *target.env;
  const FileIdentity& identity = target.identity;
  const uint64_t block_size = env.client().settings().block_size;
  Request request;
  request.url = target.url;
  request.sign_s3 = target.s3;
  request.has_range = true;
  request.range_first = first * block_size;
  request.range_last = std::min(identity.size, (first + count) * block_size) - 1;
  request.max_whole_body = env.cache().bound();
  unsigned tries = 0;
  Response response = perform_limited(target, request, tries);
  check_whole_body(response, env.cache().bound(), target.path);
  const uint64_t expected = request.range_last - request.range_first + 1;
  const bool whole = response.status == 200;  // a server that ignores ranges sends the whole file
  check_answer(target, request, response, tries, response.etag,
               whole ? response.body.size() : response.total_size);
  if (whole) {
    auto body = std::make_shared<const std::string>(std::move(response.body));
    keep_whole_file(env.cache(), block_size, target.url, identity.etag, target.path, body);
    return std::make_shared<const std::string>(body->substr(request.range_first, expected));
  }
  if (response.body.size() != expected) {
    throw IoError("short response (" + std::to_string(response.body.size()) + " bytes) reading " +
                      range_text(request.range_first, request.range_last) + " of",
                  target.path, EIO);
  }
  return std::make_shared<const std::string>(std::move(response.body));
}

// Fetches bytes [first, last] with one ranged GET, handing them to `sink` as they arrive (for a lazy
// mapping, which copies them into place: no block of the cache holds them). The answer's version is checked
// before its first byte goes to the sink.
void stream_range(const Target& target, uint64_t first, uint64_t last, const Sink& sink) {
  const FileIdentity& identity = target.identity;
  Request request;
  request.url = target.url;
  request.sign_s3 = target.s3;
  request.has_range = true;
  request.range_first = first;
  request.range_last = last;
  std::string other_etag;
  uint64_t other_total = 0;
  bool other_version = false;
  request.still_wanted = [&sink] { return sink(0, nullptr, 0); };
  request.sink = [&](const Response& headers, uint64_t offset, const char* data, size_t n) {
    // Bytes of another range than asked for are never handed on (check_answer below names the range).
    if (offset == 0 && (!headers.range_known || headers.range_first != first || headers.range_last != last)) {
      return false;
    }
    if (offset == 0 && (headers.etag != identity.etag || headers.total_size != identity.size)) {
      other_version = true;
      other_etag = headers.etag;
      other_total = headers.total_size;
      return false;
    }
    return sink(offset, data, n);
  };
  request.max_whole_body = target.env->cache().bound();
  unsigned tries = 0;
  Response response = perform_limited(target, request, tries);
  check_whole_body(response, target.env->cache().bound(), target.path);
  if (other_version) check_answer(target, request, response, tries, other_etag, other_total);
  const bool whole = response.status == 200;
  check_answer(target, request, response, tries, response.etag,
               whole ? response.body.size() : response.total_size);
  const uint64_t expected = last - first + 1;
  if (whole) {
    auto body = std::make_shared<const std::string>(std::move(response.body));
    keep_whole_file(target.env->cache(), target.env->client().settings().block_size, target.url,
                    identity.etag, target.path, body);
    sink(0, body->data() + first, static_cast<size_t>(expected));
    return;
  }
  if (response.refused)
    throw IoError("the transfer was stopped reading " + range_text(first, last) + " of", target.path,
                  ECANCELED);
  if (response.streamed != expected) {
    throw IoError("short response (" + std::to_string(response.streamed) + " bytes) reading " +
                      range_text(first, last) + " of",
                  target.path, EIO);
  }
}

// Starts one GET for the claimed blocks [first, first + promises.size()), fulfilling their promises.
void start_run(const std::shared_ptr<const Target>& target, uint64_t first,
               std::vector<std::promise<Block>> promises) {
  std::thread([target, first, promises = std::move(promises)]() mutable {
    const uint64_t block_size = target->env->client().settings().block_size;
    try {
      std::shared_ptr<const std::string> body = fetch_run(*target, first, promises.size());
      for (size_t i = 0; i < promises.size(); ++i) {
        const size_t offset = i * block_size;
        promises[i].set_value(Block{body, offset, std::min<size_t>(block_size, body->size() - offset)});
      }
    } catch (...) {
      for (size_t i = 0; i < promises.size(); ++i) {
        target->env->cache().forget(BlockCache::Key{target->url, target->identity.etag, first + i});
        promises[i].set_exception(std::current_exception());
      }
    }
  }).detach();
}

std::vector<std::shared_future<Block>> RemoteFile::blocks(uint64_t first, uint64_t last,
                                                          uint64_t ahead_to) const {
  const Target& t = *target_;
  const RemoteSettings& settings = t.env->client().settings();
  const uint64_t per_request = std::max<uint64_t>(1, settings.request_size / settings.block_size);
  std::vector<std::shared_future<Block>> needed;
  uint64_t run_first = 0;
  std::vector<std::promise<Block>> run;
  for (uint64_t b = first; b <= ahead_to; ++b) {
    std::promise<Block> promise;
    bool claimed = false;
    std::shared_future<Block> future = t.env->cache().find_or_claim(
        BlockCache::Key{t.url, t.identity.etag, b},
        std::min(settings.block_size, t.identity.size - b * settings.block_size), promise, claimed);
    if (b <= last) needed.push_back(future);
    if (claimed) {
      if (run.empty()) run_first = b;
      run.push_back(std::move(promise));
    }
    // A run ends at a block the cache had, at the request size, or at the end.
    if (!run.empty() && (!claimed || run.size() == per_request || b == ahead_to)) {
      start_run(target_, run_first, std::move(run));
      run.clear();
    }
  }
  return needed;
}

size_t RemoteFile::read_at(uint64_t offset, void* buffer, size_t n) const {
  const FileIdentity& identity = target_->identity;
  if (offset >= identity.size || n == 0) return 0;
  n = static_cast<size_t>(std::min<uint64_t>(n, identity.size - offset));
  const RemoteSettings& settings = target_->env->client().settings();
  const uint64_t first = offset / settings.block_size;
  const uint64_t last = (offset + n - 1) / settings.block_size;
  const std::vector<std::shared_future<Block>> needed = blocks(first, last, ahead_to(offset, n, last));
  char* out = static_cast<char*>(buffer);
  for (uint64_t b = first; b <= last; ++b) {
    const Block data = needed[b - first].get();
    const uint64_t block_start = b * settings.block_size;
    const uint64_t from = std::max(offset, block_start);
    const uint64_t to = std::min<uint64_t>(offset + n, block_start + data.size);
    std::memcpy(out + (from - offset), data.data() + (from - block_start), to - from);
  }
  return n;
}

// The last block to fetch for a read of [offset, offset + n): its own, and the read-ahead when the read
// continues where the previous one ended.
uint64_t RemoteFile::ahead_to(uint64_t offset, size_t n, uint64_t last) const {
  const RemoteSettings& settings = target_->env->client().settings();
  uint64_t walked = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto walk =
        std::find_if(walks_.begin(), walks_.end(), [&](const Walk& w) { return w.end == offset; });
    if (walk != walks_.end()) {
      walked = walk->walked + n;
      *walk = Walk{offset + n, walked};
    } else {
      walks_[next_walk_] = Walk{offset + n, 0};
      next_walk_ = (next_walk_ + 1) % walks_.size();
    }
  }
  if (walked == 0) return last;
  // As the kernel's read-ahead: the window grows with the walk (as far ahead as it has walked), up to the
  // setting, so a short walk (one chunk's part) fetches little past its end and a long one streams.
  const uint64_t ahead = std::min(settings.read_ahead, walked);
  const uint64_t blocks_in_file = (target_->identity.size + settings.block_size - 1) / settings.block_size;
  return std::min(blocks_in_file - 1, last + ahead / settings.block_size);
}

// The size when opened: every fetch checks the file's ETag and size, so a change is an error at the next
// read; asking the server at every check a reader makes would cost a request each.
uint64_t RemoteFile::current_size() const {
  return target_->identity.size;
}

std::unique_ptr<FileMapping> RemoteFile::map() const {
  const RemoteSettings& settings = target_->env->client().settings();
  if (!settings.map) return nullptr;
  BlockSource source;
  std::shared_ptr<const Target> target = target_;
  source.cached = [target](uint64_t b) {
    const Block block = target->env->cache().peek(BlockCache::Key{target->url, target->identity.etag, b});
    return block.body ? BlockBytes{block.body, block.data(), block.size} : BlockBytes{};
  };
  source.fetch = [target](uint64_t first, uint64_t last, const Sink& sink) {
    stream_range(*target, first, last, sink);
  };
  source.read_ahead_blocks = settings.read_ahead / settings.block_size;
  source.blocks_per_fetch = std::max<uint64_t>(1, settings.request_size / settings.block_size);
  return make_lazy_mapping(target_->identity.size, settings.block_size, std::move(source));
}

}  // namespace

void register_remote_schemes() {
  static const std::shared_ptr<Env> env = std::make_shared<RemoteEnv>();
  Env::register_scheme("http", env);
  Env::register_scheme("https", env);
  Env::register_scheme("s3", env);
}

}  // namespace cntkio::remote
