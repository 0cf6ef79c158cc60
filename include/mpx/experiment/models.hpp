// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Reference models used by the examples, tests and benchmarks, so that all three measure
/// the same network.

#include <cstdint>

#include "mpx/experiment/layer_precisions.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/sequential.hpp"

namespace mpx::experiment {

/// @brief Three fully connected layers, ReLU fused into the first two matmuls, all in precision `P`
/// except the classifier, which runs in `Head` (by default also `P`).
/// @code
/// auto model = mpx::experiment::mlp3<mpx::bf16_mixed>(784, 512, 256, 10);
/// @endcode
template <PrecisionPolicy P, PrecisionPolicy Head = P, class Device = Host>
auto mlp3(std::int64_t inputs, std::int64_t hidden1, std::int64_t hidden2, std::int64_t outputs) {
  using nn::Activation;
  return nn::Sequential{nn::Linear<P, Activation::ReLU, Device>(inputs, hidden1),
                        nn::Linear<P, Activation::ReLU, Device>(hidden1, hidden2),
                        nn::Linear<Head, Activation::None, Device>(hidden2, outputs)};
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
  using nn::Activation;
  using Body = typename Layers::body;
  using Norm = typename Layers::norm;
  return nn::Sequential{
      nn::Linear<Body, Activation::ReLU, Device>(inputs, hidden1), nn::LayerNorm<Norm, Device>(hidden1),
      nn::Linear<Body, Activation::ReLU, Device>(hidden1, hidden2), nn::LayerNorm<Norm, Device>(hidden2),
      nn::Linear<typename Layers::head, Activation::None, Device>(hidden2, outputs)};
}

/// @brief The type of `mlp3_layer_norm<Layers, Device>(...)`.
template <LayerPrecisionPlan Layers, class Device = Host>
using Mlp3LayerNorm = decltype(mlp3_layer_norm<Layers, Device>(1, 1, 1, 1));

}  // namespace mpx::experiment
