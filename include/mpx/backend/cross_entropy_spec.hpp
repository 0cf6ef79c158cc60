// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the softmax cross-entropy kernels of both backends share: the default ignore index and
/// the operand checks, so that both accept the same logits (any rank >= 2, as their matrix view
/// [rows, classes]) and name a mismatch the same way.

#include <cstdint>

#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief The label of a row that adds no loss and gets a zero gradient unless another is chosen:
/// -100, PyTorch's `ignore_index` default.
inline constexpr std::int32_t default_ignore_index = -100;

/// @brief Throws naming `where` unless `logits` has rank >= 2 (its matrix view is [rows, classes]:
/// [batch, classes], or [batch, sequence, vocabulary] with batch x sequence rows), `label_count` is the
/// number of rows (not checked when negative: labels known only as a device pointer), the smoothing
/// is in [0, 1) and `dlogits`, when given, has the logits' shape.
template <class Logits>
void validate_softmax_cross_entropy(const char* where, const Logits& logits, std::int64_t label_count,
                                    float smoothing, const Logits* dlogits) {
  if (logits.rank() < 2) {
    throw shape_error(detail::concat(where,
                                     ": logits must be [batch, classes] or [batch, sequence, classes] ",
                                     "(rank >= 2), got ", logits.shape()));
  }
  if (label_count >= 0 && label_count != logits.shape().rows()) {
    throw shape_error(detail::concat(where, ": ", label_count, " labels for logits of shape ", logits.shape(),
                                     "; expected one per row (", logits.shape().rows(), ")"));
  }
  if (!(smoothing >= 0.0f && smoothing < 1.0f)) {
    throw invalid_argument(detail::concat(where, ": label smoothing ", smoothing, " is not in [0, 1)"));
  }
  if (dlogits != nullptr) require_shape(where, "dlogits", dlogits->shape(), logits.shape());
}

}  // namespace mpx
