// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TrainingState<Cuda, Grad>`: the device side of `mpx::Trainer` on CUDA. It owns the step's
/// scalars in device memory (`cuda::StepScalars`), the gradient reduction's workspace and the
/// captured step graph, and queues the step's control kernels, so a whole training step is queued
/// without the host ever waiting for the device.
///
/// The host keeps copies of what it may change between steps (`HostCopies`: the scaler state and
/// update count a checkpoint loads, the learning rate a schedule sets, the step count). The device
/// changes the first two itself at every step, so a host copy is not compared with the device: it
/// is compared with its own value at the last exchange. `push_if_changed` sends, with one
/// one-thread kernel, the fields the host changed since; `pull` reads the device's scalars back (the
/// one synchronising call) and refreshes the host copies the host did not change meanwhile.

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
// Which host-owned fields `store_host_state` overwrites.
enum HostField : unsigned { scaler_field = 1, optimizer_step_field = 2, lr_field = 4, step_field = 8 };

// Overwrites the host-owned fields of the step's scalars that `fields` names (see
// TrainingState::push_if_changed). A template, as every kernel in a header: a non-template __global__
// would be defined in each translation unit that includes it.
template <class Scalars>
__global__ void store_host_state(Scalars* scalars, unsigned fields, LossScalerState scaler,
                                 std::int64_t optimizer_step, double lr, std::int64_t step) {
  if (fields & scaler_field) scalars->scaler = scaler;
  if (fields & optimizer_step_field) scalars->optimizer_step = optimizer_step;
  if (fields & lr_field) scalars->lr = lr;
  if (fields & step_field) scalars->step = step;
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

  /// @brief The host's copies of the fields it owns.
  struct HostCopies {
    LossScalerState scaler;            ///< the trainer's `LossScaler` state
    std::int64_t optimizer_steps = 0;  ///< the optimizer's update count
    double lr = 0.0;                   ///< the optimizer's learning rate
    std::int64_t steps = 0;            ///< the trainer's step count (steps queued)
  };

  /// @brief Sends the fields the host changed since the last exchange (all of them the first time),
  /// with one kernel queued on the stream, so they take effect before the next step. Never captured
  /// into a graph.
  void push_if_changed(const HostCopies& host) {
    unsigned fields = cuda::detail::scaler_field | cuda::detail::optimizer_step_field |
                      cuda::detail::lr_field | cuda::detail::step_field;
    if (synced_) {
      fields = 0;
      if (!(host.scaler == synced_->scaler)) fields |= cuda::detail::scaler_field;
      if (host.optimizer_steps != synced_->optimizer_steps) fields |= cuda::detail::optimizer_step_field;
      if (host.lr != synced_->lr) fields |= cuda::detail::lr_field;
      if (host.steps != synced_->steps) fields |= cuda::detail::step_field;
    }
    if (fields == 0) return;
    cuda::detail::store_host_state<<<1, 1, 0, cuda::detail::stream()>>>(
        scalars(), fields, host.scaler, host.optimizer_steps, host.lr, host.steps);
    MPX_CUDA_CHECK_LAUNCH("mpx::cuda::detail::store_host_state");
    synced_ = host;
  }

  /// @brief Records that one more step was queued: the device counts it in `begin_step`, the host in
  /// its step count, so the two stay equal without a push.
  void step_queued() noexcept {
    if (synced_) ++synced_->steps;
  }

  /// @brief Forgets what the device holds, so that the next push sends every field (after a step
  /// that threw half-way through being queued).
  void forget() noexcept { synced_.reset(); }

  /// @brief Whether a step has run on the device (there are scalars to read).
  [[nodiscard]] bool has_scalars() const noexcept { return !scalars_.empty(); }

  /// @brief The scalars after all queued work (waits for the stream). The scaler state and update
  /// count in `host` take the device's values unless the host changed them since the last exchange
  /// (those stay, to be pushed before the next step).
  [[nodiscard]] cuda::StepScalars pull(HostCopies& host) {
    const cuda::StepScalars scalars = scalars_.download().at(0);
    if (synced_) {
      if (host.scaler == synced_->scaler) host.scaler = synced_->scaler = scalars.scaler;
      if (host.optimizer_steps == synced_->optimizer_steps) {
        host.optimizer_steps = synced_->optimizer_steps = scalars.optimizer_step;
      }
    }
    return scalars;
  }

  /// @brief Captures the work `queue()` puts on the context's stream into the step graph.
  template <class Queue>
  void capture(Queue&& queue) {
    (void)scalars();  // allocate before capture: allocations are not part of the step
    graph_.capture(cuda::detail::stream(), std::forward<Queue>(queue));
  }
  /// @brief Queues one replay of the captured step.
  void replay() { graph_.launch(cuda::detail::stream()); }

 private:
  cuda::DeviceArray<cuda::StepScalars> scalars_;
  cuda::GradientWorkspace workspace_;
  cuda::Graph graph_;
  std::optional<HostCopies> synced_;  // the host copies at the last exchange with the device
};

}  // namespace mpx
