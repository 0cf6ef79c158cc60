// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `experiment::LayerPrecisions`: per-layer precision overrides as a type, e.g. everything in
/// bf16 except the classifier and the LayerNorms, which stay fp32 (what AMP users do by hand).

#include <string>
#include <type_traits>

#include "mpx/policy/precision.hpp"

namespace mpx::experiment {

/// @brief The precisions of a model's three kinds of layer: the hidden matmuls (`Body`), the final
/// classifier (`Head`) and the normalisation layers (`Norm`). Models built from it (see models.hpp)
/// put casts between layers of different precisions.
/// @code
/// // bf16 everywhere except the classifier and the LayerNorms:
/// using Plan = mpx::experiment::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp32>;
/// @endcode
template <PrecisionPolicy Body, PrecisionPolicy Head = Body, PrecisionPolicy Norm = Body>
struct LayerPrecisions {
  using body = Body;  ///< hidden layers
  using head = Head;  ///< the classifier
  using norm = Norm;  ///< LayerNorm

  /// True when every kind of layer uses `Body`.
  static constexpr bool uniform = std::is_same_v<Body, Head> && std::is_same_v<Body, Norm>;
  /// True when any layer computes in fp16, or another format with fewer exponent bits than fp32 (and
  /// so needs loss scaling).
  static constexpr bool has_half_compute = narrower_range_than_fp32_v<typename Body::compute_type> ||
                                           narrower_range_than_fp32_v<typename Head::compute_type> ||
                                           narrower_range_than_fp32_v<typename Norm::compute_type>;

  /// @brief "bf16_mixed", or with overrides "bf16_mixed/head:fp32/norm:fp32".
  [[nodiscard]] static std::string name() {
    std::string text(Body::name);
    if constexpr (!std::is_same_v<Head, Body>) text.append("/head:").append(Head::name);
    if constexpr (!std::is_same_v<Norm, Body>) text.append("/norm:").append(Norm::name);
    return text;
  }
};

namespace detail {
template <class T>
struct is_layer_precisions : std::false_type {};
template <class Body, class Head, class Norm>
struct is_layer_precisions<LayerPrecisions<Body, Head, Norm>> : std::true_type {};
}  // namespace detail

/// @brief Satisfied by the specialisations of `LayerPrecisions`.
template <class T>
concept LayerPrecisionPlan = detail::is_layer_precisions<T>::value;

}  // namespace mpx::experiment
