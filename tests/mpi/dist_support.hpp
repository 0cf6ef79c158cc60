// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the multi-rank tests share: a synthetic classification set (the same on every rank),
/// a small MLP, and a hash of everything a training step may change.

#include <cstdint>
#include <random>
#include <vector>

#include <mpx/dist/model_signature.hpp>
#include <mpx/mpx.hpp>

#include "../support/model_state.hpp"

namespace mpx_dist_test {

inline constexpr std::int64_t features = 16;
inline constexpr std::int32_t classes = 4;

/// @brief Gaussian blobs, `samples` of them, drawn from `seed` alone (so every rank builds the same).
inline mpx::data::Dataset make_dataset(std::int64_t samples, std::uint32_t seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, classes - 1);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = 1.5f * normal(random);
  mpx::Tensor<float> images(mpx::Shape{samples, features});
  std::vector<std::int32_t> labels(static_cast<std::size_t>(samples));
  for (std::int64_t row = 0; row < samples; ++row) {
    const std::int32_t y = label(random);
    labels[static_cast<std::size_t>(row)] = y;
    for (std::int64_t f = 0; f < features; ++f)
      images[row * features + f] =
          centres[static_cast<std::size_t>(y * features + f)] + 0.7f * normal(random);
  }
  return mpx::data::Dataset(std::move(images), std::move(labels), classes);
}

/// @brief A three-layer MLP in precision P with an fp32 classifier, initialised from `seed`.
template <class P>
auto make_model(std::uint64_t seed, std::int64_t hidden = 32) {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, hidden),
                            mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(hidden, hidden),
                            mpx::nn::Linear<mpx::fp32>(hidden, classes)};
  model.initialize(seed);
  return model;
}

/// @brief `make_model` with dropout (p = 0.2) after its first layer: the masks a micro-batch draws
/// depend on its number, which must be global across ranks for ranks to match one process.
template <class P>
auto make_dropout_model(std::uint64_t seed, std::int64_t hidden = 32) {
  mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, hidden),
                            mpx::nn::Dropout<P>(0.2f),
                            mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(hidden, hidden),
                            mpx::nn::Linear<mpx::fp32>(hidden, classes)};
  model.initialize(seed);
  return model;
}

/// @brief FNV-1a of the model's master weights, compute copies and optimizer state.
template <class Model>
std::uint64_t state_hash(Model& model) {
  const std::vector<unsigned char> bytes = mpx::test::state_bytes(model);
  std::uint64_t hash = 0xcbf29ce484222325ull;
  mpx::dist::detail::fnv1a(hash, bytes.data(), bytes.size());
  return hash;
}

}  // namespace mpx_dist_test
