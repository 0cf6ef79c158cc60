// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `DeviceMemory<D>`: the customisation point tensors allocate through, and its host
/// implementation (64-byte aligned, counted in `memory_stats<Host>()`).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

#include "mpx/error.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/memory_stats.hpp"

namespace mpx {

/// @brief Raw memory operations of a device: `allocate`, `deallocate`, `zero`, `copy`, `copy_from_host`,
/// `copy_to_host`, `alignment`.
/// Specialised for `Host` here and for `Cuda` in backend/cuda.
template <class Device>
struct DeviceMemory;

template <>
struct DeviceMemory<Host> {
  /// Cache-line alignment; also what AVX-512 loads prefer.
  static constexpr std::size_t alignment = 64;

  /// @brief Aligned, uninitialised bytes; throws `mpx::out_of_memory` with requested and available bytes.
  [[nodiscard]] static void* allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    void* pointer = ::operator new (bytes, std::align_val_t{alignment}, std::nothrow);
    if (pointer == nullptr) {
      throw out_of_memory(detail::concat("mpx: host allocation of ", bytes, " bytes failed (",
                                         available_bytes(), " bytes of physical memory available, ",
                                         memory_stats<Host>().live_bytes(), " held by mpx tensors)"));
    }
    memory_stats<Host>().on_allocate(static_cast<std::int64_t>(bytes));
    return pointer;
  }

  static void deallocate(void* pointer, std::size_t bytes) noexcept {
    if (pointer == nullptr) return;
    ::operator delete (pointer, std::align_val_t{alignment});
    memory_stats<Host>().on_free(static_cast<std::int64_t>(bytes));
  }

  static void zero(void* pointer, std::size_t bytes) noexcept {
    if (bytes != 0) std::memset(pointer, 0, bytes);
  }

  static void copy(void* destination, const void* source, std::size_t bytes) noexcept {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }

  /// @brief Copies from host memory: on the host, a plain copy.
  static void copy_from_host(void* destination, const void* host, std::size_t bytes) noexcept {
    copy(destination, host, bytes);
  }

  /// @brief Copies to host memory: on the host, a plain copy (the device's form waits for its queue).
  static void copy_to_host(void* host, const void* source, std::size_t bytes) noexcept {
    copy(host, source, bytes);
  }

  /// @brief Physical memory not in use, for out-of-memory messages (-1 where the OS does not say).
  [[nodiscard]] static std::int64_t available_bytes() noexcept {
#if defined(_SC_AVPHYS_PAGES) && defined(_SC_PAGESIZE)
    return static_cast<std::int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
#else
    return -1;
#endif
  }
};

}  // namespace mpx
