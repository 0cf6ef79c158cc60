// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Reading a whole file into memory, with errors that name the file and the reason.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "mpx/error.hpp"

namespace mpx::io {

/// @brief The contents of `path`; throws `mpx::io_error` naming the path when it cannot be read.
[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw io_error(mpx::detail::concat("mpx::io::read_file: cannot open \"", path.string(),
                                       "\": ", std::strerror(errno)));
  }
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad())
    throw io_error(mpx::detail::concat("mpx::io::read_file: reading \"", path.string(), "\" failed"));
  return contents;
}

}  // namespace mpx::io
