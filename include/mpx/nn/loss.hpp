// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Losses: `SoftmaxCrossEntropy` and `MSELoss`. Both compute in fp32 (fp64 under fp64)
/// whatever the type of the model's output, and produce the loss and its gradient in one pass.

#include <cstdint>
#include <span>
#include <string_view>

#include "mpx/backend/backend.hpp"
#include "mpx/backend/cross_entropy_spec.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx::nn {

/// @brief Mean softmax cross-entropy against int32 class labels (a `Tensor<std::int32_t, Device>`), with
/// optional label smoothing and an ignore index (PyTorch's definitions, `reduction="mean"`).
///
/// Logits of any rank >= 2 are read as their matrix view [rows, classes]: [batch, classes] against
/// [batch] labels, or a language model's [batch, sequence, vocabulary] against [batch, sequence]
/// token ids (batch x sequence rows), without a copy. Rows labelled `ignore_index` add no loss and
/// get a zero gradient; the mean is over the other rows. With none (every label ignored) the loss is
/// 0 and the gradient zero, where PyTorch reports NaN: mpx skips a step whose loss is not finite, so
/// a NaN would skip the step (and back off the loss scale) where PyTorch's zero gradient lets it
/// proceed. Computed in fp32 (fp64 under `mpx::fp64`).
/// @tparam P the precision of the layer producing the logits (their element type is `compute_t<P>`).
template <PrecisionPolicy P, class Device = Host>
class SoftmaxCrossEntropy {
  using T = compute_t<P>;

 public:
  /// @brief The loss's precision policy.
  using precision = P;
  /// @brief Device the loss runs on.
  using device_type = Device;
  /// @brief Element type of the logits.
  using input_type = T;
  /// @brief One class index per row of the logits' matrix view ([batch] or [batch, sequence]), int32,
  /// on the loss's device.
  using target_type = const Tensor<std::int32_t, Device>&;
  /// @brief Type of the loss value (the accumulate type).
  using value_type = accumulate_t<P>;
  /// @brief Loss name used in messages.
  static constexpr std::string_view kind = "SoftmaxCrossEntropy";

  /// @brief Construction options.
  struct Options {
    /// @brief Label smoothing in [0, 1), as in `torch.nn.CrossEntropyLoss`.
    float label_smoothing = 0.0f;
    /// @brief Rows with this label add no loss and get a zero gradient, as `torch.nn.CrossEntropyLoss`'s
    /// `ignore_index` (default -100; it may be a class id, such as a padding token's).
    std::int32_t ignore_index = default_ignore_index;
  };

  /// @brief A loss with the given options.
  explicit SoftmaxCrossEntropy(Options options = {}) : options_(options) {}

  /// @brief The options the loss was made with.
  [[nodiscard]] const Options& options() const noexcept { return options_; }

  /// @brief The mean loss, without a gradient.
  value_type forward(const Tensor<T, Device>& logits, target_type labels) {
    return Backend<Device>::softmax_cross_entropy(logits, values(labels), options_.label_smoothing, 0.0f,
                                                  static_cast<Tensor<T, Device>*>(nullptr),
                                                  options_.ignore_index);
  }

  /// @brief The mean loss, and its gradient times `grad_seed` (the loss scale) into `gradient()`.
  value_type forward_backward(const Tensor<T, Device>& logits, target_type labels, float grad_seed) {
    ensure_shape(gradient_, logits.shape());
    return Backend<Device>::softmax_cross_entropy(logits, values(labels), options_.label_smoothing, grad_seed,
                                                  &gradient_, options_.ignore_index);
  }

  /// @brief The training step's form of `forward_backward`, on every device: adds the mean loss to
  /// `*loss_sum` and writes the gradient seeded by `seed` (a `LossSeed`), both in the memory of the
  /// loss's device, without waiting for a GPU. `labels` live on that device too. A label outside
  /// [0, classes) other than the ignore index throws on the CPU; a GPU kernel cannot throw, so it
  /// makes its row's loss and gradient NaN and the step is skipped as non-finite. On a GPU the count of
  /// non-ignored rows, which the gradient's scale needs, is made on the device by one more kernel.
  template <class Seed>
  void accumulate_forward_backward(const Tensor<T, Device>& logits, target_type labels, const Seed& seed,
                                   double* loss_sum) {
    ensure_shape(gradient_, logits.shape());
    Backend<Device>::softmax_cross_entropy(logits, labels, options_.label_smoothing, seed, &gradient_,
                                           row_losses_, loss_sum, options_.ignore_index);
  }

  /// @brief dL/dlogits from the last `forward_backward`.
  [[nodiscard]] const Tensor<T, Device>& gradient() const noexcept { return gradient_; }

 private:
  // The backends take labels as a span of the device's memory.
  static std::span<const std::int32_t> values(target_type labels) noexcept {
    return {labels.data(), static_cast<std::size_t>(labels.numel())};
  }

  Options options_;
  Tensor<T, Device> gradient_;
  Tensor<value_type, Device> row_losses_;  // a GPU step's per-row losses, reduced in a fixed order
};

/// @brief Mean squared error over all elements (PyTorch's default reduction); targets in fp32.
template <PrecisionPolicy P, class Device = Host>
class MSELoss {
  using T = compute_t<P>;

 public:
  /// @brief The loss's precision policy.
  using precision = P;
  /// @brief Device the loss runs on.
  using device_type = Device;
  /// @brief Element type of the predictions.
  using input_type = T;
  /// @brief Targets, one per prediction, in the accumulate type.
  using target_type = const Tensor<accumulate_t<P>, Device>&;
  /// @brief Type of the loss value (the accumulate type).
  using value_type = accumulate_t<P>;
  /// @brief Loss name used in messages.
  static constexpr std::string_view kind = "MSELoss";

  /// @brief Mean squared error.
  value_type forward(const Tensor<T, Device>& prediction, target_type target) {
    return Backend<Device>::mse_loss(prediction, target, 0.0f, static_cast<Tensor<T, Device>*>(nullptr));
  }

  /// @brief Mean squared error; also stores its gradient scaled by `grad_seed` (the loss scale).
  value_type forward_backward(const Tensor<T, Device>& prediction, target_type target, float grad_seed) {
    ensure_shape(gradient_, prediction.shape());
    return Backend<Device>::mse_loss(prediction, target, grad_seed, &gradient_);
  }

  /// @brief The training step's form of `forward_backward`, on every device: adds the loss to
  /// `*loss_sum` and writes the gradient seeded by `seed` (a `LossSeed`), both in the memory of the
  /// loss's device, without waiting for a GPU.
  template <class Seed>
  void accumulate_forward_backward(const Tensor<T, Device>& prediction, target_type target, const Seed& seed,
                                   double* loss_sum) {
    ensure_shape(gradient_, prediction.shape());
    Backend<Device>::mse_loss(prediction, target, seed, &gradient_, partials_, loss_sum);
  }

  /// @brief The gradient stored by the last `forward_backward`.
  [[nodiscard]] const Tensor<T, Device>& gradient() const noexcept { return gradient_; }

 private:
  Tensor<T, Device> gradient_;
  Tensor<value_type, Device> partials_;  // a GPU step's partial sums, reduced in a fixed order
};

}  // namespace mpx::nn
