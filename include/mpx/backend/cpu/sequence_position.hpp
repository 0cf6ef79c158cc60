// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief One position of each sequence on the CPU, and its gradient
/// (backend/sequence_position_spec.hpp has the contract).

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "mpx/backend/sequence_position_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y[n, :] = x[n, position, :].
/// @param x        sequences [N, T, C]
/// @param position the position taken, in [0, T)
/// @param y        [N, C], written
/// @throws mpx::shape_error naming the operand otherwise.
template <Element T>
void take_position(const Tensor<T, Host>& x, std::int64_t position, Tensor<T, Host>& y) {
  validate_take_position("mpx::cpu::take_position", x.shape(), position, y.shape());
  const std::int64_t n = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(y.data() + i * c, x.data() + (i * t + position) * c, static_cast<std::size_t>(c) * sizeof(T));
  }
}

/// @brief dx[n, position, :] = dy[n, :], every other element of dx 0.
/// @param dy       [N, C]
/// @param position the position the forward took
/// @param dx       [N, T, C], written whole
/// @throws mpx::shape_error naming the operand otherwise.
template <Element T>
void take_position_backward(const Tensor<T, Host>& dy, std::int64_t position, Tensor<T, Host>& dx) {
  validate_take_position("mpx::cpu::take_position_backward", dx.shape(), position, dy.shape());
  const std::int64_t n = dx.shape()[0], t = dx.shape()[1], c = dx.shape()[2];
  std::fill(dx.data(), dx.data() + dx.numel(), T(0));
  for (std::int64_t i = 0; i < n; ++i) {
    std::memcpy(dx.data() + (i * t + position) * c, dy.data() + i * c,
                static_cast<std::size_t>(c) * sizeof(T));
  }
}

}  // namespace mpx::cpu
