// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Writing a file so that readers see either the old contents or the new, never a mix: a
/// temporary file in the same directory, fsync, rename over the target, fsync the directory.

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

#include "mpx/error.hpp"

namespace mpx::io {

namespace detail {
[[noreturn]] inline void fail(const char* what, const std::filesystem::path& path, int error_number) {
  throw io_error(mpx::detail::concat("mpx::io::write_file_atomically: ", what, " \"", path.string(),
                                     "\" failed: ", std::strerror(error_number)));
}
}  // namespace detail

/// @brief Replaces `path` with `contents` atomically; on any failure (disk full, permissions) throws
/// `mpx::io_error` naming the path and the reason, removes the temporary file and leaves `path` as it
/// was.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  const std::filesystem::path directory = path.has_parent_path() ? path.parent_path() : ".";
  // A hidden, unique name in the same directory (so that the rename stays within one filesystem),
  // created with mode 0666 so that the kernel applies the umask as for any new file.
  static std::atomic<unsigned> counter{0};
  std::string temporary;
  int fd = -1;
  for (int attempt = 0; fd < 0 && attempt < 100; ++attempt) {
    std::string name = ".";
    name.append(path.filename().string())
        .append(".tmp.")
        .append(std::to_string(::getpid()))
        .append(".")
        .append(std::to_string(counter.fetch_add(1)));
    temporary = (directory / name).string();
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) detail::fail("creating a temporary file next to", path, errno);
  const auto abandon = [&](const char* what) {
    const int error_number = errno;
    ::close(fd);
    ::unlink(temporary.c_str());
    detail::fail(what, path, error_number);
  };
  for (std::size_t written = 0; written < contents.size();) {
    const ::ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("writing the temporary file for");
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) abandon("flushing the temporary file for");
  if (::close(fd) != 0) {
    const int error_number = errno;
    ::unlink(temporary.c_str());
    detail::fail("closing the temporary file for", path, error_number);
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error_number = errno;
    ::unlink(temporary.c_str());
    detail::fail("renaming the temporary file onto", path, error_number);
  }
  // The rename is durable only once the directory entry is on disk.
  const int directory_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
  if (directory_fd < 0) detail::fail("opening the directory (to make the rename durable) of", path, errno);
  const int synced = ::fsync(directory_fd);
  const int error_number = errno;
  ::close(directory_fd);
  if (synced != 0)
    detail::fail("flushing the directory (the new file is in place, but may not survive a crash) of", path,
                 error_number);
}

}  // namespace mpx::io
