// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What checkpoints call an optimizer and its state slots (PyTorch's names), the registry an
/// optimizer of your own joins by specialising `optimizer_state_names`.

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "mpx/optim/adamw.hpp"
#include "mpx/optim/sgd.hpp"

namespace mpx::io {

/// @brief What a checkpoint calls an optimizer and its state slots; specialise it for your own
/// optimizer (slot i of each parameter is saved as `optimizer.<parameter>.<slots[i]>`).
template <class Optimizer>
struct optimizer_state_names;

/// @brief SGD's names: its one slot is PyTorch's `momentum_buffer`.
template <class Model>
struct optimizer_state_names<optim::SGD<Model>> {
  static constexpr std::string_view optimizer = "SGD";                        ///< metadata `optimizer`
  static constexpr std::array<std::string_view, 1> slots{"momentum_buffer"};  ///< slot names
};

/// @brief AdamW's names: PyTorch's `exp_avg` and `exp_avg_sq`.
template <class Model>
struct optimizer_state_names<optim::AdamW<Model>> {
  static constexpr std::string_view optimizer = "AdamW";                            ///< metadata `optimizer`
  static constexpr std::array<std::string_view, 2> slots{"exp_avg", "exp_avg_sq"};  ///< slot names
};

namespace detail {

/// "exp_avg, exp_avg_sq", or "no state".
inline std::string slot_list(const std::vector<std::string>& slots) {
  if (slots.empty()) return "no state";
  std::string out = "state ";
  for (std::size_t i = 0; i < slots.size(); ++i) out.append(i == 0 ? "" : ", ").append(slots[i]);
  return out;
}

/// Calls f("optimizer.<parameter>.<slot name>", state tensor) for every allocated optimizer state
/// slot of `model`, in the order the file lists them (PyTorch's slot names, from `Names`).
template <class Names, class Model, class F>
void for_each_optimizer_state(Model& model, F&& f) {
  model.for_each_parameter([&](std::string_view name, auto& p) {
    for (std::size_t slot = 0; slot < Names::slots.size(); ++slot) {
      if (!p.has_state(static_cast<int>(slot))) continue;
      std::string state_name = "optimizer.";
      state_name.append(name).append(".").append(Names::slots[slot]);
      f(state_name, p.state(static_cast<int>(slot)));
    }
  });
}

}  // namespace detail

}  // namespace mpx::io
