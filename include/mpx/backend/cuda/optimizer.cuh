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
/// flag and clipping coefficient from an `UpdateControl` in device memory (no host synchronisation;
/// capturable in a CUDA graph), and the CPU's signature with host values, for `Backend<Cuda>`.

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
#include "mpx/backend/optimizer_math.hpp"
#include "mpx/backend/optimizer_settings.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// Every element runs exactly the CPU's sgd_step and store_weight. The update is skipped when
// control.skip, and lr, first_step, the update number and the clipping come from the control: the
// one in device memory (a training step's), or `host` when that is null.
template <class M, class C, class G, class Rounding>
__global__ void sgd_update_kernel(M* __restrict__ master, C* __restrict__ compute, const G* __restrict__ grad,
                                  G* __restrict__ momentum_buffer, std::int64_t count, SgdSettings settings,
                                  Rounding rounding, UpdateControl host, const UpdateControl* device) {
  const UpdateControl control = device != nullptr ? *device : host;
  if (control.skip != 0) return;
  const SgdCoefficients<G> coefficients =
      sgd_coefficients<G>(settings, control.lr, control.optimizer_step == 0);
  const G clip = clip_factor<G>(control);
  const auto round = rounding_at(rounding, control.optimizer_step + 1);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const G g = clipped_gradient(grad[i], control, clip);
    const G weight = sgd_step(static_cast<G>(master[i]), g,
                              momentum_buffer != nullptr ? momentum_buffer + i : nullptr, coefficients);
    mpx::detail::store_weight(master, compute, i, weight, round);
  }
}

// As sgd_update_kernel. The coefficients need two powers in double-double (tens of dependent
// operations), so thread 0 of each block derives them once into shared memory.
template <class M, class C, class G, class Rounding>
__global__ void adamw_update_kernel(M* __restrict__ master, C* __restrict__ compute,
                                    const G* __restrict__ grad, G* __restrict__ exp_avg,
                                    G* __restrict__ exp_avg_sq, std::int64_t count, AdamWSettings settings,
                                    Rounding rounding, UpdateControl host, const UpdateControl* device) {
  __shared__ AdamWCoefficients<G> shared;
  const UpdateControl control = device != nullptr ? *device : host;
  if (control.skip != 0) return;  // the same value in every thread: no thread reaches the barrier
  const std::int64_t update = control.optimizer_step + 1;
  if (threadIdx.x == 0) shared = adamw_coefficients<G>(settings, control.lr, update);
  __syncthreads();
  const AdamWCoefficients<G> coefficients = shared;
  const G clip = clip_factor<G>(control);
  const auto round = rounding_at(rounding, update);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const G g = clipped_gradient(grad[i], control, clip);
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
                Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s, const Rounding& rounding,
                const UpdateControl& host, const UpdateControl* device) {
  const std::int64_t count = master.numel();
  if (count == 0) return;
  constexpr auto kernel = &sgd_update_kernel<M, C, G, Rounding>;
  kernel<<<occupancy_blocks<kernel>(count), elementwise_threads, 0, stream()>>>(
      master.data(), compute != nullptr ? compute->data() : nullptr, grad.data(),
      momentum_buffer != nullptr && s.momentum != 0.0 ? momentum_buffer->data() : nullptr, count, s, rounding,
      host, device);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::sgd_update_kernel");
}

template <Element M, Element C, Element G, class Rounding>
void launch_adamw(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const AdamWSettings& s,
                  const Rounding& rounding, const UpdateControl& host, const UpdateControl* device) {
  const std::int64_t count = master.numel();
  if (count == 0) return;
  constexpr auto kernel = &adamw_update_kernel<M, C, G, Rounding>;
  kernel<<<occupancy_blocks<kernel>(count), elementwise_threads, 0, stream()>>>(
      master.data(), compute != nullptr ? compute->data() : nullptr, grad.data(), exp_avg.data(),
      exp_avg_sq.data(), count, s, rounding, host, device);
  MPX_CUDA_CHECK_LAUNCH("mpx::cuda::adamw_update_kernel");
}

}  // namespace detail

/// @brief One SGD update of a training step, as `cpu::sgd_update` computes it, with `control` (an
/// `UpdateControl` in device memory) read on the device: nothing happens when `skip`; lr =
/// `control->lr` (settings.lr is not read); the momentum buffer starts when `optimizer_step == 0`;
/// the gradient is multiplied by the clipping factor when `clipped` (in registers: `grad` is not
/// written). `momentum_buffer` may be null when momentum is 0; `compute` is the compute copy to
/// refresh (null when the compute weights are the master weights). `rounding` is `RoundNearest`,
/// `RoundStochastic` or `RoundStochasticPerUpdate` (update number `optimizer_step + 1`). No
/// synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void sgd_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                Tensor<G, Cuda>* momentum_buffer, const SgdSettings& s, const Rounding& rounding,
                const UpdateControl* control) {
  static_assert(
      is_optimizer_rounding<Rounding>,
      "mpx::cuda::sgd_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  if (control == nullptr) throw invalid_argument("mpx::cuda::sgd_update: the update control is null");
  detail::check_sgd(master, compute, grad, momentum_buffer, s);
  detail::launch_sgd(master, compute, grad, momentum_buffer, s, rounding, UpdateControl{}, control);
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
  detail::launch_sgd(master, compute, grad, momentum_buffer, s, rounding,
                     UpdateControl{.lr = s.lr, .optimizer_step = first_step ? 0 : 1}, nullptr);
}

/// @brief One AdamW update of a training step, as `cpu::adamw_update` computes it, with `control`
/// (device memory) read on the device: nothing happens when `skip`; lr = `control->lr` (settings.lr
/// is not read); t = `optimizer_step + 1`; the gradient is multiplied by the clipping factor when
/// `clipped` (in registers). `rounding` as for `sgd_update`. No synchronisation.
template <Element M, Element C, std::floating_point G, class Rounding>
void adamw_update(Tensor<M, Cuda>& master, Tensor<C, Cuda>* compute, const Tensor<G, Cuda>& grad,
                  Tensor<G, Cuda>& exp_avg, Tensor<G, Cuda>& exp_avg_sq, const AdamWSettings& s,
                  const Rounding& rounding, const UpdateControl* control) {
  static_assert(
      is_optimizer_rounding<Rounding>,
      "mpx::cuda::adamw_update: Rounding must be RoundNearest, RoundStochastic or RoundStochasticPerUpdate");
  if (control == nullptr) throw invalid_argument("mpx::cuda::adamw_update: the update control is null");
  detail::check_adamw(master, compute, grad, exp_avg, exp_avg_sq);
  detail::launch_adamw(master, compute, grad, exp_avg, exp_avg_sq, s, rounding, UpdateControl{}, control);
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
  detail::launch_adamw(master, compute, grad, exp_avg, exp_avg_sq, s, rounding,
                       UpdateControl{.lr = s.lr, .optimizer_step = step - 1}, nullptr);
}

}  // namespace mpx::cuda
