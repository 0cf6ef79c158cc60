// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `CapturingSync<Device>`: a `GradientSync` for a world of one process that reports a chosen
/// rank and keeps a host copy of the gradient sum the trainer hands it, so that tests can compare one
/// process's micro-batches with "ranks" of one micro-batch each without MPI or NCCL.

#include <type_traits>
#include <vector>

#include <mpx/tensor/tensor.hpp>
#include <mpx/tensor/transfer.hpp>
#include <mpx/train/gradient_sync.hpp>

namespace mpx::test {

/// @brief Leaves the gradients as they are (their mean over one process) after copying them to the
/// host: the sum over this process's micro-batches, which a real sync would add up in rank order.
/// `Backend<Device>` must be complete where it is used (<mpx/cuda.hpp> for `Cuda`).
template <class Device>
class CapturingSync final : public GradientSync<Device, float> {
 public:
  using typename GradientSync<Device, float>::GradientList;

  /// @brief A sync that says it is rank `rank`.
  explicit CapturingSync(int rank) : rank_(rank) {}
  [[nodiscard]] int rank() const override { return rank_; }
  void begin_backward() override {}
  void gradients_final(GradientList) override {}
  void finish(GradientList gradients, StepScalars*, std::span<float>) override {
    sums.clear();
    for (const Tensor<float, Device>* g : gradients) {
      if constexpr (std::is_same_v<Device, Host>) {
        sums.push_back(g->clone());
      } else {
        sums.push_back(to<Host>(*g));
      }
    }
  }

  /// @brief The gradients `finish` was handed last, in the trainer's order, on the host.
  std::vector<Tensor<float, Host>> sums;

 private:
  int rank_;
};

}  // namespace mpx::test
