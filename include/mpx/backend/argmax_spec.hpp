// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The operand check of the per-row argmax (`argmax`, `count_correct`), shared by the CPU and
/// CUDA backends so that both accept the same logits and name a mismatch the same way.

#include <cstdint>
#include <limits>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Throws `mpx::shape_error` naming `where` unless `logits` is [batch, classes] with
/// 1 <= classes <= 2^31 - 1 (a predicted class is an int32).
template <class Logits>
void validate_class_logits(const char* where, const Logits& logits) {
  if (logits.rank() != 2 || logits.shape()[1] < 1 ||
      logits.shape()[1] > std::numeric_limits<std::int32_t>::max()) {
    throw shape_error(detail::concat(where, ": logits of shape ", logits.shape(),
                                     "; expected [batch, classes] with 1 <= classes < 2^31"));
  }
}

}  // namespace mpx
