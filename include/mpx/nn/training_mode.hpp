// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Training and evaluation modes: `set_training(layer, on)`, `is_training(layer)` and
/// `EvaluationMode`, the scope in which a model evaluates (dropout off, nothing saved for backward
/// that only training needs), as PyTorch's `model.train()` / `model.eval()`.
///
/// A layer whose forward differs between the modes has `void set_training(bool)` and
/// `bool training() const`; containers (`Sequential`, `Residual`) pass the mode to their layers.
/// Layers without those members behave the same in both modes. Models start in training mode.

namespace mpx::nn {

/// @brief Puts `layer` (a layer or a whole model) into training (`true`) or evaluation mode; does
/// nothing for a layer that behaves the same in both.
template <class L>
void set_training(L& layer, bool training) {
  if constexpr (requires { layer.set_training(training); }) layer.set_training(training);
}

/// @brief Whether `layer` is in training mode (always true for a layer without modes).
template <class L>
[[nodiscard]] bool is_training(const L& layer) {
  if constexpr (requires { layer.training(); }) {
    return layer.training();
  } else {
    return true;
  }
}

/// @brief Evaluation mode for the scope's lifetime: puts the model into evaluation mode and
/// restores its previous mode on exit (also when an exception leaves the scope).
/// @code
/// {
///   mpx::nn::EvaluationMode evaluating(model);
///   const auto& logits = model.forward(x);  // dropout off
/// }
/// @endcode
template <class Model>
class EvaluationMode {
 public:
  /// @brief Switches `model` to evaluation mode.
  explicit EvaluationMode(Model& model) : model_(model), was_training_(is_training(model)) {
    set_training(model_, false);
  }
  EvaluationMode(const EvaluationMode&) = delete;
  EvaluationMode& operator=(const EvaluationMode&) = delete;
  /// @brief Restores the mode the model had before.
  ~EvaluationMode() { set_training(model_, was_training_); }

 private:
  Model& model_;
  bool was_training_;
};

}  // namespace mpx::nn
