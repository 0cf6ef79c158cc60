// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer updates on the CPU: one pass per parameter that reads the (unscaled) gradient,
/// updates the optimizer state and the master weights, and refreshes the compute copy.
///
/// The update rules are those of PyTorch's single-tensor `torch.optim.SGD` and `torch.optim.AdamW`,
/// operation by operation, in the gradient's type (fp32; fp64 under fp64), each operation rounded on
/// its own. That is bit for bit torch's `fused=True` (and, for SGD, every implementation) on torch's
/// CPU kernels without SIMD; docs/training.md measures where its other configurations differ (fused
/// multiply-adds, a `sqrt` that is not correctly rounded).

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <type_traits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {
template <Element M, Element C, Element G>
void require_same_shapes(const char* where, const Tensor<M, Host>& master, const Tensor<C, Host>* compute,
                         const Tensor<G, Host>& grad) {
  require_shape(where, "gradient", grad.shape(), master.shape());
  if (compute != nullptr) require_shape(where, "compute copy", compute->shape(), master.shape());
}

// x[i] = sqrt(x[i]), correctly rounded as std::sqrt, with the vector instructions where there are
// some: GCC does not vectorise std::sqrt unless errno may be ignored (-fno-math-errno), and Eigen's
// packet sqrt for float is an approximation under its default EIGEN_FAST_MATH.
template <std::floating_point T>
void sqrt_in_place(T* x, std::int64_t count) {
  std::int64_t i = 0;
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 16 <= count; i += 16) _mm512_storeu_ps(x + i, _mm512_sqrt_ps(_mm512_loadu_ps(x + i)));
  }
#elif defined(__AVX__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 8 <= count; i += 8) _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  }
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<T, float>) {
    for (; i + 4 <= count; i += 4) _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  }
#endif
  for (; i < count; ++i) x[i] = std::sqrt(x[i]);
}
}  // namespace detail

/// @brief One SGD update of a training step, as PyTorch's single-tensor SGD: d = g + wd * p; with
/// momentum the buffer is d on the first update (`control->optimizer_step == 0`) and
/// momentum * buf + (1 - dampening) * d after; Nesterov uses d + momentum * buf; p -= lr * d.
/// `control` (see `UpdateControl`) decides: nothing happens when `skip`; lr is `control->lr`
/// (`s.lr` is not read); each gradient is multiplied by its clipping factor when `clipped` (the
/// gradient tensor is not written). `momentum_buffer` may be null when momentum is 0; `compute` is
/// the compute copy to refresh (null when the compute weights are the master weights). `rounding`
/// is `RoundNearest`, `RoundStochastic` or `RoundStochasticPerUpdate` (update number
/// `control->optimizer_step + 1`).
template <Element M, Element C, Element G, class Rounding>
void sgd_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                Tensor<G, Host>* momentum_buffer, const SgdSettings& s, const Rounding& rounding,
                const UpdateControl* control) {
  static_assert(
      is_optimizer_rounding<Rounding>,
      "mpx::cpu::sgd_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  detail::require_same_shapes("mpx::cpu::sgd_update", master, compute, grad);
  if (control->skip != 0) return;
  using Acc = G;
  const auto coefficients = sgd_coefficients<Acc>(s, control->lr, control->optimizer_step == 0);
  const auto round = rounding_at(rounding, control->optimizer_step + 1);
  const Acc clip = clip_factor<Acc>(*control);
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* buf = momentum_buffer != nullptr ? momentum_buffer->data() : nullptr;
  parallel_for_chunks(master.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) {
      const Acc weight = sgd_step(static_cast<Acc>(p[i]), clipped_gradient(g[i], *control, clip),
                                  buf != nullptr ? buf + i : nullptr, coefficients);
      mpx::detail::store_weight(p, copy, i, weight, round);
    }
  });
}

/// @brief One SGD step at `s.lr` outside a training step; the momentum buffer starts when
/// `first_step`. The same update as the `UpdateControl` overload.
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void sgd_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                Tensor<G, Host>* momentum_buffer, bool first_step, const SgdSettings& s,
                const Rounding& rounding = {}) {
  const UpdateControl control{.lr = s.lr, .optimizer_step = first_step ? 0 : 1};
  sgd_update(master, compute, grad, momentum_buffer, s, rounding, &control);
}

/// @brief One AdamW update of a training step, as PyTorch's single-tensor AdamW, with
/// t = `control->optimizer_step + 1`:
///
/// p *= 1 - lr * wd; m = lerp(m, g, 1 - beta1); v = v * beta2 + (1 - beta2) g^2;
/// p += -(lr / (1 - beta1^t)) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps). Scalars are computed in
/// double and rounded once; lerp is PyTorch's (m + w (g - m) for w < 0.5, else g - (g - m)(1 - w)).
/// `control` and `rounding` as for `sgd_update`; the bias corrections are the control's when it holds
/// them (`AdamWBiasCorrections`), else derived from t.
template <Element M, Element C, Element G, class Rounding>
void adamw_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                  Tensor<G, Host>& exp_avg, Tensor<G, Host>& exp_avg_sq, const AdamWSettings& s,
                  const Rounding& rounding, const UpdateControl* control) {
  static_assert(
      is_optimizer_rounding<Rounding>,
      "mpx::cpu::adamw_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  detail::require_same_shapes("mpx::cpu::adamw_update", master, compute, grad);
  require_shape("mpx::cpu::adamw_update", "exp_avg", exp_avg.shape(), master.shape());
  require_shape("mpx::cpu::adamw_update", "exp_avg_sq", exp_avg_sq.shape(), master.shape());
  if (control->skip != 0) return;
  using Acc = G;
  const auto coefficients = adamw_coefficients<Acc>(s, *control);
  const auto round = rounding_at(rounding, control->optimizer_step + 1);
  const Acc clip = clip_factor<Acc>(*control);
  M* p = master.data();
  C* copy = compute != nullptr ? compute->data() : nullptr;
  const G* g = grad.data();
  G* m = exp_avg.data();
  G* v = exp_avg_sq.data();
  if constexpr (std::is_same_v<Rounding, RoundNearest> && std::is_same_v<M, Acc>) {
    // Master weights in the update's type, rounded to nearest (mixed precision): the same arithmetic
    // as adamw_step, a block at a time, so that each step vectorises (the square roots as a block).
    parallel_for_chunks(master.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      Acc root[detail::conversion_block];
      for (std::int64_t first = begin; first < end; first += detail::conversion_block) {
        const std::int64_t length = std::min(detail::conversion_block, end - first);
        M* block_p = p + first;
        const G* block_g = g + first;
        G* block_m = m + first;
        G* block_v = v + first;
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t i = 0; i < length; ++i) {
          adamw_moments(clipped_gradient(block_g[i], *control, clip), block_m[i], block_v[i], coefficients);
          root[i] = block_v[i];
        }
        detail::sqrt_in_place(root, length);
        MPX_DETAIL_OMP_SIMD
        for (std::int64_t i = 0; i < length; ++i) {
          block_p[i] = adamw_weight(block_p[i], block_m[i], root[i], coefficients);
        }
        if (copy != nullptr) detail::round_range(block_p, copy + first, 0, length);  // store_weight's
      }
    });
  } else {
    parallel_for_chunks(master.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const Acc weight = adamw_step(static_cast<Acc>(p[i]), clipped_gradient(g[i], *control, clip), m[i],
                                      v[i], coefficients);
        mpx::detail::store_weight(p, copy, i, weight, round);
      }
    });
  }
}

/// @brief One AdamW step number `step` (from 1) at `s.lr` outside a training step; the same update
/// as the `UpdateControl` overload.
template <Element M, Element C, Element G, class Rounding = RoundNearest>
void adamw_update(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
                  Tensor<G, Host>& exp_avg, Tensor<G, Host>& exp_avg_sq, std::int64_t step,
                  const AdamWSettings& s, const Rounding& rounding = {}) {
  const UpdateControl control{.lr = s.lr, .optimizer_step = step - 1};
  adamw_update(master, compute, grad, exp_avg, exp_avg_sq, s, rounding, &control);
}

/// @brief The SGD update of a whole optimizer step, parameter by parameter (`add`), under one
/// `control`: the CPU's form of `cuda::SgdUpdates`, which collects the parameters into few launches.
/// Here each `add` updates its parameter at once and `queue` has nothing left to do, so an
/// optimizer written against `Backend<Device>::sgd_updates` runs the same on both devices.
class SgdUpdates {
 public:
  /// @brief Updates under `control` (which must outlive this object) with settings `s` (copied).
  SgdUpdates(const SgdSettings& s, const UpdateControl* control) : settings_(s), control_(control) {}

  /// @brief `sgd_update(master, compute, grad, momentum_buffer, s, rounding, control)`.
  template <Element M, Element C, Element G, class Rounding>
  void add(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
           Tensor<G, Host>* momentum_buffer, const Rounding& rounding) {
    sgd_update(master, compute, grad, momentum_buffer, settings_, rounding, control_);
  }
  /// @brief Nothing left: every `add` has run.
  void queue() noexcept {}

 private:
  SgdSettings settings_;
  const UpdateControl* control_;
};

/// @brief The AdamW update of a whole optimizer step, parameter by parameter; see `SgdUpdates`.
class AdamWUpdates {
 public:
  /// @brief Updates under `control` (which must outlive this object) with settings `s` (copied).
  AdamWUpdates(const AdamWSettings& s, const UpdateControl* control) : settings_(s), control_(control) {}

  /// @brief `adamw_update(master, compute, grad, exp_avg, exp_avg_sq, s, rounding, control)`.
  template <Element M, Element C, Element G, class Rounding>
  void add(Tensor<M, Host>& master, Tensor<C, Host>* compute, const Tensor<G, Host>& grad,
           Tensor<G, Host>& exp_avg, Tensor<G, Host>& exp_avg_sq, const Rounding& rounding) {
    adamw_update(master, compute, grad, exp_avg, exp_avg_sq, settings_, rounding, control_);
  }
  /// @brief Nothing left: every `add` has run.
  void queue() noexcept {}

 private:
  AdamWSettings settings_;
  const UpdateControl* control_;
};

/// @brief The SGD updates of one optimizer step under `control`; see `SgdUpdates`.
inline SgdUpdates sgd_updates(const SgdSettings& s, const UpdateControl* control) {
  return {s, control};
}
/// @brief The AdamW updates of one optimizer step under `control`; see `AdamWUpdates`.
inline AdamWUpdates adamw_updates(const AdamWSettings& s, const UpdateControl* control) {
  return {s, control};
}

}  // namespace mpx::cpu
