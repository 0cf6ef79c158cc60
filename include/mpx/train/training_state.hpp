// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `TrainingState<Device, Grad>`: the side of `mpx::Trainer` that lives where the step runs.
/// It owns the step's scalars (`StepScalars`) in the device's memory, the gradient pass's
/// workspace, and queues the step's bookkeeping (train/step_scalars.hpp) with the passes beside it
/// (`flag_nonfinite` before which the step begins, `unscale_and_inspect` after which it is decided):
/// on the CPU those are calls in order, on a GPU the bookkeeping runs in the last block of the pass's
/// own kernel, so one body serves both, a GPU step is queued without the host ever waiting, and the
/// bookkeeping costs no launch (`single_thread`, a one-thread kernel, only for pushes of host
/// changes and for steps on integer inputs).
///
/// The host keeps copies of what it may change between steps (`HostOwnedScalars`: the scaler state
/// and update count a checkpoint loads, the learning rate a schedule sets, the step count). The step
/// changes the first two itself, so a host copy is compared not with the device but with its own
/// value at the last exchange: `push_if_changed` sends the fields the host changed since, and `pull`
/// reads the scalars back (a synchronisation on a GPU) and refreshes the host copies the host did not
/// change meanwhile.

#include <cstdint>
#include <optional>
#include <span>

#include "mpx/backend/backend.hpp"
#include "mpx/policy/loss_scaling.hpp"
#include "mpx/tensor/device_value.hpp"
#include "mpx/tensor/tensor.hpp"
#include "mpx/train/loss_seed.hpp"
#include "mpx/train/step_scalars.hpp"

namespace mpx {

/// @brief The training step's state on `Device`; see the file comment. `Backend<Device>` must be
/// complete where it is used (<mpx/cuda.hpp> for `Cuda`).
/// @tparam Grad the gradients' element type (fp32; fp64 under fp64).
template <class Device, class Grad>
class TrainingState {
  using Ops = Backend<Device>;

 public:
  /// @brief The step's scalars in the device's memory (allocated on first use).
  [[nodiscard]] StepScalars* scalars() { return scalars_.get(); }
  /// @brief What the optimizer reads (lr, update count, clipping, skip), in the device's memory.
  [[nodiscard]] const UpdateControl* update_control() { return &scalars()->update; }
  /// @brief Where the losses add each micro-batch's mean loss.
  [[nodiscard]] double* loss_sum() { return &scalars()->loss_sum; }
  /// @brief The backward's seed of every micro-batch: this step's whole loss scale (device memory).
  /// The mean over micro-batches is taken once, on the fp32 sum of their gradients (`finish_step`).
  [[nodiscard]] LossSeed loss_seed() { return LossSeed{&scalars()->loss_scale}; }

  /// @brief Starts a step (`BeginStep`) and checks its first input batch for inf and NaN, in one
  /// kernel on a GPU (the check's last block begins the step before it publishes the flag); inputs
  /// that cannot hold inf or NaN (integer token ids) are not checked, and the step begins in a
  /// one-thread kernel.
  template <Element T>
  void begin_step(const Tensor<T, Device>& first_inputs) {
    if constexpr (FloatingElement<T>) {
      Ops::flag_nonfinite(first_inputs, &scalars()->inputs_nonfinite, workspace_, BeginStep{}, scalars());
    } else {
      Ops::single_thread(BeginStep{}, scalars());
    }
  }
  /// @brief Flags the step as having non-finite inputs if `inputs` (a later micro-batch) holds inf or
  /// NaN (integer inputs, such as token ids, are always finite).
  template <Element T>
  void flag_nonfinite_inputs(const Tensor<T, Device>& inputs) {
    if constexpr (FloatingElement<T>) Ops::flag_nonfinite(inputs, &scalars()->inputs_nonfinite);
  }
  /// @brief The step count in the device's memory (`StepScalars::step`, counted by `begin_step`),
  /// which layers that draw random numbers key their draws by (nn/step_key.hpp).
  [[nodiscard]] const std::int64_t* step_count() { return &scalars()->step; }
  /// @brief Divides every gradient (the sum over the step's `micro_batches`) by their count and
  /// unscales it by this step's loss scale (when `Scale`), flags inf/NaN and sums the squares, in one
  /// pass, and then decides the step (`FinishStep`: skip, clipping with
  /// `max_grad_norm` (<= 0: none), the optimizer's per-update scalars `prepare`, the scaler update
  /// and the update count): on a GPU all in the pass's kernel, before the optimizer's update reads
  /// the decision.
  template <bool Scale, LossScalingPolicy Scaling, class Prepare>
  void finish_step(std::span<Tensor<Grad, Device>* const> gradients, std::int64_t micro_batches,
                   double max_grad_norm, const typename Scaling::Options& scaler_options,
                   const Prepare& prepare) {
    StepScalars* s = scalars();
    const FinishStep<Scaling, Prepare> finish{FinishGradients{max_grad_norm}, prepare,
                                              EndStep<Scaling>{scaler_options}};
    Ops::template unscale_and_inspect<Scale>(gradients, &s->loss_scale, micro_batches, &s->sum_of_squares,
                                             &s->gradients_nonfinite, workspace_, finish, s);
  }

  /// @brief Sends the fields the host changed since the last exchange (all of them the first time),
  /// ordered before the next step. Never part of a captured graph.
  void push_if_changed(const HostOwnedScalars& host) {
    unsigned fields = HostOwnedScalars::scaler_field | HostOwnedScalars::optimizer_steps_field |
                      HostOwnedScalars::lr_field | HostOwnedScalars::steps_field;
    if (synced_) {
      fields = 0;
      if (!(host.scaler == synced_->scaler)) fields |= HostOwnedScalars::scaler_field;
      if (host.optimizer_steps != synced_->optimizer_steps) fields |= HostOwnedScalars::optimizer_steps_field;
      if (host.lr != synced_->lr) fields |= HostOwnedScalars::lr_field;
      if (host.steps != synced_->steps) fields |= HostOwnedScalars::steps_field;
    }
    if (fields == 0) return;
    Ops::single_thread(StoreHostOwned{host, fields}, scalars());
    synced_ = host;
  }

  /// @brief Records that one more step was queued: the step counts it in `BeginStep`, the host in
  /// its step count, so the two stay equal without a push.
  void step_queued() noexcept {
    if (synced_) ++synced_->steps;
  }

  /// @brief Forgets what the device holds, so that the next push sends every field (after a step
  /// that threw half-way through being queued).
  void forget() noexcept { synced_.reset(); }

  /// @brief Whether a step has been queued (there are scalars to read).
  [[nodiscard]] bool has_scalars() const noexcept { return !scalars_.empty(); }

  /// @brief The scalars after all queued work (waits for a GPU). The scaler state and update count
  /// in `host` take the step's values unless the host changed them since the last exchange (those
  /// stay, to be pushed before the next step).
  [[nodiscard]] StepScalars pull(HostOwnedScalars& host) {
    const StepScalars scalars = scalars_.read();
    if (synced_) {
      if (host.scaler == synced_->scaler) host.scaler = synced_->scaler = scalars.scaler;
      if (host.optimizer_steps == synced_->optimizer_steps) {
        host.optimizer_steps = synced_->optimizer_steps = scalars.updates;
      }
    }
    return scalars;
  }

 private:
  DeviceValue<StepScalars, Device> scalars_;
  typename Ops::GradientWorkspace workspace_;
  std::optional<HostOwnedScalars> synced_;  // the host copies at the last exchange with the device
};

}  // namespace mpx
