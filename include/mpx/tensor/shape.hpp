// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Shape`: the runtime extents of a tensor, rank 1 to 4, row-major.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>

#include "mpx/error.hpp"

namespace mpx {

/// @brief Extents of a row-major tensor of rank 1 to 4. A default-constructed shape has rank 0 and
/// describes an empty tensor.
class Shape {
 public:
  /// @brief Most dimensions a shape can have.
  static constexpr int max_rank = 4;
  /// Largest element count: 2^59, so that a byte count of 8-byte elements fits in an int64.
  static constexpr std::int64_t max_elements = std::int64_t{1} << 59;

  Shape() = default;

  /// @brief Shape with the given extents; throws `mpx::shape_error` for rank outside 1..4 or a
  /// negative extent.
  Shape(std::initializer_list<std::int64_t> extents) {
    if (extents.size() < 1 || extents.size() > max_rank) {
      throw shape_error(detail::concat("mpx::Shape: rank ", extents.size(), " is not supported; ",
                                       "tensors have rank 1 to ", max_rank));
    }
    for (const std::int64_t extent : extents) {
      if (extent < 0) {
        throw shape_error(
            detail::concat("mpx::Shape: extent ", extent, " at dimension ", rank_, " is negative"));
      }
      extents_[static_cast<std::size_t>(rank_++)] = extent;
    }
    // Element counts must leave room for a byte count of the widest element (8 bytes).
    std::int64_t count = 1;
    for (int i = 0; i < rank_; ++i) {
      if (__builtin_mul_overflow(count, extents_[static_cast<std::size_t>(i)], &count) ||
          count > max_elements) {
        throw shape_error(
            detail::concat("mpx::Shape: ", to_string(), " has more than ", max_elements, " elements"));
      }
    }
  }

  /// @brief Number of dimensions.
  [[nodiscard]] int rank() const noexcept { return rank_; }

  /// @brief Extent of dimension `dim`; negative `dim` counts from the back (-1 is the last).
  [[nodiscard]] std::int64_t operator[](int dim) const {
    const int index = dim < 0 ? dim + rank_ : dim;
    if (index < 0 || index >= rank_) {
      throw shape_error(
          detail::concat("mpx::Shape: dimension ", dim, " is out of range for shape ", to_string()));
    }
    return extents_[static_cast<std::size_t>(index)];
  }

  /// @brief Number of elements (0 for a rank-0 shape).
  [[nodiscard]] std::int64_t numel() const noexcept {
    if (rank_ == 0) return 0;
    std::int64_t count = 1;
    for (int i = 0; i < rank_; ++i) count *= extents_[static_cast<std::size_t>(i)];
    return count;
  }

  /// @brief Rows of the matrix view: the product of all extents but the last.
  [[nodiscard]] std::int64_t rows() const noexcept {
    if (rank_ == 0) return 0;
    std::int64_t count = 1;
    for (int i = 0; i + 1 < rank_; ++i) count *= extents_[static_cast<std::size_t>(i)];
    return count;
  }

  /// @brief Columns of the matrix view: the last extent.
  [[nodiscard]] std::int64_t cols() const noexcept {
    return rank_ == 0 ? 0 : extents_[static_cast<std::size_t>(rank_ - 1)];
  }

  /// @brief This shape with its last extent replaced by `extent`: a layer's output shape from its
  /// input's (`[batch, sequence, in]` -> `[batch, sequence, out]`).
  [[nodiscard]] Shape with_last(std::int64_t extent) const {
    if (rank_ == 0) throw shape_error("mpx::Shape::with_last: the shape is empty (rank 0)");
    if (extent < 0)
      throw shape_error(detail::concat("mpx::Shape::with_last: extent ", extent, " is negative"));
    Shape shape = *this;
    shape.extents_[static_cast<std::size_t>(rank_ - 1)] = extent;
    return shape;
  }

  /// @brief This shape with its first extent replaced by `extent`: the shape of some of a batch's
  /// rows (`[batch, features]` -> `[count, features]`).
  [[nodiscard]] Shape with_first(std::int64_t extent) const {
    if (rank_ == 0) throw shape_error("mpx::Shape::with_first: the shape is empty (rank 0)");
    if (extent < 0)
      throw shape_error(detail::concat("mpx::Shape::with_first: extent ", extent, " is negative"));
    Shape shape = *this;
    shape.extents_[0] = extent;
    return shape;
  }

  /// @brief "[2, 3]".
  [[nodiscard]] std::string to_string() const {
    std::string text = "[";
    for (int i = 0; i < rank_; ++i) {
      if (i > 0) text += ", ";
      text += std::to_string(extents_[static_cast<std::size_t>(i)]);
    }
    return text + "]";
  }

  /// @brief Same rank and extents.
  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return a.rank_ == b.rank_ && a.extents_ == b.extents_;
  }

  /// @brief Writes the shape as `[2, 3]`.
  friend std::ostream& operator<<(std::ostream& out, const Shape& shape) { return out << shape.to_string(); }

 private:
  std::array<std::int64_t, max_rank> extents_{};
  int rank_ = 0;
};

}  // namespace mpx
