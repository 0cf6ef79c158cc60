// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `label_tensor`: a host tensor of class labels from a list, for tests.

#include <cstdint>
#include <initializer_list>
#include <span>

#include <mpx/tensor/shape.hpp>
#include <mpx/tensor/tensor.hpp>

namespace mpx::test {

/// @brief A [values.size()] host tensor holding `values`.
inline Tensor<std::int32_t> label_tensor(std::span<const std::int32_t> values) {
  Tensor<std::int32_t> labels(Shape{static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) labels[static_cast<std::int64_t>(i)] = values[i];
  return labels;
}

/// @brief A host label tensor from a braced list: `label_tensor({0, 1, 1})`.
inline Tensor<std::int32_t> label_tensor(std::initializer_list<std::int32_t> values) {
  return label_tensor(std::span<const std::int32_t>(values.begin(), values.size()));
}

}  // namespace mpx::test
