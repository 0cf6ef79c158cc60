// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `model_json`: a model's layer descriptions (nn/description.hpp) as JSON, the text
/// checkpoints carry in their `model` metadata so that another tool can rebuild the model.
///
/// @code
/// {"kind":"Sequential","layers":[{"kind":"Linear","precision":"bf16_mixed","in_features":784,
///  "out_features":512,"bias":true,"activation":"ReLU"}, ...]}
/// @endcode
/// Layer I of "layers" holds the parameters "layers.I.<name>"; a nested model's layers nest under
/// its own "layers" (parameters "layers.I.layers.J.<name>"), a `Residual`'s under "block"
/// (parameters "layers.I.block.<name>").

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "mpx/io/json.hpp"
#include "mpx/nn/description.hpp"

namespace mpx::io {

namespace detail {
// Appends `[{...}, {...}]`: one object per description, its settings in order; a container's inner
// layers ("layers", "block") nest the same way.
inline void append_layers(std::string& out, const std::vector<nn::LayerDescription>& layers) {
  out.push_back('[');
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (i != 0) out.push_back(',');
    out.push_back('{');
    for (std::size_t f = 0; f < layers[i].size(); ++f) {
      const nn::DescriptionField& field = layers[i][f];
      if (f != 0) out.push_back(',');
      out.append(json::quote(field.key)).push_back(':');
      std::visit(
          [&](const auto& value) {
            using V = std::remove_cvref_t<decltype(value)>;
            if constexpr (std::is_same_v<V, bool>) {
              out.append(value ? "true" : "false");
            } else if constexpr (std::is_same_v<V, std::string>) {
              out.append(json::quote(value));
            } else if constexpr (std::is_same_v<V, nn::NestedLayers>) {
              append_layers(out, value.layers);
            } else {
              out.append(json::number(value));
            }
          },
          field.value);
    }
    out.push_back('}');
  }
  out.push_back(']');
}
}  // namespace detail

/// @brief `{"kind": <kind>, "layers": [...]}` with one JSON object per layer description, its
/// settings in order (strings quoted, numbers exact, flags as true/false, a container's inner
/// layers as a nested array).
[[nodiscard]] inline std::string model_json(std::string_view kind,
                                            const std::vector<nn::LayerDescription>& layers) {
  std::string out = "{\"kind\":";
  out.append(json::quote(kind)).append(",\"layers\":");
  detail::append_layers(out, layers);
  return out.append("}");
}

/// @brief The JSON description of `model` (see the file's comment).
/// @code
/// const std::string text = mpx::io::model_json(mpx::experiment::mlp3<mpx::bf16_mixed>(784, 512, 256, 10));
/// @endcode
template <nn::DescribableModel Model>
[[nodiscard]] std::string model_json(const Model& model) {
  return model_json(Model::kind, model.describe());
}

}  // namespace mpx::io
