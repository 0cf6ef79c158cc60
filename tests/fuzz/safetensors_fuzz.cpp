// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// libFuzzer target for the safetensors reader: any input either parses into a file whose every
// tensor lies inside the buffer, or throws mpx::io_error. Anything else (a crash, a sanitizer report,
// another exception, an allocation above -malloc_limit_mb) is a bug. See docs/reliability.md.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <mpx/io/safetensors.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::byte> contents(size);
  if (size != 0) std::memcpy(contents.data(), data, size);
  try {
    const mpx::io::SafetensorsFile file = mpx::io::parse_safetensors(std::move(contents), "<fuzz>");
    volatile std::size_t total = 0;  // keeps the reads below from being optimised away
    for (const auto& [name, entry] : file.tensors()) {
      const auto bytes = file.data(entry);
      // Touch the first and last byte so that ASan checks the view lies inside the buffer.
      if (!bytes.empty())
        total = total + static_cast<std::size_t>(bytes.front()) + static_cast<std::size_t>(bytes.back());
      if (bytes.size() != static_cast<std::size_t>(entry.numel()) * mpx::io::dtype_size(entry.dtype))
        std::abort();
    }
  } catch (const mpx::io_error&) {
  }
  return 0;
}
