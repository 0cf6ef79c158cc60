// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer updates on the CPU: one pass per parameter that reads the (unscaled) gradient,
/// updates the optimizer state and the master weights, and refreshes the compute copy.
///
/// The update rules are PyTorch's `torch.optim.SGD` and `torch.optim.AdamW` (single-tensor
/// implementations), in fp32 (fp64 for double parameters).

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {
// Writes an updated master value, rounded into the master type as `rounding` says (stochastic
// rounding draws random_bits(seed, stream, index)), and the compute copy from the stored master.
template <Element M, Element C, class Rounding, class Value>
void store_weight(M* master, C* compute, std::int64_t index, Value value, const Rounding& rounding) {
  if constexpr (std::is_same_v<Rounding, RoundStochastic>) {
    master[index] = round_stochastic<tag_of_t<M>>(
        static_cast<float>(value),
        random_bits(rounding.seed, rounding.stream, static_cast<std::uint64_t>(index)));
  } else {
    master[index] = round_to<tag_of_t<M>>(value);
  }
  if (compute != nullptr)
    compute[index] = round_to<tag_of_t<C>>(static_cast<math_t<tag_of_t<M>>>(master[index]));
}

template <Element M, Element C, Element G>
void require_same_shapes(const char* where, const Tensor<M, Host>& master, const Tensor<C, Host>* compute,
                         const Tensor<G, Host>& grad) {
  require_shape(where, "gradient", grad.shape(), master.shape());
  if (compute != nullptr) require_shape(where, "compute copy", compute->shape(), master.shape());
}
}  // namespace detail

/// @brief One SGD step. `momentum_buffer` may be null when momentum is 0; `first_step` makes the
/// buffer start as the gradient itself (PyTorch's rule). `compute` is the compute copy to refresh
/// (null when the compute weights are the master weights).
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void sgd_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                Tensor<G, Host>* momentum_buffer, bool first_step, const SgdSettings& s,
                const Rounding& rounding = {}) {
  detail::require_same_shapes("mpx::cpu::sgd_update", master, compute, grad);
  using Math = G;
  const std::int64_t count = master.numel();
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* buf = momentum_buffer != nullptr ? momentum_buffer->data() : nullptr;
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Math weight = static_cast<Math>(p[i]);
      Math d = g[i] + static_cast<Math>(s.weight_decay) * weight;
      if (s.momentum != 0.0f) {
        buf[i] = first_step ? d
                            : static_cast<Math>(s.momentum) * buf[i] +
                                  (Math(1) - static_cast<Math>(s.dampening)) * d;
        d = s.nesterov ? d + static_cast<Math>(s.momentum) * buf[i] : buf[i];
      }
      detail::store_weight(p, copy, i, weight - static_cast<Math>(s.lr) * d, rounding);
    }
  });
}

/// @brief One AdamW step; `step` counts from 1 and sets the bias corrections.
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void adamw_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                  Tensor<G, Host>& exp_avg, Tensor<G, Host>& exp_avg_sq, std::int64_t step,
                  const AdamWSettings& s, const Rounding& rounding = {}) {
  detail::require_same_shapes("mpx::cpu::adamw_update", master, compute, grad);
  require_shape("mpx::cpu::adamw_update", "exp_avg", exp_avg.shape(), master.shape());
  require_shape("mpx::cpu::adamw_update", "exp_avg_sq", exp_avg_sq.shape(), master.shape());
  using Math = G;
  const Math beta1 = static_cast<Math>(s.beta1);
  const Math beta2 = static_cast<Math>(s.beta2);
  const Math bias_correction1 = Math(1) - std::pow(beta1, static_cast<Math>(step));
  const Math bias_correction2_sqrt = std::sqrt(Math(1) - std::pow(beta2, static_cast<Math>(step)));
  const Math step_size = static_cast<Math>(s.lr) / bias_correction1;
  const Math decay = Math(1) - static_cast<Math>(s.lr) * static_cast<Math>(s.weight_decay);
  const std::int64_t count = master.numel();
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* m = exp_avg.data();
  G* v = exp_avg_sq.data();
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Math weight = static_cast<Math>(p[i]) * decay;
      m[i] = beta1 * m[i] + (Math(1) - beta1) * g[i];
      v[i] = beta2 * v[i] + (Math(1) - beta2) * g[i] * g[i];
      const Math denominator = std::sqrt(v[i]) / bias_correction2_sqrt + static_cast<Math>(s.epsilon);
      detail::store_weight(p, copy, i, weight - step_size * m[i] / denominator, rounding);
    }
  });
}

}  // namespace mpx::cpu
