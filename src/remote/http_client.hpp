// Ranged GETs, HEADs and S3 listings over libcurl, with retries: the transport of the remote Env
// (remote_env.cpp). Easy handles are pooled and reused, so connections are kept alive between requests.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cntkio::remote {

/// The settings of the remote Env, read once from the environment (docs/remote-data.md).
struct RemoteSettings {
  uint64_t block_size = 256ull << 10;   ///< CNTKIO_REMOTE_BLOCK_SIZE: the unit cached (and mapped)
  uint64_t request_size = 8ull << 20;   ///< CNTKIO_REMOTE_REQUEST_SIZE: at most this many bytes per GET
  uint64_t cache_bytes = 256ull << 20;  ///< CNTKIO_REMOTE_CACHE_BYTES: the cache of fetched blocks
  unsigned parallel = 4;                ///< CNTKIO_REMOTE_PARALLEL: GETs in flight for one read
  uint64_t read_ahead = 32ull << 20;    ///< CNTKIO_REMOTE_READ_AHEAD: bytes fetched ahead of forward reads
  unsigned tries = 4;                   ///< CNTKIO_REMOTE_TRIES: attempts of a request (5xx, 429, transport)
  unsigned backoff_ms = 100;            ///< CNTKIO_REMOTE_BACKOFF_MS: first wait before a retry, doubling
  unsigned timeout_s = 30;              ///< CNTKIO_REMOTE_TIMEOUT_S: connect timeout; a stalled transfer
  bool map = true;  ///< CNTKIO_REMOTE_MAP: 0 = no lazy mappings (readers read whole files)
  static RemoteSettings from_environment();
};

/// S3 credentials and where requests go (AWS_* variables).
struct S3Settings {
  std::string region = "us-east-1";  ///< AWS_REGION, else AWS_DEFAULT_REGION
  std::string endpoint;              ///< AWS_ENDPOINT_URL (path-style requests), else virtual-hosted AWS
  std::string access_key;            ///< AWS_ACCESS_KEY_ID (empty: unsigned requests)
  std::string secret_key;            ///< AWS_SECRET_ACCESS_KEY
  std::string session_token;         ///< AWS_SESSION_TOKEN
  static S3Settings from_environment();
};

/// What one request gave.
struct Response {
  long status = 0;
  std::string body;
  /// The version tag: the ETag, else "Last-Modified <date>", else empty (a server that sends neither).
  std::string etag;
  std::string etag_header;           ///< ETag as sent
  std::string last_modified_header;  ///< Last-Modified as sent
  std::string content_encoding;      ///< Content-Encoding as sent (empty: none)
  uint64_t content_length = 0;
  bool content_length_known = false;  ///< a Content-Length header was sent
  uint64_t total_size = 0;            ///< from Content-Range (ranged GET) or Content-Length (HEAD)
  bool total_size_known =
      false;  ///< total_size was sent (not Content-Range's `*`, not a HEAD without length)
  /// Content-Range `bytes FIRST-LAST/TOTAL` as sent (range_known false: none, or not of that form).
  bool range_known = false;
  uint64_t range_first = 0;
  uint64_t range_last = 0;
  int64_t mtime_s = -1;    ///< Last-Modified, seconds since the epoch (-1: none)
  uint64_t streamed = 0;   ///< bytes of a 206 answer handed to Request::sink (instead of `body`)
  bool refused = false;    ///< the sink stopped the transfer (or it outgrew Request::max_whole_body)
  bool too_large = false;  ///< a 200 answer outgrew Request::max_whole_body and was stopped
  bool encoded = false;    ///< the body came with a Content-Encoding other than identity: stopped, not kept
};

/// One request. `url` is an http(s) URL; `sign_s3` signs it with the S3 credentials (when there are any).
struct Request {
  std::string url;
  bool head = false;
  bool has_range = false;
  uint64_t range_first = 0;
  uint64_t range_last = 0;
  bool sign_s3 = false;
  /// A 200 answer (the whole file, from a server that ignores Range) larger than this is stopped as soon as
  /// its Content-Length or its bytes say so (Response::too_large); 0: no limit.
  uint64_t max_whole_body = 0;
  /// Where the body of a 206 answer goes as it arrives (else into Response::body): called with the answer's
  /// headers so far, the offset of `data` in the body (0 again when the request is tried again) and the
  /// bytes. Returning false stops the transfer without further tries (Response::refused).
  std::function<bool(const Response& headers, uint64_t offset, const char* data, size_t n)> sink;
  /// Asked about once a second during the transfer, and before each try: false stops the request (an
  /// IoError saying it was abandoned), also while the server sends nothing. Empty: always wanted.
  std::function<bool()> still_wanted;
};

class HttpClient {
 public:
  explicit HttpClient(RemoteSettings settings);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// Runs `request`, retrying with exponential backoff on 5xx, 429 and transport errors. Returns the last
  /// response (any status); throws IoError naming `name` (the path the user gave), the byte range and the
  /// number of tries when every try failed in transport. `tries_out` receives the tries made.
  Response perform(const Request& request, const std::string& name, unsigned* tries_out = nullptr);

  const RemoteSettings& settings() const { return settings_; }
  /// The S3 settings now: the AWS_* variables are read at every request (credentials may be renewed).
  static S3Settings s3() { return S3Settings::from_environment(); }

 private:
  struct Pool;
  RemoteSettings settings_;
  Pool* pool_;
};

/// "bytes A-B" for error texts.
std::string range_text(uint64_t first, uint64_t last);

}  // namespace cntkio::remote
