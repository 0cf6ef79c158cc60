// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Reading a whole file into memory, with errors that name the file and the reason.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ios>
#include <iterator>
#include <string>
#include <system_error>

#include "mpx/error.hpp"

namespace mpx::io {

/// @brief The contents of `path`; throws `mpx::io_error` naming the path when it cannot be read.
[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
  const auto fail = [&](const char* what, const char* reason) {
    throw io_error(mpx::detail::concat("mpx::io::read_file: ", what, " \"", path.string(), "\": ", reason));
  };
  std::error_code status;
  if (std::filesystem::is_directory(path, status)) fail("cannot read", "it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open", std::strerror(errno));
  std::string contents;
  try {
    contents.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::ios_base::failure& e) {  // libstdc++'s filebuf throws on a read error
    fail("reading failed for", e.what());
  }
  if (in.bad()) fail("reading failed for", "stream error");
  return contents;
}

}  // namespace mpx::io
