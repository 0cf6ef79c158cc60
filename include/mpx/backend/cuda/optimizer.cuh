// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Optimizer updates on the GPU: one pass per parameter that reads the (unscaled) gradient,
/// updates the optimizer state and the master weights, and refreshes the compute copy. Mirrors
/// cpu/optimizer.hpp through the same per-element functions (backend/optimizer_math.hpp), so the
/// two backends give the same bits.
///
/// Two forms of each update: the training step's, which reads its learning rate, update count, skip
/// flag and clipping coefficient from the step's device scalars (no host synchronisation; capturable
/// in a CUDA graph), and the CPU's signature with host values, for `Backend<Cuda>`.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/optimizer.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/step_state.hpp"
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// The rounding of one update: fixed, or following the update number (known on the device only).
template <class Rounding>
__device__ Rounding rounding_at(const Rounding& rounding, std::int64_t) {
  return rounding;
}
__device__ inline RoundStochastic rounding_at(const RoundStochasticPerUpdate& rounding, std::int64_t update) {
  return rounding.at_update(update);
}

template <class Rounding>
inline constexpr bool is_optimizer_rounding =
    std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic> ||
    std::is_same_v<Rounding, RoundStochasticPerUpdate>;

// What a kernel reads from the step's scalars: whether to update at all, and the gradient's clipping
// factor (G(clip_coefficient), as the CPU trainer's scale_in_place multiplies by Grad(coefficient)).
template <class G>
__device__ G clip_factor(const StepScalars* scalars) {
  return scalars != nullptr && scalars->clipped != 0 ? static_cast<G>(scalars->clip_coefficient) : G(1);
}

// Every element runs exactly the CPU's sgd_step and store_weight. With `scalars`, the update is
// skipped when scalars->skip, and lr, first_step and the update number come from them; without,
// `host` holds the coefficients.
template <class M, class C, class G, class Rounding>
__global__ void sgd_update_kernel(M* master, C* compute, const G* grad, G* momentum_buffer,
                                  std::int64_t count, SgdSettings settings, SgdCoefficients<G> host,
                                  Rounding rounding, const StepScalars* scalars) {
  SgdCoefficients<G> coefficients = host;
  std::int64_t update = 0;
  if (scalars != nullptr) {
    if (scalars->skip != 0) return;
    coefficients = sgd_coefficients<G>(settings, scalars->lr, scalars->optimizer_step == 0);
    update = scalars->optimizer_step + 1;
  }
  const G clip = clip_factor<G>(scalars);
  const bool clipped = scalars != nullptr && scalars->clipped != 0;
  const auto round = rounding_at(rounding, update);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const G g = clipped ? mpx::detail::mul_rn(grad[i], clip) : grad[i];
    const G weight = sgd_step(static_cast<G>(master[i]), g,
                              momentum_buffer != nullptr ? momentum_buffer + i : nullptr, coefficients);
    mpx::detail::store_weight(master, compute, i, weight, round);
  }
}

// As sgd_update_kernel. The coefficients need two powers in double-double (tens of dependent
// operations), so with `scalars` thread 0 of each block derives them once into shared memory.
template <class M, class C, class G, class Rounding>
__global__ void adamw_update_kernel(M* master, C* compute, const G* grad, G* exp_avg, G* exp_avg_sq,
                                    std::int64_t count, AdamWSettings settings, AdamWCoefficients<G> host,
                                    Rounding rounding, const StepScalars* scalars) {
  __shared__ AdamWCoefficients<G> shared;
  std::int64_t update = 0;
  if (scalars != nullptr) {
    if (scalars->skip != 0) return;  // the same value in every thread: no thread reaches the barrier
    update = scalars->optimizer_step + 1;
    if (threadIdx.x == 0) shared = adamw_coefficients<G>(settings, scalars->lr, update);
    __syncthreads();
  }
  const AdamWCoefficients<G> coefficients = scalars != nullptr ? shared : host;
  const G clip = clip_factor<G>(scalars);
  const bool clipped = scalars != nullptr && scalars->clipped != 0;
  const auto round = rounding_at(rounding, update);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const G g = clipped ? mpx::detail::mul_rn(grad[i], clip) : grad[i];
    G m = exp_avg[i];
    G v = exp_avg_sq[i];
    const G weight = adamw_step(static_cast<G>(master[i]), g, m, v, coefficients);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    mpx::detail::store_weight(master, compute, i, weight, round);
  }
}

template <Element M, Element C, Element G>
void require_same_shapes(const char* where, const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute,
                         const Tensor<G, Cuda>& grad) {
  require_shape(where, "gradient", grad.shape(), master.shape());
  if (compute != nullptr) require_shape(where, "compute copy", compute->shape(), master.shape());
}

template <Element M, Element C, Element G>
void check_sgd(const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
               const Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s) {
  require_same_shapes("mpx::cuda::sgd_update", master, compute, grad);
  if (s.momentum != 0.0 && momentum_buffer == nullptr)
    throw invalid_argument("mpx::cuda::sgd_update: momentum is not 0 but the momentum buffer is null");
  if (momentum_buffer != nullptr)
    require_shape("mpx::cuda::sgd_update", "momentum buffer", momentum_buffer->shape(), master.shape());
}

template <Element M, Element C, Element G>
void check_adamw(const Tensor<M, Cuda>& master, const Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                 const Tensor<G, Cuda>& exp_avg, const Tensor<G, Cuda>& exp_avg_sq) {
  require_same_shapes("mpx::cuda::adamw_update", master, compute, grad);
  require_shape("mpx::cuda::adamw_update", "exp_avg", exp_avg.shape(), master.shape());
  require_shape("mpx::cuda::adamw_update", "exp_avg_sq", exp_avg_sq.shape(), master.shape());
}

template <Element M, Element C, Element G, class Rounding>
void launch_sgd(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s, const SgdCoefficients<G>& host,
                const Rounding& rounding, const StepScalars* scalars) {
  const std::int64_t count = master.numel();
  if (count == 0) return;
  sgd_update_kernel<<<elementwise_blocks(count), elementwise_threads, 0, stream()>>>(
      master.data(), compute != nullptr ? compute->data() : nullptr, grad.data(),
      momentum_buffer != nullptr && s.momentum != 0.0 ? momentum_buffer->data() : nullptr, count, s, host,
      rounding, scalars);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::sgd_update_kernel");
}

template <Element M, Element C, Element G, class Rounding>
void launch_adamw(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const AdamWSettings& s,
                  const AdamWCoefficients<G>& host, const Rounding& rounding, const StepScalars* scalars) {
  const std::int64_t count = master.numel();
  if (count == 0) return;
  adamw_update_kernel<<<elementwise_blocks(count), elementwise_threads, 0, stream()>>>(
      master.data(), compute != nullptr ? compute->data() : nullptr, grad.data(), exp_avg.data(),
      exp_avg_sq.data(), count, s, host, rounding, scalars);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::adamw_update_kernel");
}

}  // namespace detail

/// @brief One SGD step of a training step, as `cpu::sgd_update` computes it, with its scalars read on
/// the device from `scalars`: does nothing when `scalars->skip`; lr = `scalars->lr` (settings.lr is
/// not read); the momentum buffer starts on `scalars->optimizer_step == 0`; the gradient is multiplied
/// by `scalars->clip_coefficient` when `scalars->clipped` (in registers: `grad` is not written).
/// `momentum_buffer` may be null when momentum is 0; `compute` is the compute copy to refresh (null
/// when the compute weights are the master weights). `rounding` is `RoundNearest`, `RoundStochastic`
/// or `RoundStochasticPerUpdate` (update number `scalars->optimizer_step + 1`). No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void sgd_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s, const Rounding& rounding,
                const StepScalars* scalars) {
  static_assert(
      detail::is_optimizer_rounding<Rounding>,
      "mpx::cuda::sgd_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  detail::require_step_scalars("mpx::cuda::sgd_update", scalars);
  detail::check_sgd(master, compute, grad, momentum_buffer, s);
  detail::launch_sgd(master, compute, grad, momentum_buffer, s, SgdCoefficients<G>{}, rounding, scalars);
}

/// @brief The CPU signature (`cpu::sgd_update`): one SGD step at `s.lr`, the momentum buffer starting
/// when `first_step`, on the same kernel. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding = RoundNearest>
void sgd_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, bool first_step, const SgdSettings& s,
                const Rounding& rounding = {}) {
  static_assert(std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic>,
                "mpx::cuda::sgd_update: Rounding must be RoundNearest or RoundStochastic");
  detail::check_sgd(master, compute, grad, momentum_buffer, s);
  detail::launch_sgd(master, compute, grad, momentum_buffer, s, sgd_coefficients<G>(s, s.lr, first_step),
                     rounding, nullptr);
}

/// @brief One AdamW step of a training step, as `cpu::adamw_update` computes it, with its scalars
/// read on the device from `scalars`: does nothing when `scalars->skip`; lr = `scalars->lr`
/// (settings.lr is not read); t = `scalars->optimizer_step + 1`; the gradient is multiplied by
/// `scalars->clip_coefficient` when `scalars->clipped` (in registers). `rounding` as for
/// `sgd_update`. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void adamw_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const AdamWSettings& s,
                  const Rounding& rounding, const StepScalars* scalars) {
  static_assert(
      detail::is_optimizer_rounding<Rounding>,
      "mpx::cuda::adamw_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  detail::require_step_scalars("mpx::cuda::adamw_update", scalars);
  detail::check_adamw(master, compute, grad, exp_avg, exp_avg_sq);
  detail::launch_adamw(master, compute, grad, exp_avg, exp_avg_sq, s, AdamWCoefficients<G>{}, rounding,
                       scalars);
}

/// @brief The CPU signature (`cpu::adamw_update`): one AdamW step number `step` (from 1) at `s.lr`,
/// on the same kernel. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding = RoundNearest>
void adamw_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, std::int64_t step,
                  const AdamWSettings& s, const Rounding& rounding = {}) {
  static_assert(std::is_same_v<Rounding, RoundNearest> || std::is_same_v<Rounding, RoundStochastic>,
                "mpx::cuda::adamw_update: Rounding must be RoundNearest or RoundStochastic");
  detail::check_adamw(master, compute, grad, exp_avg, exp_avg_sq);
  detail::launch_adamw(master, compute, grad, exp_avg, exp_avg_sq, s, adamw_coefficients<G>(s, s.lr, step),
                       rounding, nullptr);
}

}  // namespace mpx::cuda
