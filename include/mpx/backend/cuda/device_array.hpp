// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cuda::DeviceArray<T>`: device memory for what is not a tensor element (class labels,
/// counters, a step's scalars), from the same pool and counted in `memory_stats<Cuda>()`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA
#error \
    "mpx/backend/cuda/device_array.hpp needs the CUDA backend: link mpx::cuda (which defines MPX_HAS_CUDA=1)"
#endif  // !MPX_HAS_CUDA

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "mpx/backend/cuda/check.hpp"
#include "mpx/backend/cuda/context.hpp"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/error.hpp"

namespace mpx::cuda {

/// @brief An owning, move-only array of `T` in device memory, ordered on the context's stream.
/// @tparam T a trivially copyable type (int32 labels, counters, partial sums).
template <class T>
requires std::is_trivially_copyable_v<T>
class DeviceArray {
  using Memory = DeviceMemory<Cuda>;

 public:
  /// @brief An empty array.
  DeviceArray() = default;
  /// @brief `count` elements whose contents are unspecified.
  explicit DeviceArray(std::size_t count)
      : data_(static_cast<T*>(Memory::allocate(count * sizeof(T)))), count_(count) {}
  /// @brief An array holding a copy of `values` (copied asynchronously on the context's stream;
  /// `values` must stay alive until that copy has run, as for `cudaMemcpyAsync`).
  explicit DeviceArray(std::span<const T> values) : DeviceArray(values.size()) { upload(values); }

  /// @brief Takes `other`'s memory; `other` is left empty.
  DeviceArray(DeviceArray&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), count_(std::exchange(other.count_, 0)) {}
  /// @brief Frees this array's memory and takes `other`'s.
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    if (this != &other) {
      Memory::deallocate(data_, count_ * sizeof(T));
      data_ = std::exchange(other.data_, nullptr);
      count_ = std::exchange(other.count_, 0);
    }
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { Memory::deallocate(data_, count_ * sizeof(T)); }

  /// @brief The first element (device memory; null when empty).
  [[nodiscard]] T* data() noexcept { return data_; }
  /// @brief Read-only overload.
  [[nodiscard]] const T* data() const noexcept { return data_; }
  /// @brief Number of elements.
  [[nodiscard]] std::size_t size() const noexcept { return count_; }
  /// @brief Whether the array has no elements.
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  /// @brief A span over the device memory (for kernels; not dereferenceable on the host).
  [[nodiscard]] std::span<const T> device_span() const noexcept { return {data_, count_}; }

  /// @brief Copies `values` (same size) into the array, asynchronously on the context's stream.
  void upload(std::span<const T> values) {
    if (values.size() != count_) {
      throw shape_error(mpx::detail::concat("mpx::cuda::DeviceArray::upload: ", values.size(),
                                            " values for an array of ", count_));
    }
    if (count_ != 0) {
      MPX_CUDA_CHECK(cudaMemcpyAsync(data_, values.data(), count_ * sizeof(T), cudaMemcpyHostToDevice,
                                     cuda_context().stream()));
    }
  }

  /// @brief The elements, copied to the host; waits for the stream (a synchronising call).
  [[nodiscard]] std::vector<T> download() const {
    std::vector<T> values(count_);
    if (count_ != 0) {
      CudaContext& context = cuda_context();
      MPX_CUDA_CHECK(cudaMemcpyAsync(values.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost,
                                     context.stream()));
      context.synchronize();
    }
    return values;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

/// @brief Whether `pointer` is memory a kernel can read: device or managed memory (not pageable or
/// pinned host memory). A host-only query; it does not synchronise.
inline bool is_device_pointer(const void* pointer) {
  cudaPointerAttributes attributes{};
  MPX_CUDA_CHECK(cudaPointerGetAttributes(&attributes, pointer));
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace mpx::cuda
