// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The weight average's update on the GPU (backend/weight_average_spec.hpp): all the
/// parameters of a step in one launch per type combination (multi_tensor.cuh, grouped as the
/// optimizers' updates are), reading the step's `UpdateControl` and the average's scalars in device
/// memory, so it is queued without a host wait and a CUDA graph records it. Every element runs
/// `weight_average_step`, as `cpu::weight_average_update` does: the same bits.

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/weight_average.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <concepts>
#include <cstdint>

#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/multi_tensor.cuh"
#include "mpx/backend/cuda/optimizer.cuh"
#include "mpx/backend/update_control.hpp"
#include "mpx/backend/weight_average_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cuda {

namespace detail {

// One parameter of the update: its average and its master weights.
template <class Acc, class M>
struct WeightAverageTensors {
  using average_type = Acc;
  Acc* average;
  const M* master;
};

// One block per chunk of one parameter. Nothing happens when the step is skipped (the same in every
// block); the factor is read from the average's scalars, written by PrepareWeightAverage before.
template <class Entry>
__global__ void __launch_bounds__(elementwise_threads)
    weight_average_kernel(__grid_constant__ const UpdateList<Entry> list, const UpdateControl* control,
                          const WeightAverageControl* state) {
  using Acc = typename Entry::average_type;
  if (control->skip != 0) return;
  const Acc factor = weight_average_factor<Acc>(*state);
  const auto range = list.range(blockIdx.x);
  const Entry t = list.entries[range.tensor];
  for (std::int64_t i = range.begin + threadIdx.x; i < range.end; i += elementwise_threads) {
    t.average[i] = weight_average_step(t.average[i], static_cast<Acc>(t.master[i]), factor);
  }
}

// Launches the kernel over one list of tensors.
struct WeightAverageLaunch {
  const UpdateControl* control;
  const WeightAverageControl* state;

  template <class Entry>
  void operator()(const UpdateList<Entry>& list) const {
    static_assert(sizeof(UpdateList<Entry>) + 2 * sizeof(const void*) <= portable_kernel_parameter_bytes,
                  "mpx::cuda: the weight average kernel's parameters exceed 4 KB");
    const auto blocks = static_cast<unsigned int>(list.first_chunk[list.count]);
    weight_average_kernel<Entry><<<blocks, elementwise_threads, 0, stream()>>>(list, control, state);
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::weight_average_kernel");
  }
};

}  // namespace detail

/// @brief The average's update of a whole training step as few launches: `add` each parameter
/// (its shapes checked at once), then `queue()` launches one kernel per combination of average and
/// master types. Nothing is queued before `queue()`; no synchronisation.
class WeightAverageUpdates {
 public:
  /// @brief Updates under `control` and `state` (device memory, read on the device).
  /// @param control the training step's decision (its `skip`)
  /// @param state the average's scalars (its decay)
  WeightAverageUpdates(const UpdateControl* control, const WeightAverageControl* state)
      : updates_(detail::WeightAverageLaunch{control, state}) {
    if (control == nullptr || state == nullptr)
      throw invalid_argument(
          "mpx::cuda::weight_average_updates: the update control or the average's state is null");
  }

  /// @brief Adds one parameter.
  /// @tparam Acc the average's element type
  /// @tparam M the master weights' element type
  /// @param average the parameter's average
  /// @param master the parameter's master weights
  template <std::floating_point Acc, Element M>
  void add(Tensor<Acc, Cuda>& average, const Tensor<M, Cuda>& master) {
    require_shape("mpx::cuda::weight_average_update", "master weights", master.shape(), average.shape());
    updates_.add(detail::WeightAverageTensors<Acc, M>{average.data(), master.data()}, average.numel());
  }

  /// @brief Queues the launches (the object is empty afterwards).
  void queue() { updates_.queue(); }

 private:
  detail::GroupedUpdates<detail::WeightAverageLaunch> updates_;
};

/// @brief The average's updates of one training step (device memory); see `WeightAverageUpdates`.
/// @param control the training step's decision
/// @param state the average's scalars
inline WeightAverageUpdates weight_average_updates(const UpdateControl* control,
                                                   const WeightAverageControl* state) {
  return {control, state};
}

/// @brief One update of the average of one parameter, as `cpu::weight_average_update` computes it
/// (one launch; no synchronisation).
/// @tparam Acc the average's element type
/// @tparam M the master weights' element type
/// @param average the parameter's average
/// @param master the parameter's master weights
/// @param control the training step's decision (device memory)
/// @param state the average's scalars (device memory)
template <std::floating_point Acc, Element M>
void weight_average_update(Tensor<Acc, Cuda>& average, const Tensor<M, Cuda>& master,
                           const UpdateControl* control, const WeightAverageControl* state) {
  WeightAverageUpdates updates(control, state);
  updates.add(average, master);
  updates.queue();
}

}  // namespace mpx::cuda
