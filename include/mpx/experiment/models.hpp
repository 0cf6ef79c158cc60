// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Reference models used by the examples, tests and benchmarks, so that all three measure
/// the same network.

#include <cstdint>

#include "mpx/experiment/layer_precisions.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/sequential.hpp"

namespace mpx::experiment {

/// @brief Three fully connected layers, ReLU fused into the first two matmuls, all in precision `P`
/// except the classifier, which runs in `Head` (by default also `P`).
/// @code
/// auto model = mpx::experiment::mlp3<mpx::bf16_mixed>(784, 512, 256, 10);
/// @endcode
template <PrecisionPolicy P, PrecisionPolicy Head = P, class Device = Host>
auto mlp3(std::int64_t inputs, std::int64_t hidden1, std::int64_t hidden2, std::int64_t outputs) {
  using Body = nn::layers<P, Device>;
  using Classifier = nn::layers<Head, Device>;
  return nn::Sequential{Body::linear(inputs, hidden1, nn::relu), Body::linear(hidden1, hidden2, nn::relu),
                        Classifier::linear(hidden2, outputs)};
}

/// @brief The type of `mlp3<P, Head, Device>(...)`.
template <PrecisionPolicy P, PrecisionPolicy Head = P, class Device = Host>
using Mlp3 = decltype(mlp3<P, Head, Device>(1, 1, 1, 1));

/// @brief `mlp3` with a LayerNorm after each hidden layer, each kind of layer in the precision
/// `Layers` gives it (`Sequential` inserts the casts between them).
/// @code
/// using Plan = mpx::experiment::LayerPrecisions<mpx::bf16_mixed, mpx::fp32, mpx::fp32>;
/// auto model = mpx::experiment::mlp3_layer_norm<Plan>(784, 512, 256, 10);
/// @endcode
template <LayerPrecisionPlan Layers, class Device = Host>
auto mlp3_layer_norm(std::int64_t inputs, std::int64_t hidden1, std::int64_t hidden2, std::int64_t outputs) {
  using Body = nn::layers<typename Layers::body, Device>;
  using Norm = nn::layers<typename Layers::norm, Device>;
  using Head = nn::layers<typename Layers::head, Device>;
  return nn::Sequential{Body::linear(inputs, hidden1, nn::relu), Norm::layer_norm(hidden1),
                        Body::linear(hidden1, hidden2, nn::relu), Norm::layer_norm(hidden2),
                        Head::linear(hidden2, outputs)};
}

/// @brief The type of `mlp3_layer_norm<Layers, Device>(...)`.
template <LayerPrecisionPlan Layers, class Device = Host>
using Mlp3LayerNorm = decltype(mlp3_layer_norm<Layers, Device>(1, 1, 1, 1));

}  // namespace mpx::experiment
