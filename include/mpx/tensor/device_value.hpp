// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `DeviceValue<T, Device>`: one trivially copyable value in the memory of a device, for
/// the scalars that kernels read and write in place (a training step's loss scale, skip flag and
/// update count), so that the host reads them back only when it asks.

#include <cstddef>
#include <type_traits>
#include <utility>

#include "mpx/tensor/device.hpp"
#include "mpx/tensor/host_memory.hpp"

namespace mpx {

/// @brief One `T` in `Device` memory, allocated on first use and zeroed then; move-only.
/// `DeviceMemory<Device>` must be complete where it is used (include <mpx/cuda.hpp> for `Cuda`).
template <class T, class Device>
class DeviceValue {
  static_assert(std::is_trivially_copyable_v<T>, "mpx::DeviceValue holds trivially copyable values only");

 public:
  DeviceValue() = default;
  DeviceValue(const DeviceValue&) = delete;
  DeviceValue& operator=(const DeviceValue&) = delete;
  /// @brief Takes `other`'s value; `other` is left empty.
  DeviceValue(DeviceValue&& other) noexcept : pointer_(std::exchange(other.pointer_, nullptr)) {}
  /// @brief Frees this value and takes `other`'s.
  DeviceValue& operator=(DeviceValue&& other) noexcept {
    if (this != &other) {
      release();
      pointer_ = std::exchange(other.pointer_, nullptr);
    }
    return *this;
  }
  ~DeviceValue() { release(); }

  /// @brief The value's address in device memory (allocated and zeroed on the first call).
  [[nodiscard]] T* get() {
    if (pointer_ == nullptr) {
      pointer_ = static_cast<T*>(DeviceMemory<Device>::allocate(sizeof(T)));
      DeviceMemory<Device>::zero(pointer_, sizeof(T));
    }
    return pointer_;
  }

  /// @brief Whether nothing has been allocated yet.
  [[nodiscard]] bool empty() const noexcept { return pointer_ == nullptr; }

  /// @brief Replaces the value with `value`, ordered after the work queued before (on a GPU the copy
  /// is queued; `value` may go away at once).
  void write(const T& value) { DeviceMemory<Device>::copy_from_host(get(), &value, sizeof(T)); }

  /// @brief A host copy of the value after the work queued before (a synchronisation on a GPU).
  /// Requires `!empty()`.
  [[nodiscard]] T read() const {
    T value;
    DeviceMemory<Device>::copy_to_host(&value, pointer_, sizeof(T));
    return value;
  }

 private:
  void release() noexcept {
    if (pointer_ != nullptr) DeviceMemory<Device>::deallocate(pointer_, sizeof(T));
    pointer_ = nullptr;
  }

  T* pointer_ = nullptr;
};

}  // namespace mpx
