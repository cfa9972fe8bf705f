#include "remote/http_client.hpp"

#include <curl/curl.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "cntkio/errors.hpp"
#include "core/text.hpp"

namespace cntkio::remote {
namespace {

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || *end != '\0' || *text < '0' || *text > '9') {  // strtoull would take "-5" as 2^64 - 5
    throw UsageError(std::string("the environment variable ") + name + "='" + text +
                     "' is not a whole number");
  }
  return value;
}

std::string env_text(const char* name) {
  const char* text = std::getenv(name);
  return text == nullptr ? std::string() : std::string(text);
}

std::string trim(std::string text) {
  while (!text.empty() && (text.back() == '\r' || text.back() == '\n' || text.back() == ' ')) text.pop_back();
  size_t start = 0;
  while (start < text.size() && text[start] == ' ') ++start;
  return text.substr(start);
}

bool header_is(const std::string& line, const char* name) {
  const size_t n = std::strlen(name);
  return line.size() > n && line[n] == ':' && ::strncasecmp(line.c_str(), name, n) == 0;
}

// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`, unknown): anything else leaves the range unknown and the total
// 0.
void parse_content_range(const std::string& value, Response& response) {
  auto number = [](const std::string& text, size_t& at, uint64_t& out) {
    const size_t begin = at;
    out = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      if (out > (UINT64_MAX - 9) / 10) return false;
      out = out * 10 + static_cast<uint64_t>(text[at++] - '0');
    }
    return at > begin;
  };
  if (value.rfind("bytes ", 0) != 0) return;
  size_t at = 6;
  uint64_t first = 0, last = 0, total = 0;
  if (!number(value, at, first) || at >= value.size() || value[at++] != '-') return;
  if (!number(value, at, last) || at >= value.size() || value[at++] != '/' || last < first) return;
  if (value.compare(at, std::string::npos, "*") != 0) {
    if (!number(value, at, total) || at != value.size() || last >= total) return;
  }
  response.range_known = true;
  response.range_first = first;
  response.range_last = last;
  response.total_size = total;
  response.total_size_known = value.compare(at, std::string::npos, "*") != 0;
}

// A body encoded for the transfer (gzip, br, ...): its bytes are not the file's.
bool encoded(const Response& response) {
  return !response.content_encoding.empty() && !core::iequals(response.content_encoding, "identity");
}

struct Transfer {
  const Request* request;
  Response* response;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  const auto* transfer = static_cast<Transfer*>(user);
  Response& response = *transfer->response;
  const size_t n = size * count;
  if (encoded(response)) {
    response.refused = true;
    response.encoded = true;
    return 0;  // stops the transfer: these bytes are not the file's
  }
  if (transfer->request->sink && response.status == 206) {
    if (!transfer->request->sink(response, response.streamed, data, n)) {
      response.refused = true;
      return 0;  // stops the transfer (CURLE_WRITE_ERROR)
    }
    response.streamed += n;
    return n;
  }
  const uint64_t limit = transfer->request->max_whole_body;
  if (limit != 0 && response.status == 200 &&
      (response.content_length > limit || response.body.size() + n > limit)) {
    response.refused = true;
    response.too_large = true;
    return 0;  // stops the transfer: it would not be kept anyway
  }
  response.body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* response = static_cast<Response*>(user);
  const std::string line(data, size * count);
  // The version tag: the ETag, else the Last-Modified time (servers such as Go's file server send no ETag),
  // so that bytes of two versions are told apart either way.
  auto set_version = [response] {
    response->etag = !response->etag_header.empty() ? response->etag_header
                     : !response->last_modified_header.empty()
                         ? "Last-Modified " + response->last_modified_header
                         : std::string();
  };
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect or 100-continue)
    response->etag.clear();
    response->etag_header.clear();
    response->last_modified_header.clear();
    response->content_encoding.clear();
    response->total_size = 0;
    response->total_size_known = false;
    response->content_length_known = false;
    response->range_known = false;
    const size_t space = line.find(' ');
    response->status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
  } else if (header_is(line, "etag")) {
    response->etag_header = trim(line.substr(5));
    set_version();
  } else if (header_is(line, "last-modified")) {
    response->last_modified_header = trim(line.substr(14));
    set_version();
  } else if (header_is(line, "content-encoding")) {
    response->content_encoding = trim(line.substr(17));
  } else if (header_is(line, "content-range")) {
    parse_content_range(trim(line.substr(14)), *response);
  } else if (header_is(line, "content-length")) {
    response->content_length = std::strtoull(line.c_str() + 15, nullptr, 10);
    response->content_length_known = true;
  }
  return size * count;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* still_wanted = static_cast<const std::function<bool()>*>(user);
  return (*still_wanted)() ? 0 : 1;  // non-zero aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
}

bool worth_retrying(long status) {
  return status >= 500 || status == 429;
}

}  // namespace

RemoteSettings RemoteSettings::from_environment() {
  RemoteSettings s;
  // Whole pages: a lazy mapping fills a block at a time (lazy_mapping.hpp).
  s.block_size =
      std::max<uint64_t>(1, (env_number("CNTKIO_REMOTE_BLOCK_SIZE", s.block_size) + 4095) / 4096) * 4096;
  s.map = env_number("CNTKIO_REMOTE_MAP", 1) != 0;
  s.cache_bytes = env_number("CNTKIO_REMOTE_CACHE_BYTES", s.cache_bytes);
  s.parallel = static_cast<unsigned>(std::max<uint64_t>(1, env_number("CNTKIO_REMOTE_PARALLEL", s.parallel)));
  s.request_size = std::max(s.block_size, env_number("CNTKIO_REMOTE_REQUEST_SIZE", s.request_size));
  s.read_ahead = env_number("CNTKIO_REMOTE_READ_AHEAD", s.read_ahead);
  s.tries = static_cast<unsigned>(std::max<uint64_t>(1, env_number("CNTKIO_REMOTE_TRIES", s.tries)));
  s.backoff_ms = static_cast<unsigned>(env_number("CNTKIO_REMOTE_BACKOFF_MS", s.backoff_ms));
  s.timeout_s =
      static_cast<unsigned>(std::max<uint64_t>(1, env_number("CNTKIO_REMOTE_TIMEOUT_S", s.timeout_s)));
  return s;
}

S3Settings S3Settings::from_environment() {
  S3Settings s;
  std::string region = env_text("AWS_REGION");
  if (region.empty()) region = env_text("AWS_DEFAULT_REGION");
  if (!region.empty()) s.region = region;
  s.endpoint = env_text("AWS_ENDPOINT_URL");
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  s.access_key = env_text("AWS_ACCESS_KEY_ID");
  s.secret_key = env_text("AWS_SECRET_ACCESS_KEY");
  s.session_token = env_text("AWS_SESSION_TOKEN");
  return s;
}

std::string range_text(uint64_t first, uint64_t last) {
  return "bytes " + std::to_string(first) + "-" + std::to_string(last);
}

// Idle easy handles: reusing one reuses its connection (keep-alive).
struct HttpClient::Pool {
  std::mutex mutex;
  std::vector<CURL*> idle;
};

HttpClient::HttpClient(RemoteSettings settings) : settings_(settings), pool_(new Pool) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpClient::~HttpClient() {
  for (CURL* handle : pool_->idle) curl_easy_cleanup(handle);
  delete pool_;
}

Response HttpClient::perform(const Request& request, const std::string& name, unsigned* tries_out) {
  CURL* handle = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    if (!pool_->idle.empty()) {
      handle = pool_->idle.back();
      pool_->idle.pop_back();
    }
  }
  if (handle == nullptr) handle = curl_easy_init();
  if (handle == nullptr) throw IoError("cannot start a libcurl request for", name, ENOMEM);
  struct Release {
    Pool* pool;
    CURL* handle;
    ~Release() {
      std::lock_guard<std::mutex> lock(pool->mutex);
      pool->idle.push_back(handle);
    }
  } release{pool_, handle};

  const std::string range =
      request.has_range ? std::to_string(request.range_first) + "-" + std::to_string(request.range_last) : "";
  const std::string what_range =
      request.has_range ? " reading " + range_text(request.range_first, request.range_last) : "";
  Response response;
  CURLcode code = CURLE_OK;
  char error_text[CURL_ERROR_SIZE] = {0};
  unsigned tries = 0;
  for (unsigned attempt = 0; attempt < settings_.tries; ++attempt) {
    if (attempt > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(uint64_t{settings_.backoff_ms} << (attempt - 1)));
    }
    if (request.still_wanted && !request.still_wanted()) {
      throw IoError("abandoned (no longer needed)" + what_range + " of", name, ECANCELED);
    }
    ++tries;
    response = Response{};
    error_text[0] = '\0';
    curl_easy_reset(handle);
    curl_easy_setopt(handle, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    // Redirects are followed, a few: a loop would otherwise run thousands of requests. A signed S3 request
    // is not redirected at all (its session token would go to the other host; S3 signs for one host).
    curl_easy_setopt(handle, CURLOPT_FOLLOWLOCATION, request.sign_s3 ? 0L : 1L);
    curl_easy_setopt(handle, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(handle, CURLOPT_ERRORBUFFER, error_text);
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT, static_cast<long>(settings_.timeout_s));
    // A transfer that moves less than 1 KiB a second for the timeout is stalled (a server that hangs, or
    // drips a few bytes a second: a 256 KiB block would take days).
    curl_easy_setopt(handle, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(handle, CURLOPT_LOW_SPEED_TIME, static_cast<long>(settings_.timeout_s));
    curl_easy_setopt(handle, CURLOPT_FILETIME, 1L);
    // Large receive buffers: fewer, larger callbacks (the default 16 KiB halves the throughput).
    curl_easy_setopt(handle, CURLOPT_BUFFERSIZE, 512L * 1024);
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, on_body);
    Transfer transfer{&request, &response};
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, &transfer);
    curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(handle, CURLOPT_HEADERDATA, &response);
    if (request.still_wanted) {  // also called while a stalled server sends nothing
      curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, on_progress);
      curl_easy_setopt(handle, CURLOPT_XFERINFODATA, &request.still_wanted);
      curl_easy_setopt(handle, CURLOPT_NOPROGRESS, 0L);
    }
    if (request.head) curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
    if (request.has_range) curl_easy_setopt(handle, CURLOPT_RANGE, range.c_str());
    curl_slist* headers = nullptr;
    std::string userpwd;
    std::string sigv4;
    const S3Settings aws = request.sign_s3 ? s3() : S3Settings{};
    if (request.sign_s3 && !aws.access_key.empty()) {
      sigv4 = "aws:amz:" + aws.region + ":s3";
      userpwd = aws.access_key + ":" + aws.secret_key;
      curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, sigv4.c_str());
      curl_easy_setopt(handle, CURLOPT_USERPWD, userpwd.c_str());
      // S3 wants the payload's hash; libcurl 7.88 does not send it, and signs it when it is given.
      headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
      if (!aws.session_token.empty()) {
        headers = curl_slist_append(headers, ("x-amz-security-token: " + aws.session_token).c_str());
      }
    }
    if (request.has_range && !request.sink)
      response.body.reserve(request.range_last - request.range_first + 1);
    if (headers != nullptr) curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers);
    code = curl_easy_perform(handle);
    curl_slist_free_all(headers);
    if (response.refused) break;
    if (code == CURLE_OK) {
      curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
      long filetime = -1;
      curl_easy_getinfo(handle, CURLINFO_FILETIME, &filetime);
      response.mtime_s = filetime;
      if (request.head && !response.total_size_known && response.content_length_known) {
        response.total_size = response.content_length;
        response.total_size_known = true;
      }
      if (!worth_retrying(response.status)) break;
    } else if (code == CURLE_TOO_MANY_REDIRECTS || code == CURLE_URL_MALFORMAT ||
               code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_PEER_FAILED_VERIFICATION ||
               code == CURLE_ABORTED_BY_CALLBACK) {
      break;  // the same request would fail the same way again
    }
  }
  if (encoded(response)) {
    throw IoError(
        std::string("the answer") +
            (request.has_range ? " to a request for " + range_text(request.range_first, request.range_last)
                               : std::string()) +
            " came with Content-Encoding '" + response.content_encoding +
            "', which cntkio does not decode (serve the file as it is stored, without a "
            "Content-Encoding) of",
        name, EIO);
  }
  if (tries_out != nullptr) *tries_out = tries;
  if (code != CURLE_OK && !response.refused) {
    const std::string detail = error_text[0] != '\0' ? error_text : curl_easy_strerror(code);
    throw IoError(detail + (request.has_range ? ";" : "") + what_range + " (after " + std::to_string(tries) +
                      (tries == 1 ? " try)" : " tries)") + " of",
                  name, code == CURLE_OPERATION_TIMEDOUT ? ETIMEDOUT : EIO);
  }
  return response;
}

}  // namespace cntkio::remote
