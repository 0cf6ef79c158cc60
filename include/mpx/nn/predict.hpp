// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a classifier predicts, on the device its logits live on: `nn::predict(logits)` (the
/// class of each row) and `nn::count_correct(logits, labels)`.

#include <cstddef>
#include <cstdint>
#include <span>

#include "mpx/backend/argmax_spec.hpp"
#include "mpx/backend/backend.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The predicted class of each row of `logits` [batch, classes]: a [batch] int32 tensor on
/// the logits' device holding the index of the row's largest logit, the first one on ties and the
/// first NaN if any (`torch.argmax(logits, dim=1)`). On CUDA the kernel is queued and this returns
/// without waiting. Throws `mpx::shape_error` for logits that are not [batch, classes >= 1].
/// @code
/// const mpx::Tensor<std::int32_t, Device> classes = mpx::nn::predict(model.forward(x));
/// @endcode
template <FloatingElement T, class Device>
[[nodiscard]] Tensor<std::int32_t, Device> predict(const Tensor<T, Device>& logits) {
  validate_class_logits("mpx::nn::predict", logits);
  auto classes = Tensor<std::int32_t, Device>::uninitialized(Shape{logits.shape()[0]});
  Backend<Device>::argmax(logits, classes);
  return classes;
}

/// @brief How many rows of `logits` [batch, classes] `predict` assigns to their label (`labels`:
/// [batch] on the same device). On CUDA the count is computed on the device and read back (one
/// synchronisation). Throws `mpx::shape_error` unless there is one label per row.
template <FloatingElement T, class Device>
[[nodiscard]] std::int64_t count_correct(const Tensor<T, Device>& logits,
                                         const Tensor<std::int32_t, Device>& labels) {
  return Backend<Device>::count_correct(
      logits, std::span<const std::int32_t>(labels.data(), static_cast<std::size_t>(labels.numel())));
}

}  // namespace mpx::nn
