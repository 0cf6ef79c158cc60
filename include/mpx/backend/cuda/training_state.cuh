// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TrainingState<Cuda, Grad>`: the device side of `mpx::Trainer` on CUDA. It owns the step's
/// scalars in device memory (`cuda::StepScalars`), the gradient reduction's workspace and the
/// captured step graph, and queues the step's control kernels, so a whole training step is queued
/// without the host ever waiting for the device.
///
/// The host keeps copies of what it may change between steps (the scaler state and update count a
/// checkpoint loads, the learning rate a schedule sets, the step count). `push_if_changed` sends them
/// with one one-thread kernel when they differ from what the device was last known to hold, and
/// `pull` reads the device's scalars back (the one synchronising call).

#include "mpx/config.hpp"
#if !MPX_HAS_CUDA || !MPX_CUDA_COMPILER
#error \
    "mpx/backend/cuda/training_state.cuh holds CUDA kernels: compile this translation unit with nvcc (a .cu file) and link mpx::cuda"
#endif  // !MPX_HAS_CUDA || !MPX_CUDA_COMPILER

#include <cstdint>
#include <optional>
#include <span>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/cuda/device_array.hpp"
#include "mpx/backend/cuda/gradient.cuh"
#include "mpx/backend/cuda/graph.hpp"
#include "mpx/backend/cuda/launch.cuh"
#include "mpx/backend/cuda/loss_seed.hpp"
#include "mpx/backend/cuda/step_state.hpp"
#include "mpx/backend/cuda/tensor_ops.cuh"
#include "mpx/backend/cuda/training_step.cuh"
#include "mpx/policy/loss_scale_update.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

namespace cuda::detail {
// Overwrites the host-owned fields of the step's scalars (see TrainingState::push_if_changed). A
// template, as every kernel in a header: a non-template __global__ would be defined in each
// translation unit that includes it.
template <class Scalars>
__global__ void store_host_state(Scalars* scalars, LossScalerState scaler, std::int64_t optimizer_step,
                                 double lr, std::int64_t step) {
  scalars->scaler = scaler;
  scalars->optimizer_step = optimizer_step;
  scalars->lr = lr;
  scalars->step = step;
}
}  // namespace cuda::detail

/// @brief The CUDA training step's device state; see the file comment.
/// @tparam Grad the gradients' element type (fp32; fp64 under fp64).
template <class Grad>
class TrainingState<Cuda, Grad> {
 public:
  /// @brief The step's scalars in device memory (allocated on first use).
  [[nodiscard]] cuda::StepScalars* scalars() {
    if (scalars_.empty()) scalars_ = cuda::DeviceArray<cuda::StepScalars>(1);
    return scalars_.data();
  }
  /// @brief Where the loss kernels add each micro-batch's mean loss.
  [[nodiscard]] double* loss_sum() { return &scalars()->loss_sum; }
  /// @brief The backward's seed: this step's loss scale (device memory) over `micro_batches`.
  [[nodiscard]] cuda::LossSeed loss_seed(float micro_batches) {
    return cuda::LossSeed{&scalars()->loss_scale, micro_batches};
  }

  /// @brief Starts a step: records the scale it uses, clears the loss, norm and flags.
  void begin_step() { cuda::begin_step(scalars()); }
  /// @brief Flags the step as having non-finite inputs if `inputs` holds inf or NaN.
  template <Element T>
  void flag_nonfinite_inputs(const Tensor<T, Cuda>& inputs) {
    cuda::flag_nonfinite(inputs, &scalars()->inputs_nonfinite);
  }
  /// @brief Unscales every gradient (when `Scale`), flags inf/NaN and sums the squares, in one pass.
  template <bool Scale>
  void unscale_and_inspect(std::span<Tensor<Grad, Cuda>* const> gradients) {
    cuda::unscale_and_inspect<Scale>(gradients, scalars(), workspace_);
  }
  /// @brief Decides the skip and the clipping coefficient (`max_grad_norm` <= 0: no clipping).
  void finish_gradients(double max_grad_norm) { cuda::finish_gradients(scalars(), max_grad_norm); }
  /// @brief Updates the scaler and the update count from the step's outcome.
  template <LossScalingPolicy Scaling>
  void end_step(const typename Scaling::Options& options) {
    cuda::end_step<Scaling>(scalars(), options);
  }

  /// @brief Sends the host's scaler state, update count, learning rate and step count to the device
  /// when any differs from what the device was last known to hold (always, the first time). Queued
  /// on the stream, so it takes effect before the next step; never captured into a graph.
  void push_if_changed(const LossScalerState& scaler, std::int64_t optimizer_steps, double lr,
                       std::int64_t steps) {
    const HostView view{scaler, optimizer_steps, lr, steps};
    if (device_view_ && *device_view_ == view) return;
    cuda::detail::store_host_state<<<1, 1, 0, cuda::detail::stream()>>>(scalars(), scaler, optimizer_steps,
                                                                        lr, steps);
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::store_host_state");
    device_view_ = view;
  }
  /// @brief Records that the device holds these values (after `pull` refreshed the host's copies).
  void record_host_view(const LossScalerState& scaler, std::int64_t optimizer_steps, double lr,
                        std::int64_t steps) {
    device_view_ = HostView{scaler, optimizer_steps, lr, steps};
  }
  /// @brief The scalars after all queued work; waits for the stream.
  [[nodiscard]] cuda::StepScalars pull() { return scalars_.download().at(0); }

  /// @brief Captures the work `queue()` puts on the context's stream into the step graph.
  template <class Queue>
  void capture(Queue&& queue) {
    (void)scalars();  // allocate before capture: allocations are not part of the step
    graph_.capture(cuda::detail::stream(), std::forward<Queue>(queue));
  }
  /// @brief Queues one replay of the captured step.
  void replay() { graph_.launch(cuda::detail::stream()); }

 private:
  struct HostView {
    LossScalerState scaler;
    std::int64_t optimizer_steps = 0;
    double lr = 0.0;
    std::int64_t steps = 0;
    bool operator==(const HostView&) const = default;
  };

  cuda::DeviceArray<cuda::StepScalars> scalars_;
  cuda::GradientWorkspace workspace_;
  cuda::Graph graph_;
  std::optional<HostView> device_view_;
};

}  // namespace mpx
