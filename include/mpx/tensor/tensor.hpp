// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Tensor<T, Device>`: an owning, row-major, aligned array with a runtime shape.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include <Eigen/Core>

#include "mpx/error.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/device.hpp"
#include "mpx/tensor/host_memory.hpp"
#include "mpx/tensor/shape.hpp"

namespace mpx {

/// @brief Row-major Eigen matrix type used for views of host tensors.
template <class T>
using RowMajorMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// @brief An owning, row-major tensor of rank 1 to 4 whose memory comes from `DeviceMemory<Device>`
/// and is counted in `memory_stats<Device>()`.
///
/// Move-only: copies are explicit (`clone()`), so a hidden copy of activations cannot inflate the
/// peak memory a benchmark reports. Host tensors expose Eigen maps; the matrix view of a tensor of
/// rank > 2 folds all leading dimensions into rows. `rows(first, count)` and `view` give tensors over
/// another tensor's elements without copying them (a micro-batch of a batch, a rank's rows).
///
/// @tparam T      element type: a number format's storage type (`double`, `float`, `Eigen::half`,
///                `Eigen::bfloat16`, `mpx::Encoded<Tag>`), or `std::int32_t` for class labels and
///                token ids.
/// @tparam Device `mpx::Host` or `mpx::Cuda`.
template <Element T, class Device = Host>
class Tensor {
  using Memory = DeviceMemory<Device>;

 public:
  /// @brief Element type.
  using value_type = T;
  /// @brief Device the elements live on.
  using device_type = Device;
  // The maps assume no alignment: a view (`rows`) may start anywhere in a tensor. Allocations are
  // 64-byte aligned all the same, and unaligned vector loads of aligned data cost nothing extra.
  /// @brief Eigen map of a rank-2 host tensor.
  using MatrixMap = Eigen::Map<RowMajorMatrix<T>>;
  /// @brief Read-only Eigen map of a rank-2 host tensor.
  using ConstMatrixMap = Eigen::Map<const RowMajorMatrix<T>>;
  /// @brief Eigen map of a host tensor's elements as a column vector.
  using VectorMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>;
  /// @brief Read-only Eigen map of a host tensor's elements as a column vector.
  using ConstVectorMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>;

  /// @brief An empty tensor (rank 0, no storage).
  Tensor() = default;

  /// @brief A zero-filled tensor of the given shape.
  explicit Tensor(const Shape& shape) : Tensor(uninitialized(shape)) { Memory::zero(data_, size_bytes()); }

  /// @brief A tensor of the given shape whose contents are unspecified (for outputs about to be
  /// overwritten).
  [[nodiscard]] static Tensor uninitialized(const Shape& shape) {
    Tensor tensor;
    try {
      tensor.data_ = static_cast<T*>(Memory::allocate(static_cast<std::size_t>(shape.numel()) * sizeof(T)));
    } catch (const out_of_memory& e) {
      throw out_of_memory(detail::concat("mpx::Tensor<", element_name<T>, ", ", Device::name, "> of shape ",
                                         shape, ": ", e.what()));
    }
    tensor.shape_ = shape;
    return tensor;
  }

  /// @brief A tensor of `shape` over elements at `data` that it does not own (a view into another
  /// tensor's elements, e.g. at an offset): it never frees them, so they must outlive it. A view may
  /// start at any element (on a GPU, that is how the tests give cuBLASLt operands off the allocator's
  /// 256-byte alignment).
  [[nodiscard]] static Tensor view(T* data, const Shape& shape) {
    Tensor tensor;
    tensor.data_ = data;
    tensor.shape_ = shape;
    tensor.owns_ = false;
    return tensor;
  }

  /// @brief Takes `other`'s elements; `other` is left empty.
  Tensor(Tensor&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        shape_(std::exchange(other.shape_, Shape{})),
        owns_(std::exchange(other.owns_, true)) {}

  /// @brief Frees this tensor's elements and takes `other`'s; `other` is left empty.
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      shape_ = std::exchange(other.shape_, Shape{});
      owns_ = std::exchange(other.owns_, true);
    }
    return *this;
  }

  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() { release(); }

  /// @brief A deep copy on the same device.
  [[nodiscard]] Tensor clone() const {
    Tensor copy = uninitialized(shape_);
    Memory::copy(copy.data_, data_, size_bytes());
    return copy;
  }

  /// @brief The extents (rank 0 for an empty, default-constructed tensor).
  [[nodiscard]] const Shape& shape() const noexcept { return shape_; }
  /// @brief Number of dimensions, 0 to 4.
  [[nodiscard]] int rank() const noexcept { return shape_.rank(); }
  /// @brief Number of elements.
  [[nodiscard]] std::int64_t numel() const noexcept { return shape_.numel(); }
  /// @brief Bytes of element storage (what the allocator counts).
  [[nodiscard]] std::size_t size_bytes() const noexcept {
    return static_cast<std::size_t>(numel()) * sizeof(T);
  }
  /// @brief Whether this tensor frees its elements (false for a `view`).
  [[nodiscard]] bool owns_elements() const noexcept { return owns_; }
  /// @brief Whether the tensor has no elements.
  [[nodiscard]] bool empty() const noexcept { return numel() == 0; }
  /// @brief The first element, in row-major order (null when empty); device memory for `Cuda`.
  [[nodiscard]] T* data() noexcept { return data_; }
  /// @brief Read-only overload.
  [[nodiscard]] const T* data() const noexcept { return data_; }

  /// @brief Rows [first, first + count) along the first dimension, as a view of this tensor's
  /// elements (no copy; shape `[count, ...]`, the other extents unchanged): a micro-batch of a batch,
  /// a rank's part of a global batch. Writes through the view reach this tensor, which must outlive
  /// it. Throws `mpx::shape_error` naming both when the rows are not inside `[0, shape()[0])`.
  /// @code
  /// const auto first_half = batch.rows(0, batch.shape()[0] / 2);  // [64, 784] of a [128, 784] batch
  /// @endcode
  [[nodiscard]] Tensor rows(std::int64_t first, std::int64_t count) {
    return view(data_ + first_row_offset(first, count), shape_.with_first(count));
  }
  /// @brief Read-only overload: a `const` view (it can be read, passed on as a `const Tensor&`, or
  /// bound to a `const` name; use the non-const overload to write).
  [[nodiscard]] const Tensor rows(std::int64_t first, std::int64_t count) const {
    return view(data_ + first_row_offset(first, count), shape_.with_first(count));
  }

  /// @brief Sets every byte to zero (all element types' +0.0); works on every device. Not `noexcept`:
  /// on a GPU it is a queued memset, which throws `mpx::cuda_error` after a device fault.
  void set_zero() { Memory::zero(data_, size_bytes()); }

  /// @brief Reinterprets the same elements under another shape with the same element count.
  void reshape(const Shape& shape) {
    if (shape.numel() != numel()) {
      throw shape_error(detail::concat("mpx::Tensor::reshape: cannot view ", shape_, " (", numel(),
                                       " elements) as ", shape, " (", shape.numel(), " elements)"));
    }
    shape_ = shape;
  }

  /// @brief Element at flat (row-major) position `index`; host only.
  [[nodiscard]] T& operator[](std::int64_t index) noexcept requires std::is_same_v<Device, Host> {
    return data_[index];
  }
  /// @brief Read-only overload.
  [[nodiscard]] const T& operator[](std::int64_t index) const noexcept requires std::is_same_v<Device, Host> {
    return data_[index];
  }

  /// @brief All elements in row-major order; host only.
  [[nodiscard]] std::span<T> values() noexcept requires std::is_same_v<Device, Host> {
    return {data_, static_cast<std::size_t>(numel())};
  }
  /// @brief Read-only overload.
  [[nodiscard]] std::span<const T> values() const noexcept requires std::is_same_v<Device, Host> {
    return {data_, static_cast<std::size_t>(numel())};
  }

  /// @brief Row-major matrix view: `shape().rows()` x `shape().cols()`; host only.
  [[nodiscard]] MatrixMap matrix() noexcept requires std::is_same_v<Device, Host> {
    return MatrixMap(data_, shape_.rows(), shape_.cols());
  }
  /// @brief Read-only overload.
  [[nodiscard]] ConstMatrixMap matrix() const noexcept requires std::is_same_v<Device, Host> {
    return ConstMatrixMap(data_, shape_.rows(), shape_.cols());
  }

  /// @brief Flat column-vector view of all elements; host only.
  [[nodiscard]] VectorMap vector() noexcept requires std::is_same_v<Device, Host> {
    return VectorMap(data_, numel());
  }
  /// @brief Read-only overload.
  [[nodiscard]] ConstVectorMap vector() const noexcept requires std::is_same_v<Device, Host> {
    return ConstVectorMap(data_, numel());
  }

  /// @brief Sets every element to `value`; host only.
  void fill(T value) noexcept requires std::is_same_v<Device, Host> {
    for (T& element : values()) element = value;
  }

 private:
  // The element offset of row `first`, after checking that rows [first, first + count) exist.
  [[nodiscard]] std::int64_t first_row_offset(std::int64_t first, std::int64_t count) const {
    const std::int64_t extent = shape_.rank() == 0 ? 0 : shape_[0];
    if (shape_.rank() == 0 || first < 0 || count < 0 || first > extent || count > extent - first) {
      throw shape_error(detail::concat("mpx::Tensor::rows: rows [", first, ", ", first + count,
                                       ") are outside the ", extent, " rows of a tensor of shape ", shape_));
    }
    return extent == 0 ? 0 : first * (numel() / extent);
  }

  void release() noexcept {
    if (owns_) Memory::deallocate(data_, size_bytes());
    data_ = nullptr;
    owns_ = true;
  }

  T* data_ = nullptr;
  Shape shape_;
  bool owns_ = true;  // false for a view
};

/// @brief Throws `mpx::shape_error` naming `where` and both shapes unless `actual == expected`.
inline void require_shape(const char* where, const char* what, const Shape& actual, const Shape& expected) {
  if (!(actual == expected)) {
    throw shape_error(detail::concat(where, ": ", what, " has shape ", actual, ", expected ", expected));
  }
}

}  // namespace mpx
