// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The weight average's update on the CPU (backend/weight_average_spec.hpp): one pass per
/// parameter over its average and its master weights, under the training step's `UpdateControl`.

#include <concepts>
#include <cstdint>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/update_control.hpp"
#include "mpx/backend/weight_average_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief One update of the average of one parameter: `average[i] = weight_average_step(average[i],
/// Acc(master[i]), 1 - decay)` with the decay in `*state`, unless `control->skip` (then nothing
/// changes). Throws `mpx::shape_error` when the shapes differ.
/// @tparam Acc the average's element type (the gradients' type)
/// @tparam M the master weights' element type
/// @param average the parameter's average, updated in place
/// @param master the parameter's master weights after the optimizer's update
/// @param control the training step's decision (its `skip` is read)
/// @param state the average's scalars, the step's decay already written (`PrepareWeightAverage`)
template <std::floating_point Acc, Element M>
void weight_average_update(Tensor<Acc, Host>& average, const Tensor<M, Host>& master,
                           const UpdateControl* control, const WeightAverageControl* state) {
  require_shape("mpx::cpu::weight_average_update", "master weights", master.shape(), average.shape());
  if (control == nullptr || state == nullptr) {
    throw invalid_argument(
        "mpx::cpu::weight_average_update: the step's control and the average's state are required");
  }
  if (control->skip != 0) return;
  const Acc factor = weight_average_factor<Acc>(*state);
  Acc* a = average.data();
  const M* w = master.data();
  parallel_for_chunks(average.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t i = begin; i < end; ++i)
      a[i] = weight_average_step(a[i], static_cast<Acc>(w[i]), factor);
  });
}

/// @brief The average's update of a whole training step, parameter by parameter (`add`): the CPU's
/// form of `cuda::WeightAverageUpdates`, which collects the parameters into few launches. Here each
/// `add` updates its parameter at once and `queue` has nothing left to do.
class WeightAverageUpdates {
 public:
  /// @brief Updates under `control` and `state` (both must outlive this object).
  /// @param control the training step's decision
  /// @param state the average's scalars
  WeightAverageUpdates(const UpdateControl* control, const WeightAverageControl* state)
      : control_(control), state_(state) {}

  /// @brief `weight_average_update(average, master, control, state)`.
  /// @tparam Acc the average's element type
  /// @tparam M the master weights' element type
  /// @param average the parameter's average
  /// @param master the parameter's master weights
  template <std::floating_point Acc, Element M>
  void add(Tensor<Acc, Host>& average, const Tensor<M, Host>& master) {
    weight_average_update(average, master, control_, state_);
  }
  /// @brief Nothing left: every `add` has run.
  void queue() noexcept {}

 private:
  const UpdateControl* control_;
  const WeightAverageControl* state_;
};

/// @brief The average's updates of one training step; see `WeightAverageUpdates`.
/// @param control the training step's decision
/// @param state the average's scalars
inline WeightAverageUpdates weight_average_updates(const UpdateControl* control,
                                                   const WeightAverageControl* state) {
  return {control, state};
}

}  // namespace mpx::cpu
