// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Mean squared error on the GPU, in fp32 (fp64 for double) whatever the prediction's type:
/// mpx::cpu::mse_loss's formulas, as a device path for the training step (seed read on the device,
/// loss added to a device sum, no synchronisation) and a synchronous form with the CPU signature.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/mse_loss.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/memory.hpp"
#include "mpx/backend/cuda/reduce.cuh"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

/// @brief Length of the partial-sum scratch tensor the device path of mse_loss takes: it uses at
/// most this many blocks, each writing one partial.
inline constexpr std::int64_t mse_loss_partials = 256;

namespace detail {

// Each block sums (prediction - target)^2 over a grid-stride range into partials[blockIdx.x] and,
// when dprediction is set, writes seed * 2 (prediction - target) / count rounded into T.
template <class T, class U, class Seed>
__global__ void mse_loss_kernel(const T* prediction, const U* target, std::int64_t count, Seed seed,
                                T* dprediction, accumulate_t<T>* partials) {
  using Acc = accumulate_t<T>;
  const Acc grad_scale = dprediction != nullptr
                             ? static_cast<Acc>(2) * static_cast<Acc>(seed.value()) / static_cast<Acc>(count)
                             : Acc(0);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  Acc local = 0;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    const Acc diff = static_cast<Acc>(prediction[i]) - static_cast<Acc>(target[i]);
    local += diff * diff;
    if (dprediction != nullptr) dprediction[i] = round_to<tag_of_t<T>>(diff * grad_scale);
  }
  const Acc total = block_reduce(local, Plus{});
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

}  // namespace detail

/// @brief The training step's MSE: mean((prediction - target)^2) over all elements (PyTorch's
/// default reduction) *added* to `*loss_sum` (device memory), and optionally dprediction =
/// seed * 2 (prediction - target) / count, with `seed.value()` read on the device (a `LossSeed` in the
/// training step). No synchronisation.
///
/// @param prediction  the model's output in the compute type.
/// @param target      one value per prediction.
/// @param seed        the gradient's seed (the loss scale over the micro-batches), read on the device.
/// @param dprediction if not null, receives the gradient (same shape and type as prediction).
/// @param partials scratch in the accumulate type, given the shape [mse_loss_partials] here if it has
///                 another (so a loss can keep an empty tensor for it). The mean is reduced in a fixed order
///                 (per-block sums, then one block over them) in the accumulate type, then converted to
///                 double; an empty prediction adds 0, as the CPU version returns.
/// @param loss_sum device memory, or null to compute only the gradient.
template <Element T, Element U, class Seed>
void mse_loss(const Tensor<T, Cuda>& prediction, const Tensor<U, Cuda>& target, Seed seed,
              std::type_identity_t<Tensor<T, Cuda>>* dprediction, Tensor<accumulate_t<T>, Cuda>& partials,
              double* loss_sum) {
  constexpr const char* where = "mpx::cuda::mse_loss";
  require_shape(where, "target", target.shape(), prediction.shape());
  if (dprediction != nullptr) require_shape(where, "dprediction", dprediction->shape(), prediction.shape());
  if (!(partials.shape() == Shape{mse_loss_partials})) {
    partials = Tensor<accumulate_t<T>, Cuda>::uninitialized(Shape{mse_loss_partials});
  }
  const std::int64_t count = prediction.numel();
  const std::int64_t blocks = std::clamp<std::int64_t>(
      (count + detail::elementwise_threads - 1) / detail::elementwise_threads, 1, mse_loss_partials);
  const auto grid = static_cast<unsigned>(blocks);
  detail::mse_loss_kernel<<<grid, detail::elementwise_threads, 0, detail::stream()>>>(
      prediction.data(), target.data(), count, seed, dprediction != nullptr ? dprediction->data() : nullptr,
      partials.data());
  MPX_CUDA_CHECK_LAUNCH("mse_loss_kernel");
  if (loss_sum != nullptr) {
    detail::add_mean_kernel<<<1, detail::final_reduce_threads, 0, detail::stream()>>>(partials.data(), blocks,
                                                                                      count, true, loss_sum);
    MPX_CUDA_CHECK_LAUNCH("add_mean_kernel");
  }
}

/// @brief mpx::cpu::mse_loss's signature on the GPU: returns the mean loss (one synchronisation) and
/// writes dprediction = grad_seed * 2 (prediction - target) / count when it is not null.
template <Element T, Element U>
accumulate_t<T> mse_loss(const Tensor<T, Cuda>& prediction, const Tensor<U, Cuda>& target, float grad_seed,
                         std::type_identity_t<Tensor<T, Cuda>>* dprediction) {
  using Acc = accumulate_t<T>;
  auto partials = Tensor<Acc, Cuda>::uninitialized(Shape{mse_loss_partials});
  DeviceArray<double> loss_sum(1);
  MPX_CUDA_CHECK(cudaMemsetAsync(loss_sum.data(), 0, sizeof(double), detail::stream()));
  mse_loss(prediction, target, detail::ConstantSeed{grad_seed}, dprediction, partials, loss_sum.data());
  return static_cast<Acc>(loss_sum.download()[0]);
}

}  // namespace mpx::cuda
