// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Mean squared error on the CPU, in fp32 (fp64 for double) whatever the prediction's type.

#include <cstdint>

#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief mean((prediction - target)^2) over all elements (PyTorch's default reduction); optionally
/// writes dprediction = grad_seed * 2 (prediction - target) / count.
template <FloatingElement T, FloatingElement U>
accumulate_t<T> mse_loss(const Tensor<T, Host>& prediction, const Tensor<U, Host>& target, float grad_seed,
                         Tensor<T, Host>* dprediction) {
  using Acc = accumulate_t<T>;
  constexpr const char* where = "mpx::cpu::mse_loss";
  require_shape(where, "target", target.shape(), prediction.shape());
  if (dprediction != nullptr) require_shape(where, "dprediction", dprediction->shape(), prediction.shape());
  const std::int64_t count = prediction.numel();
  const Acc grad_scale = static_cast<Acc>(2) * static_cast<Acc>(grad_seed) / static_cast<Acc>(count);
  Acc total = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const Acc diff = static_cast<Acc>(prediction[i]) - static_cast<Acc>(target[i]);
    total += diff * diff;
    if (dprediction != nullptr) (*dprediction)[i] = round_to<tag_of_t<T>>(diff * grad_scale);
  }
  return count == 0 ? Acc(0) : total / static_cast<Acc>(count);
}

/// @brief The training step's form: the seed is `seed.value()` (a `LossSeed`), the loss is *added*
/// to `*loss_sum`, as the CUDA backend does it in device memory. `partials` is the CUDA form's
/// scratch; the CPU does not need it.
template <Element T, Element U, class Seed>
void mse_loss(const Tensor<T, Host>& prediction, const Tensor<U, Host>& target, const Seed& seed,
              Tensor<T, Host>* dprediction, Tensor<accumulate_t<T>, Host>& /*partials*/, double* loss_sum) {
  *loss_sum += static_cast<double>(mse_loss(prediction, target, seed.value(), dprediction));
}

}  // namespace mpx::cpu
