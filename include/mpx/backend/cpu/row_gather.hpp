// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Gathering rows on the CPU, and its gradient (backend/row_gather_spec.hpp has the contract).

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "mpx/backend/row_gather_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y[m, :] = x[rows[m], :] over x's matrix view [R, C].
/// @param x    any tensor of rank 2 or more, read as [R, C]
/// @param rows [M] indices in [0, R)
/// @param y    [M, C], written
/// @throws mpx::shape_error naming the operand, mpx::invalid_argument naming an index out of range.
template <Element T>
void gather_rows(const Tensor<T, Host>& x, const Tensor<std::int32_t, Host>& rows, Tensor<T, Host>& y) {
  constexpr const char* where = "mpx::cpu::gather_rows";
  validate_gather_rows(where, x.shape(), rows.shape(), y.shape());
  const std::int64_t c = x.shape().cols();
  check_row_indices(where, rows.data(), rows.numel(), x.shape().rows());
  for (std::int64_t m = 0; m < rows.numel(); ++m) {
    std::memcpy(y.data() + m * c, x.data() + std::int64_t(rows[m]) * c,
                static_cast<std::size_t>(c) * sizeof(T));
  }
}

/// @brief dx[rows[m], :] = dy[m, :], every other row of dx 0.
/// @param dy   [M, C]
/// @param rows [M] distinct indices in [0, R), the forward's
/// @param dx   x's shape, read as [R, C], written whole
/// @throws mpx::shape_error naming the operand, mpx::invalid_argument naming an index out of range.
template <Element T>
void gather_rows_backward(const Tensor<T, Host>& dy, const Tensor<std::int32_t, Host>& rows,
                          Tensor<T, Host>& dx) {
  constexpr const char* where = "mpx::cpu::gather_rows_backward";
  validate_gather_rows(where, dx.shape(), rows.shape(), dy.shape());
  const std::int64_t c = dx.shape().cols();
  check_row_indices(where, rows.data(), rows.numel(), dx.shape().rows());
  std::fill(dx.data(), dx.data() + dx.numel(), T(0));
  for (std::int64_t m = 0; m < rows.numel(); ++m) {
    std::memcpy(dx.data() + std::int64_t(rows[m]) * c, dy.data() + m * c,
                static_cast<std::size_t>(c) * sizeof(T));
  }
}

}  // namespace mpx::cpu
