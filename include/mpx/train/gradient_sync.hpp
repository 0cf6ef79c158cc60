// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `GradientSync<Device, Grad>`: where `mpx::Trainer` hands its gradients to data parallelism.
///
/// The trainer knows nothing of processes: it calls a `GradientSync` when one is set in its options
/// (the `Trainer` constructor that takes one), and mpx::dist implements it over MPI (CPU) and NCCL (GPU).
/// Without one the step is unchanged (one pointer test per step). The calls, in a step's order:
/// `begin_backward` before the last micro-batch's backward; `gradients_final` as each layer's
/// gradients become final during that backward (a model that cannot tell, or layers without
/// parameters, never call it); `finish` after backward and before the gradients are unscaled and
/// inspected, so that the finite check, the gradient norm and clipping see the averaged gradients and
/// decide the same on every process.

#include <span>

#include "mpx/tensor/tensor.hpp"
#include "mpx/train/step_scalars.hpp"

namespace mpx {

/// @brief Averages a training step's gradients and step flags across processes; see the file
/// comment for when `mpx::Trainer` calls what.
/// @tparam Device where the model and its gradients live.
/// @tparam Grad the gradients' element type (fp32; fp64 under fp64).
template <class Device, class Grad>
class GradientSync {
 public:
  /// @brief The gradient tensors the trainer hands over.
  using GradientList = std::span<Tensor<Grad, Device>* const>;

  GradientSync() = default;
  GradientSync(const GradientSync&) = delete;
  GradientSync& operator=(const GradientSync&) = delete;
  virtual ~GradientSync() = default;

  /// @brief This process's rank, in [0, number of processes). The trainer numbers the micro-batches
  /// of a step across processes by it (rank r's m-th of M is r * M + m), so that dropout draws the
  /// masks one process would draw for the same micro-batches; every process must run the same number
  /// of micro-batches per step.
  [[nodiscard]] virtual int rank() const = 0;

  /// @brief The last micro-batch's backward is about to run: the gradients about to be reported
  /// final are those of this step.
  virtual void begin_backward() = 0;

  /// @brief `gradients` (some of the model's, in any order) hold their final value for this step:
  /// their reduction may start while backward computes the rest.
  virtual void gradients_final(GradientList gradients) = 0;

  /// @brief After backward: leaves in every tensor of `gradients` (all of the model's, in
  /// `for_each_parameter` order) the mean over processes, and reduces the step's own flags in
  /// `scalars` (device memory): the loss sum becomes the mean over processes and the non-finite-input
  /// flag their maximum, so every process takes the same skip decision. `amaxes` (device memory; empty
  /// unless the model has FP8 layers under delayed scaling) holds this step's amax of each FP8 tensor
  /// and is left holding each one's maximum over processes, as Transformer Engine reduces amaxes
  /// across the data-parallel group, so that every process computes the same scales.
  virtual void finish(GradientList gradients, StepScalars* scalars, std::span<float> amaxes) = 0;
};

}  // namespace mpx
