// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// libFuzzer target for the IDX reader (gzip'd or not): any input either reads into an array whose
// size is the product of its dimensions, or throws mpx::io_error. The input is handed over as an
// in-memory file (memfd), so the reader runs exactly as on a file on disk.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

#include <mpx/data/idx.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const int fd = ::memfd_create("mpx_idx_fuzz", 0);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  for (std::size_t done = 0; done < size;) {
    const ::ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  try {
    const mpx::data::IdxArray array = mpx::data::read_idx(path);
    std::int64_t product = 1;
    for (const std::int64_t extent : array.dims) product *= extent;
    if (array.dims.empty() || product != array.numel()) std::abort();
  } catch (const mpx::io_error&) {
  }
  return 0;
}
