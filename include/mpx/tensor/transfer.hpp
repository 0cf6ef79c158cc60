// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Moving tensors between devices: `mpx::to<Device>(tensor)` and `mpx::copy(destination,
/// source)`, written once for every pair of devices over the customisation point
/// `DeviceTransfer<To, From>`. Host <-> Host is here; the pairs with `Cuda` are specialised in
/// backend/cuda/memory.hpp, so CPU-only code never reaches a CUDA header.

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>

#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Raw copies from device `From` to device `To`: `static void copy(void* destination, const
/// void* source, std::size_t bytes)`. A copy to the host has finished when `copy` returns; a copy
/// to a GPU is queued on its stream, after the work already queued there. Specialised for
/// `<Host, Host>` here and for the pairs with `Cuda` in backend/cuda/memory.hpp.
template <class To, class From>
struct DeviceTransfer;

/// @brief Host to host: `std::memcpy`, finished on return.
template <>
struct DeviceTransfer<Host, Host> {
  /// @brief `std::memcpy`.
  static void copy(void* destination, const void* source, std::size_t bytes) noexcept {
    if (bytes != 0) std::memcpy(destination, source, bytes);
  }
};

/// @brief Copies `source` into `destination` (same shape, else `mpx::shape_error`) between any two
/// devices. Waits for the copy when the destination is on the host; a copy to a GPU is queued on its
/// stream (the source may be reused at once: pageable host memory is staged before this returns).
template <Element T, class To, class From>
void copy(Tensor<T, To>& destination, const Tensor<T, From>& source) {
  require_shape("mpx::copy", "destination", destination.shape(), source.shape());
  if (!source.empty()) DeviceTransfer<To, From>::copy(destination.data(), source.data(), source.size_bytes());
}

/// @brief `source` on device `To`: a new tensor holding a copy (same shape and bits) when `source`
/// lives elsewhere. A copy to the host waits for the device; a copy to a GPU is queued and returns
/// at once.
/// @code
/// auto labels_gpu = mpx::to<mpx::Cuda>(labels);    // Tensor<std::int32_t, Cuda>
/// const auto& x = mpx::to<Device>(images);          // no copy when Device is Host
/// @endcode
template <class To, Element T, class From>
requires(!std::is_same_v<To, From>) [[nodiscard]] Tensor<T, To> to(const Tensor<T, From>& source) {
  auto result = Tensor<T, To>::uninitialized(source.shape());
  copy(result, source);
  return result;
}

/// @brief `source` itself when it already lives on `To`: no copy and no allocation (tensors are
/// move-only; `clone()` is the explicit copy). Bind the result to `const auto&`, which also holds a
/// copy from another device, so that one line serves every device.
template <class To, Element T>
[[nodiscard]] const Tensor<T, To>& to(const Tensor<T, To>& source) noexcept {
  return source;
}

/// @brief A temporary already on `To` is moved into the result (so that it cannot dangle).
template <class To, Element T>
[[nodiscard]] Tensor<T, To> to(Tensor<T, To>&& source) noexcept {
  return std::move(source);
}

/// @brief `source` on device `To`, reusing `buffer`'s memory: `source` itself when it already lives
/// on `To` (`buffer` untouched), else `buffer` after the copy into it (reallocated only when its shape
/// differs, so a loop over batches allocates once). As the one-argument form, a copy to the host
/// waits and a copy to a GPU is queued.
/// @code
/// mpx::Tensor<float, Device> device_batch;                        // before the loop
/// const auto& x = mpx::to<Device>(host_batch, device_batch);      // in it
/// @endcode
template <class To, Element T, class From>
[[nodiscard]] const Tensor<T, To>& to(const Tensor<T, From>& source, Tensor<T, To>& buffer) {
  if constexpr (std::is_same_v<To, From>) {
    return source;
  } else {
    if (!(buffer.shape() == source.shape())) buffer = Tensor<T, To>::uninitialized(source.shape());
    copy(buffer, source);
    return buffer;
  }
}

}  // namespace mpx
