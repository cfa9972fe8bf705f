// The one place warnings and informational messages go through. Levels follow CNTK's traceLevel:
// 0 errors only, 1 warnings, 2 info. The sink defaults to stderr; tools and tests may capture it.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace cntkio::core {

enum class LogLevel : int { kError = 0, kWarning = 1, kInfo = 2 };

class Logger {
 public:
  using Sink = std::function<void(LogLevel, std::string_view)>;
  explicit Logger(int trace_level = 1, Sink sink = {});

  int trace_level() const { return trace_level_; }
  bool enabled(LogLevel level) const { return static_cast<int>(level) <= trace_level_; }
  /// Writes `message` (a full line without the trailing newline) if `level` is enabled.
  void log(LogLevel level, std::string_view message) const;
  /// Writes regardless of the trace level (CNTK prints some errors at every level).
  void always(LogLevel level, std::string_view message) const;

 private:
  int trace_level_;
  Sink sink_;
  mutable std::mutex mutex_;
};

using LoggerPtr = std::shared_ptr<Logger>;

/// The Sink for an options struct's `log_sink(int level, line)`; an empty one gives the default (stderr).
inline Logger::Sink sink_from_options(const std::function<void(int, std::string_view)>& log_sink) {
  if (!log_sink) return {};
  return [log_sink](LogLevel level, std::string_view line) { log_sink(static_cast<int>(level), line); };
}

}  // namespace cntkio::core
