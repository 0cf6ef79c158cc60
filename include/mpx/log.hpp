// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Where mpx reports what it does not throw for: skipped steps, non-finite inputs or losses,
/// a loss scale that backed off below 1. One process-wide sink, stderr unless replaced.
///
/// @code
/// mpx::set_log_sink([](mpx::LogLevel level, std::string_view message) { my_logger(level, message); });
/// @endcode

#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace mpx {

/// @brief How much a message matters.
enum class LogLevel {
  Info,     ///< expected events worth a line: a step skipped while dynamic loss scaling searches its scale
  Warning,  ///< something is wrong with the run: non-finite inputs or loss, a scale below 1
};

/// @brief A receiver of mpx's messages; called under a lock, so it need not be thread-safe itself.
using LogSink = std::function<void(LogLevel, std::string_view)>;

namespace detail {
struct LogState {
  std::mutex mutex;
  LogSink sink;
};
inline LogState& log_state() {
  static LogState state;
  return state;
}
inline void log_to_stderr(LogLevel level, std::string_view message) {
  std::fprintf(stderr, "mpx: %s: %.*s\n", level == LogLevel::Warning ? "warning" : "info",
               static_cast<int>(message.size()), message.data());
}
}  // namespace detail

/// @brief Sends mpx's messages to `sink` from now on and returns the sink used so far; an empty
/// `sink` restores the default, one line per message on stderr ("mpx: warning: ...").
inline LogSink set_log_sink(LogSink sink) {
  auto& state = detail::log_state();
  const std::lock_guard lock(state.mutex);
  return std::exchange(state.sink, std::move(sink));
}

/// @brief Reports `message` to the current sink.
inline void log(LogLevel level, std::string_view message) {
  auto& state = detail::log_state();
  const std::lock_guard lock(state.mutex);
  if (state.sink) {
    state.sink(level, message);
  } else {
    detail::log_to_stderr(level, message);
  }
}

}  // namespace mpx
