// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a layer says about itself so that another tool can rebuild it: `LayerDescription`,
/// the optional `DescribableLayer` concept, and `describe_layer`, which works for every layer.
///
/// A layer describes its settings under PyTorch's argument names ("in_features", "bias", "eps");
/// `describe_layer` puts the layer's `kind` and precision name first. A layer without a
/// `describe()` member (a user's own, say) still works everywhere: its description says
/// "description": "unknown". `io::model_json` renders a model's descriptions as JSON, and
/// checkpoints carry it in their `model` metadata (docs/checkpoints.md).

#include <concepts>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mpx::nn {

struct DescriptionField;

/// @brief A layer's settings in order.
using LayerDescription = std::vector<DescriptionField>;

/// @brief The descriptions of the layers a container holds (a nested `Sequential`'s "layers", a
/// `Residual`'s "block"), so that a description is a tree as the model is.
struct NestedLayers {
  std::vector<LayerDescription> layers;  ///< one description per inner layer, in order
};

/// @brief The value of one setting: a flag, an integer (a size), a number (an epsilon, kept in the
/// layer's own type so that it prints as written), a name, or the inner layers of a container.
using DescriptionValue = std::variant<bool, std::int64_t, float, double, std::string, NestedLayers>;

/// @brief One named setting of a layer, e.g. {"in_features", 784}.
struct DescriptionField {
  std::string key;         ///< the setting's name (PyTorch's argument name where there is one)
  DescriptionValue value;  ///< its value
};

/// @brief A layer that can describe itself: `layer.describe()` returns its settings (without
/// `kind` and precision, which `describe_layer` adds from the layer's type).
template <class L>
concept DescribableLayer = requires(const L& layer) {
  { layer.describe() } -> std::convertible_to<LayerDescription>;
};

/// @brief A model that describes its layers, as `Sequential` does: `Model::kind` names it and
/// `model.describe()` returns one `LayerDescription` (from `describe_layer`) per layer, in order.
template <class M>
concept DescribableModel = requires(const M& model) {
  { M::kind } -> std::convertible_to<std::string_view>;
  { model.describe() } -> std::convertible_to<std::vector<LayerDescription>>;
};

/// @brief The full description of `layer`: "kind" (`L::kind`), "precision" (`L::precision::name`,
/// when the layer has a precision policy), then the layer's `describe()` ("layers" with the inner
/// descriptions for a nested model), or "description": "unknown" when it has none.
/// @code
/// mpx::nn::describe_layer(mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(784, 512));
/// // kind: "Linear", precision: "bf16_mixed", in_features: 784, out_features: 512, bias: true,
/// // activation: "ReLU"
/// @endcode
template <class L>
[[nodiscard]] LayerDescription describe_layer(const L& layer) {
  LayerDescription description{{"kind", std::string(L::kind)}};
  if constexpr (requires { L::precision::name; }) {
    description.push_back({"precision", std::string(L::precision::name)});
  }
  if constexpr (DescribableModel<L>) {
    description.push_back({"layers", NestedLayers{layer.describe()}});
  } else if constexpr (DescribableLayer<L>) {
    LayerDescription settings = layer.describe();
    description.insert(description.end(), std::make_move_iterator(settings.begin()),
                       std::make_move_iterator(settings.end()));
  } else {
    description.push_back({"description", std::string("unknown")});
  }
  return description;
}

}  // namespace mpx::nn
