// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::Parameter<P, Device>`: master weights, their compute copy, the fp32 gradient and the
/// optimizer's state slots for one trainable tensor.

#include <array>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "mpx/backend/backend.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/convert.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief One trainable tensor under precision `P`.
///
/// The master weights are `master_t<P>`; the compute copy (`compute_t<P>`) exists only when it
/// differs from the master type (fp16/bf16 mixed), otherwise `compute()` is the master tensor itself
/// (fp32, TF32 — whose rounding happens inside the matmul — and the pure modes). Gradients are always
/// in the accumulate type (fp32; fp64 for fp64), accumulated across micro-batches.
template <PrecisionPolicy P, class Device = Host>
class Parameter {
 public:
  /// @brief The owning layer's precision policy.
  using precision = P;
  /// @brief Device the parameter lives on.
  using device_type = Device;
  /// @brief Element type of the master weights.
  using master_element = master_t<P>;
  /// @brief Element type of the compute copy.
  using compute_element = compute_t<P>;
  /// @brief Element type of the gradient (the accumulate type).
  using grad_element = accumulate_t<P>;
  /// Whether the compute weights are a separate, rounded copy of the master weights.
  static constexpr bool has_compute_copy = !std::is_same_v<master_element, compute_element>;
  /// Optimizer state slots (SGD uses one, AdamW two), allocated on first use.
  static constexpr int state_slots = 2;

  Parameter() = default;
  /// @brief A parameter called `name` of the given shape.
  Parameter(std::string name, const Shape& shape) : name_(std::move(name)), master_(shape), grad_(shape) {
    if constexpr (has_compute_copy) compute_ = Tensor<compute_element, Device>(shape);
  }

  /// @brief Name within its layer ("weight", "bias").
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// @brief Shape of the parameter.
  [[nodiscard]] const Shape& shape() const noexcept { return master_.shape(); }

  /// @brief The master weights.
  [[nodiscard]] Tensor<master_element, Device>& master() noexcept { return master_; }
  /// @brief The master weights, read-only.
  [[nodiscard]] const Tensor<master_element, Device>& master() const noexcept { return master_; }
  /// @brief The accumulated gradient (zero-filled first if a `zero_grad()` is pending; that fill is
  /// device work, which can throw after a device fault, so this is not `noexcept`).
  [[nodiscard]] Tensor<grad_element, Device>& grad() {
    if (zero_pending_) {
      grad_.set_zero();
      zero_pending_ = false;
    }
    return grad_;
  }

  /// @brief The gradient for a kernel about to add to it; `overwrite` is true when a `zero_grad()`
  /// is pending, in which case the kernel must write every element instead of adding (a GEMM with
  /// beta = 0) and the zero-fill is skipped.
  struct GradientTarget {
    /// @brief The gradient tensor.
    Tensor<grad_element, Device>& tensor;
    /// @brief Whether the kernel must overwrite instead of add.
    bool overwrite;
  };
  /// @brief The gradient and whether to overwrite it; clears the pending zero.
  [[nodiscard]] GradientTarget grad_for_update() noexcept {
    const bool overwrite = zero_pending_;
    zero_pending_ = false;
    return {grad_, overwrite};
  }

  /// @brief The weights matmuls read: the compute copy, or the master weights when they coincide.
  [[nodiscard]] const Tensor<compute_element, Device>& compute() const noexcept {
    if constexpr (has_compute_copy) {
      return compute_;
    } else {
      return master_;
    }
  }

  /// @brief The compute copy for an optimizer to refresh, or null when there is none.
  [[nodiscard]] Tensor<compute_element, Device>* compute_copy() noexcept {
    if constexpr (has_compute_copy) {
      return &compute_;
    } else {
      return nullptr;
    }
  }

  /// @brief Rounds the master weights into the compute copy (after initialisation or loading).
  void refresh_compute_copy() {
    if constexpr (has_compute_copy)
      Backend<Device>::template round_into<typename P::compute_type>(master_, compute_);
  }

  /// @brief Optimizer state slot `slot`, zero-filled on first use.
  [[nodiscard]] Tensor<grad_element, Device>& state(int slot) {
    auto& tensor = state_[static_cast<std::size_t>(slot)];
    if (tensor.empty() && !master_.empty()) tensor = Tensor<grad_element, Device>(shape());
    return tensor;
  }

  /// @brief Whether slot `slot` has been allocated.
  [[nodiscard]] bool has_state(int slot) const noexcept {
    return !state_[static_cast<std::size_t>(slot)].empty();
  }

  /// @brief Gradient := 0, before a step's first micro-batch. Lazy: the first kernel to produce the
  /// gradient overwrites it instead of adding, which saves a pass over every gradient per step.
  void zero_grad() noexcept { zero_pending_ = true; }

  /// @brief Bytes this parameter holds, by role.
  struct Memory {
    std::int64_t weights = 0;          ///< master weights and their compute copy
    std::int64_t gradient = 0;         ///< the accumulated gradient
    std::int64_t optimizer_state = 0;  ///< the optimizer's allocated state slots
  };
  /// @brief What this parameter holds now, by role (unallocated optimizer slots count as 0).
  [[nodiscard]] Memory memory() const noexcept {
    Memory bytes;
    bytes.weights = static_cast<std::int64_t>(master_.size_bytes());
    if constexpr (has_compute_copy) bytes.weights += static_cast<std::int64_t>(compute_.size_bytes());
    bytes.gradient = static_cast<std::int64_t>(grad_.size_bytes());
    for (const auto& s : state_) bytes.optimizer_state += static_cast<std::int64_t>(s.size_bytes());
    return bytes;
  }

 private:
  std::string name_;
  Tensor<master_element, Device> master_;
  Tensor<compute_element, Device> compute_;  // empty unless has_compute_copy
  Tensor<grad_element, Device> grad_;
  std::array<Tensor<grad_element, Device>, state_slots> state_;
  bool zero_pending_ = false;
};

/// @brief A parameter read in its master type (fp32 math, no compute copy): the gains and biases of
/// the normalisation layers and the positional table, whatever `P`'s compute type.
template <PrecisionPolicy P, class Device = Host>
using MasterParameter =
    Parameter<Precision<typename P::master_type, typename P::master_type, typename P::update_rounding>,
              Device>;

}  // namespace mpx::nn
