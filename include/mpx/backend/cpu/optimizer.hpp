// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer updates on the CPU: one pass per parameter that reads the (unscaled) gradient,
/// updates the optimizer state and the master weights, and refreshes the compute copy.
///
/// The update rules are those of PyTorch's single-tensor `torch.optim.SGD` and `torch.optim.AdamW`,
/// operation by operation, in the gradient's type (fp32; fp64 under fp64); PyTorch's CPU kernels may
/// fuse some multiply-adds, so results agree to rounding, not always to the bit.

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
    static_assert(SixteenBitElement<M>, "mpx::cpu: stochastic rounding needs fp16 or bf16 master weights");
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

/// @brief One SGD step, as PyTorch's single-tensor SGD: d = g + wd * p; with momentum the buffer
/// is d on the first step and momentum * buf + (1 - dampening) * d after; Nesterov uses
/// d + momentum * buf; p -= lr * d. `momentum_buffer` may be null when momentum is 0. `compute` is
/// the compute copy to refresh (null when the compute weights are the master weights).
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void sgd_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                Tensor<G, Host>* momentum_buffer, bool first_step, const SgdSettings& s,
                const Rounding& rounding = {}) {
  detail::require_same_shapes("mpx::cpu::sgd_update", master, compute, grad);
  using Math = G;
  const auto weight_decay = static_cast<Math>(s.weight_decay);
  const auto momentum = static_cast<Math>(s.momentum);
  const auto keep = static_cast<Math>(1.0 - s.dampening);
  const auto minus_lr = static_cast<Math>(-s.lr);
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* buf = momentum_buffer != nullptr ? momentum_buffer->data() : nullptr;
  parallel_for_chunks(master.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Math weight = static_cast<Math>(p[i]);
      Math d = s.weight_decay != 0.0 ? g[i] + weight_decay * weight : g[i];
      if (s.momentum != 0.0) {
        buf[i] = first_step ? d : buf[i] * momentum + keep * d;
        d = s.nesterov ? d + momentum * buf[i] : buf[i];
      }
      detail::store_weight(p, copy, i, weight + minus_lr * d, rounding);
    }
  });
}

/// @brief One AdamW step, as PyTorch's single-tensor AdamW; `step` counts from 1.
///
/// p *= 1 - lr * wd; m = lerp(m, g, 1 - beta1); v = v * beta2 + (1 - beta2) g^2;
/// p += -(lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps). Scalars are computed in
/// double and rounded once; lerp is PyTorch's (m + w (g - m) for w < 0.5, else g - (g - m)(1 - w)).
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void adamw_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                  Tensor<G, Host>& exp_avg, Tensor<G, Host>& exp_avg_sq, std::int64_t step,
                  const AdamWSettings& s, const Rounding& rounding = {}) {
  detail::require_same_shapes("mpx::cpu::adamw_update", master, compute, grad);
  require_shape("mpx::cpu::adamw_update", "exp_avg", exp_avg.shape(), master.shape());
  require_shape("mpx::cpu::adamw_update", "exp_avg_sq", exp_avg_sq.shape(), master.shape());
  using Math = G;
  const double bias_correction1 = 1.0 - std::pow(s.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(s.beta2, static_cast<double>(step));
  const auto decay = static_cast<Math>(1.0 - s.lr * s.weight_decay);
  const auto lerp_weight = static_cast<Math>(1.0 - s.beta1);
  const auto beta2 = static_cast<Math>(s.beta2);
  const auto one_minus_beta2 = static_cast<Math>(1.0 - s.beta2);
  const auto bias_correction2_sqrt = static_cast<Math>(std::sqrt(bias_correction2));
  const auto epsilon = static_cast<Math>(s.epsilon);
  const auto minus_step_size = static_cast<Math>(-(s.lr / bias_correction1));
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* m = exp_avg.data();
  G* v = exp_avg_sq.data();
  parallel_for_chunks(master.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Math weight = static_cast<Math>(p[i]) * decay;
      m[i] = lerp_weight < Math(0.5) ? m[i] + lerp_weight * (g[i] - m[i])
                                     : g[i] - (g[i] - m[i]) * (Math(1) - lerp_weight);
      v[i] = v[i] * beta2 + one_minus_beta2 * g[i] * g[i];
      const Math denominator = std::sqrt(v[i]) / bias_correction2_sqrt + epsilon;
      detail::store_weight(p, copy, i, weight + minus_step_size * m[i] / denominator, rounding);
    }
  });
}

}  // namespace mpx::cpu
