// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Concatenation along the channels (the last dimension) on the CPU and its reverse, the
/// split: row copies, exact (backend/channel_concat_spec.hpp).

#include <cstdint>
#include <cstring>

#include "mpx/backend/channel_concat_spec.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y [..., Ca + Cb] = a [..., Ca] followed by b [..., Cb] along the last dimension, bit for bit.
/// @throws mpx::shape_error unless the leading extents agree and y has the joined shape.
template <Element T>
void concat_channels(const Tensor<T, Host>& a, const Tensor<T, Host>& b, Tensor<T, Host>& y) {
  validate_channel_concat("mpx::cpu::concat_channels", a.shape(), b.shape(), y.shape());
  const std::int64_t ca = a.shape().cols(), cb = b.shape().cols(), c = ca + cb;
  const T* first = a.data();
  const T* second = b.data();
  T* joined = y.data();
  parallel_for_chunks(y.shape().rows(), rows_per_chunk(c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      std::memcpy(joined + row * c, first + row * ca, static_cast<std::size_t>(ca) * sizeof(T));
      std::memcpy(joined + row * c + ca, second + row * cb, static_cast<std::size_t>(cb) * sizeof(T));
    }
  });
}

/// @brief The reverse of `concat_channels`: a [..., Ca] and b [..., Cb] from y [..., Ca + Cb], bit
/// for bit (a concatenation's backward: the gradients of its two inputs).
/// @throws mpx::shape_error unless the leading extents agree and y has the joined shape.
template <Element T>
void split_channels(const Tensor<T, Host>& y, Tensor<T, Host>& a, Tensor<T, Host>& b) {
  validate_channel_concat("mpx::cpu::split_channels", a.shape(), b.shape(), y.shape());
  const std::int64_t ca = a.shape().cols(), cb = b.shape().cols(), c = ca + cb;
  const T* joined = y.data();
  T* first = a.data();
  T* second = b.data();
  parallel_for_chunks(y.shape().rows(), rows_per_chunk(c), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      std::memcpy(first + row * ca, joined + row * c, static_cast<std::size_t>(ca) * sizeof(T));
      std::memcpy(second + row * cb, joined + row * c + ca, static_cast<std::size_t>(cb) * sizeof(T));
    }
  });
}

}  // namespace mpx::cpu
