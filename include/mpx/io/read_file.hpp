// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Reading a whole file into memory, with errors that name the file and the reason.

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpx/error.hpp"

namespace mpx::io {

namespace detail {
// The whole regular file at `path` in a `Buffer` of bytes (std::string or std::vector<std::byte>),
// sized once from fstat; a file that shrinks while it is read is returned as far as it went.
template <class Buffer>
Buffer read_whole_file(const std::filesystem::path& path) {
  const auto fail = [&](const char* what, int error_number) {
    throw io_error(mpx::detail::concat("mpx::io::read_file: \"", path.string(), "\": ", what, ": ",
                                       std::strerror(error_number)));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", errno);
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat status {};
  if (::fstat(fd, &status) != 0) fail("cannot stat", errno);
  if (!S_ISREG(status.st_mode)) fail("not a regular file", EINVAL);
  Buffer contents;
  contents.resize(static_cast<std::size_t>(status.st_size));
  for (std::size_t done = 0; done < contents.size();) {
    const ::ssize_t n = ::read(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read", errno);
    }
    if (n == 0) {  // the file shrank after fstat
      contents.resize(done);
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  return contents;
}
}  // namespace detail

/// @brief The contents of the regular file `path`; throws `mpx::io_error` naming the path and the
/// reason when it cannot be read (missing, a directory, permissions, a read error).
[[nodiscard]] inline std::string read_file(const std::filesystem::path& path) {
  return detail::read_whole_file<std::string>(path);
}

/// @brief `read_file` as raw bytes.
[[nodiscard]] inline std::vector<std::byte> read_file_bytes(const std::filesystem::path& path) {
  return detail::read_whole_file<std::vector<std::byte>>(path);
}

}  // namespace mpx::io
