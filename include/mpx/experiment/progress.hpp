// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief A one-line progress bar for training loops: redrawn in place on a terminal, printed once
/// when finished otherwise (so logs and CI output stay readable).

#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

namespace mpx::experiment {

/// @brief "label [#########.........]  45% status" on one line of `stream`.
class ProgressBar {
 public:
  /// @brief A bar labelled `label`, `width` characters wide, drawn on `stream`.
  explicit ProgressBar(std::string label, std::FILE* stream = stdout, int width = 30)
      : label_(std::move(label)),
        stream_(stream),
        width_(width),
        interactive_(::isatty(::fileno(stream)) != 0) {}

  /// @brief Shows `done` of `total` with a status text; redraws at most ~100 times per bar.
  void update(std::int64_t done, std::int64_t total, const std::string& status) {
    if (!interactive_ || total <= 0) return;
    const auto percent = static_cast<int>(100 * done / total);
    if (percent == last_percent_ && done != total) return;
    last_percent_ = percent;
    draw(done, total, status);
    std::fflush(stream_);
  }

  /// @brief Draws the final state and ends the line.
  void finish(std::int64_t total, const std::string& status) {
    draw(total, total, status);
    std::fputc('\n', stream_);
    std::fflush(stream_);
  }

 private:
  void draw(std::int64_t done, std::int64_t total, const std::string& status) {
    const std::int64_t filled = total > 0 ? width_ * done / total : width_;
    std::string bar(static_cast<std::size_t>(width_), '.');
    for (std::int64_t i = 0; i < filled; ++i) bar[static_cast<std::size_t>(i)] = '#';
    std::fprintf(stream_, "%s%s [%s] %3d%% %s", interactive_ ? "\r\033[K" : "", label_.c_str(), bar.c_str(),
                 static_cast<int>(total > 0 ? 100 * done / total : 100), status.c_str());
  }

  std::string label_;
  std::FILE* stream_;
  int width_;
  bool interactive_;
  int last_percent_ = -1;
};

}  // namespace mpx::experiment
