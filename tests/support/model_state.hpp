// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `state_bytes` and `weight_and_buffer_bytes`: the bytes a resumed or reloaded model must
/// reproduce, for tests.

#include <string_view>
#include <vector>

#include "mpx/nn/layer.hpp"

namespace mpx::test {

/// @brief The bytes of `model`'s master weights, compute copies and allocated optimizer state, in
/// visit order.
template <class Model>
std::vector<unsigned char> state_bytes(Model& model) {
  std::vector<unsigned char> out;
  const auto add = [&](const auto& tensor) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data());
    out.insert(out.end(), bytes, bytes + tensor.size_bytes());
  };
  model.for_each_parameter([&](std::string_view, auto& p) {
    add(p.master());
    add(p.compute());
    for (int slot = 0; slot < p.state_slots; ++slot) {
      if (p.has_state(slot)) add(p.state(slot));
    }
  });
  return out;
}

/// @brief The bytes of `model`'s master weights, then of its buffers (BatchNorm's running statistics):
/// what a weight file holds, and what a resumed model must reproduce beside its optimizer state.
template <class Model>
std::vector<unsigned char> weight_and_buffer_bytes(Model& model) {
  std::vector<unsigned char> out;
  const auto add = [&](const auto& tensor) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data());
    out.insert(out.end(), bytes, bytes + tensor.size_bytes());
  };
  model.for_each_parameter([&](std::string_view, auto& p) { add(p.master()); });
  nn::for_each_buffer(model, [&](std::string_view, auto& buffer) { add(buffer); });
  return out;
}

}  // namespace mpx::test
