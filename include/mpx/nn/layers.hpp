// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::layers<P, Device>`: the layers and losses of one precision on one device, so that a
/// model says its precision and device once.

#include <cstdint>

#include "mpx/nn/causal_self_attention.hpp"
#include "mpx/nn/dropout.hpp"
#include "mpx/nn/embedding.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/positional_embedding.hpp"
#include "mpx/policy/precision.hpp"
#include "mpx/tensor/device.hpp"

namespace mpx::nn {

/// @brief An activation passed as a value whose type carries it, so that `layers<P, Device>::linear`
/// deduces it (see `relu`, `gelu`).
/// @tparam A the activation fused into the GEMM's epilogue.
template <Activation A>
struct FusedActivation {
  /// @brief The activation.
  static constexpr Activation value = A;
};

/// @brief ReLU fused into a `Linear`'s GEMM epilogue: `L::linear(784, 512, mpx::nn::relu)`.
inline constexpr FusedActivation<Activation::ReLU> relu{};
/// @brief GELU (tanh form) fused into a `Linear`'s GEMM epilogue: `L::linear(512, 2048, mpx::nn::gelu)`.
inline constexpr FusedActivation<Activation::GELU> gelu{};

/// @brief Makes the layers and losses of precision `P` on `Device`: the precision and the device
/// are said once, in `using L = mpx::nn::layers<P, Device>;`, and every layer follows.
///
/// The members are functions rather than member types so that the same line reads the same inside
/// a template whose `P` or `Device` is a parameter (no `typename` or `template` keyword needed).
/// A layer kept in another precision (an fp32 classifier, say) comes from another `layers`.
/// @code
/// using L = mpx::nn::layers<mpx::bf16_mixed, mpx::Cuda>;
/// mpx::nn::Sequential model{L::linear(784, 512, mpx::nn::relu), L::layer_norm(512), L::linear(512, 10)};
/// auto loss = L::softmax_cross_entropy({.label_smoothing = 0.1f});
/// @endcode
/// @tparam P      precision policy of every layer made here.
/// @tparam Device `mpx::Host` or `mpx::Cuda`.
template <PrecisionPolicy P, class Device = Host>
struct layers {
  /// @brief The layers' precision policy.
  using precision = P;
  /// @brief The device the layers run on.
  using device_type = Device;

  /// @brief `nn::Linear<P, A, Device>(in_features, out_features, options)`; `A` is deduced from the
  /// third argument (`mpx::nn::relu`, `mpx::nn::gelu`; none when left out or `{}`).
  template <Activation A = Activation::None>
  [[nodiscard]] static Linear<P, A, Device> linear(std::int64_t in_features, std::int64_t out_features,
                                                   FusedActivation<A> = {},
                                                   typename Linear<P, A, Device>::Options options = {}) {
    return Linear<P, A, Device>(in_features, out_features, options);
  }

  /// @brief `nn::LayerNorm<P, Device>(features, epsilon)` (epsilon `LayerNorm::default_epsilon`, 1e-5,
  /// when left out).
  [[nodiscard]] static LayerNorm<P, Device> layer_norm(
      std::int64_t features, float epsilon = LayerNorm<P, Device>::default_epsilon) {
    return LayerNorm<P, Device>(features, epsilon);
  }

  /// @brief `nn::Embedding<P, Device>(num_embeddings, embedding_dim, options)`: int32 token ids to
  /// rows of a learned table (`{.init_std = 0.02}` for GPT-2's initialisation).
  [[nodiscard]] static Embedding<P, Device> embedding(std::int64_t num_embeddings, std::int64_t embedding_dim,
                                                      EmbeddingOptions options = {}) {
    return Embedding<P, Device>(num_embeddings, embedding_dim, options);
  }

  /// @brief `nn::PositionalEmbedding<P, Device>(max_positions, embedding_dim, options)`: a learned
  /// position table added to [batch, sequence, embedding_dim] activations.
  [[nodiscard]] static PositionalEmbedding<P, Device> positional_embedding(
      std::int64_t max_positions, std::int64_t embedding_dim, PositionalEmbeddingOptions options = {}) {
    return PositionalEmbedding<P, Device>(max_positions, embedding_dim, options);
  }

  /// @brief `nn::CausalSelfAttention<P, Device>(embed_dim, num_heads, options)`: GPT-2's attention
  /// block (fused qkv projection, causal softmax, output projection).
  [[nodiscard]] static CausalSelfAttention<P, Device> causal_self_attention(
      std::int64_t embed_dim, std::int64_t num_heads,
      typename CausalSelfAttention<P, Device>::Options options = {}) {
    return CausalSelfAttention<P, Device>(embed_dim, num_heads, options);
  }

  /// @brief `nn::Dropout<P, Device>(p)`: drops each element with probability p in training.
  [[nodiscard]] static Dropout<P, Device> dropout(float p) { return Dropout<P, Device>(p); }

  /// @brief `nn::SoftmaxCrossEntropy<P, Device>(options)`: the loss for logits made in `P`.
  [[nodiscard]] static SoftmaxCrossEntropy<P, Device> softmax_cross_entropy(
      typename SoftmaxCrossEntropy<P, Device>::Options options = {}) {
    return SoftmaxCrossEntropy<P, Device>(options);
  }

  /// @brief `nn::MSELoss<P, Device>()`: the loss for predictions made in `P`.
  [[nodiscard]] static MSELoss<P, Device> mse_loss() { return MSELoss<P, Device>(); }
};

}  // namespace mpx::nn
