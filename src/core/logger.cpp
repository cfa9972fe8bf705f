#include "core/logger.hpp"

#include <cstdio>

namespace cntkio::core {

Logger::Logger(int trace_level, Sink sink) : trace_level_(trace_level), sink_(std::move(sink)) {}

void Logger::log(LogLevel level, std::string_view message) const {
  if (enabled(level)) always(level, message);
}

void Logger::always(LogLevel level, std::string_view message) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (sink_) {
    sink_(level, message);
  } else {
    std::fwrite(message.data(), 1, message.size(), stderr);
    std::fputc('\n', stderr);
  }
}

}  // namespace cntkio::core
