// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TempDir`: a fresh directory under the system's temporary directory, removed with its
/// contents when the object goes away. Plain code, no test framework.

#include <filesystem>
#include <string>
#include <system_error>

#include <unistd.h>

namespace mpx::test {

/// @brief A directory named `<prefix>_<pid>_<counter>` in the temporary directory, unique in the
/// process and between concurrent test processes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  /// @brief The directory.
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }
  /// @brief A path inside the directory.
  [[nodiscard]] std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace mpx::test
