// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `nn::layers<P, Device>`: the layers and losses of one precision on one device, so that a
/// model says its precision and device once.

#include <cstdint>

#include "mpx/nn/activation.hpp"
#include "mpx/nn/add_time_embedding.hpp"
#include "mpx/nn/batch_norm.hpp"
#include "mpx/nn/causal_self_attention.hpp"
#include "mpx/nn/conv2d.hpp"
#include "mpx/nn/dropout.hpp"
#include "mpx/nn/embedding.hpp"
#include "mpx/nn/first_token.hpp"
#include "mpx/nn/flatten.hpp"
#include "mpx/nn/gather_tokens.hpp"
#include "mpx/nn/group_norm.hpp"
#include "mpx/nn/layer.hpp"
#include "mpx/nn/layer_norm.hpp"
#include "mpx/nn/linear.hpp"
#include "mpx/nn/loss.hpp"
#include "mpx/nn/pooling.hpp"
#include "mpx/nn/positional_embedding.hpp"
#include "mpx/nn/self_attention.hpp"
#include "mpx/nn/token_type_embedding.hpp"
#include "mpx/nn/upsample.hpp"
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

  /// @brief `nn::Conv2d<P, Device>(in_channels, out_channels, kernel_size, options)`: a convolution
  /// over channels-last images (`L::conv2d(64, 128, 3, {.stride = 2, .padding = 1, .bias = false})`).
  /// (`options` by reference: `Conv2d`'s constructor says why.)
  [[nodiscard]] static Conv2d<P, Device> conv2d(std::int64_t in_channels, std::int64_t out_channels,
                                                Size2d kernel_size, const Conv2dOptions& options = {}) {
    return Conv2d<P, Device>(in_channels, out_channels, kernel_size, options);
  }

  /// @brief `nn::BatchNorm2d<P, Device>(num_features, options)`: per-channel batch normalisation of
  /// channels-last images, statistics and parameters in fp32.
  [[nodiscard]] static BatchNorm2d<P, Device> batch_norm2d(std::int64_t num_features,
                                                           BatchNormOptions options = {}) {
    return BatchNorm2d<P, Device>(num_features, options);
  }

  /// @brief `nn::GroupNorm<P, Device>(num_groups, num_channels, epsilon)`: per image and group of
  /// channels, statistics and parameters in fp32 (epsilon `GroupNorm::default_epsilon`, 1e-5).
  [[nodiscard]] static GroupNorm<P, Device> group_norm(
      std::int64_t num_groups, std::int64_t num_channels,
      float epsilon = GroupNorm<P, Device>::default_epsilon) {
    return GroupNorm<P, Device>(num_groups, num_channels, epsilon);
  }
  /// @brief y = x + (e W^T + b) at every position of each sample, e [N, embedding_dim] being the
  /// time embedding of the `TimeConditioned` model it sits in (a diffusion UNet's residual blocks).
  [[nodiscard]] static AddTimeEmbedding<P, Device> add_time_embedding(std::int64_t embedding_dim,
                                                                      std::int64_t channels) {
    return AddTimeEmbedding<P, Device>(embedding_dim, channels);
  }
  /// @brief `nn::Upsample<P, Device>(scale_factor)`: nearest-neighbour upsampling (2 when left out).
  [[nodiscard]] static Upsample<P, Device> upsample(Size2d scale_factor = 2) {
    return Upsample<P, Device>(scale_factor);
  }

  /// @brief `nn::MaxPool2d<P, Device>(kernel_size, options)` (stride the kernel size unless given).
  /// (`options` by reference here and in `avg_pool2d`, as in `conv2d`: `Conv2d`'s constructor says why.)
  [[nodiscard]] static MaxPool2d<P, Device> max_pool2d(Size2d kernel_size,
                                                       const Pool2dOptions& options = {}) {
    return MaxPool2d<P, Device>(kernel_size, options);
  }
  /// @brief `nn::AvgPool2d<P, Device>(kernel_size, options)` (stride the kernel size unless given).
  [[nodiscard]] static AvgPool2d<P, Device> avg_pool2d(Size2d kernel_size,
                                                       const Pool2dOptions& options = {}) {
    return AvgPool2d<P, Device>(kernel_size, options);
  }
  /// @brief `nn::GlobalAvgPool2d<P, Device>()`: [N, H, W, C] to [N, C].
  [[nodiscard]] static GlobalAvgPool2d<P, Device> global_avg_pool2d() { return {}; }
  /// @brief `nn::Flatten<P, Device>()`: [N, ...] to [N, the rest's product].
  [[nodiscard]] static Flatten<P, Device> flatten() { return {}; }
  /// @brief `nn::FirstToken<P, Device>()`: each sequence's first token, [N, T, C] to [N, C] (an
  /// encoder's [CLS] token, for its classification head).
  [[nodiscard]] static FirstToken<P, Device> first_token() { return {}; }
  /// @brief `nn::GatherTokens<P, Device>()`: the tokens chosen by the `nn::PaddedSequences` model
  /// around it, [N, T, C] to [M, C] (a masked-language model's masked tokens, before its head).
  [[nodiscard]] static GatherTokens<P, Device> gather_tokens() { return {}; }

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

  /// @brief `nn::TokenTypeEmbedding<P, Device>(num_types, embedding_dim, options)`: a learned row per
  /// token type (BERT's segment ids, from the `nn::PaddedSequences` model around it) added to
  /// [batch, sequence, embedding_dim] activations.
  [[nodiscard]] static TokenTypeEmbedding<P, Device> token_type_embedding(
      std::int64_t num_types, std::int64_t embedding_dim, TokenTypeEmbeddingOptions options = {}) {
    return TokenTypeEmbedding<P, Device>(num_types, embedding_dim, options);
  }

  /// @brief `nn::CausalSelfAttention<P, Device>(embed_dim, num_heads, options)`: GPT-2's attention
  /// block (fused qkv projection, causal softmax, output projection).
  [[nodiscard]] static CausalSelfAttention<P, Device> causal_self_attention(
      std::int64_t embed_dim, std::int64_t num_heads,
      typename CausalSelfAttention<P, Device>::Options options = {}) {
    return CausalSelfAttention<P, Device>(embed_dim, num_heads, options);
  }
  /// @brief `nn::SelfAttention<P, Device>(embed_dim, num_heads, options)`: bidirectional attention
  /// (every position attends to every other) over [batch, sequence, embed_dim], or over the pixels of
  /// a channels-last image [N, H, W, embed_dim] (a diffusion UNet's attention block).
  [[nodiscard]] static SelfAttention<P, Device> self_attention(
      std::int64_t embed_dim, std::int64_t num_heads,
      typename SelfAttention<P, Device>::Options options = {}) {
    return SelfAttention<P, Device>(embed_dim, num_heads, options);
  }
  /// @brief `nn::PaddedSelfAttention<P, Device>(embed_dim, num_heads, options)`: bidirectional
  /// attention over padded sequences [batch, sequence, embed_dim], each attending to its first
  /// `length` positions (an encoder's key-padding mask; the lengths come from the
  /// `nn::PaddedSequences` model around it).
  [[nodiscard]] static PaddedSelfAttention<P, Device> padded_self_attention(
      std::int64_t embed_dim, std::int64_t num_heads,
      typename PaddedSelfAttention<P, Device>::Options options = {}) {
    return PaddedSelfAttention<P, Device>(embed_dim, num_heads, options);
  }

  /// @brief `nn::Dropout<P, Device>(p)`: drops each element with probability p in training.
  [[nodiscard]] static Dropout<P, Device> dropout(float p) { return Dropout<P, Device>(p); }

  /// @brief `nn::ReLU<P, Device>()`: a standalone ReLU (after a BatchNorm2d, say); a `Linear` fuses
  /// its own with `mpx::nn::relu`.
  [[nodiscard]] static ReLU<P, Device> relu() { return {}; }
  /// @brief `nn::GELU<P, Device>()`: a standalone GELU (tanh form).
  [[nodiscard]] static GELU<P, Device> gelu() { return {}; }
  /// @brief `nn::SiLU<P, Device>()`: x sigmoid(x), the activation of diffusion UNets.
  [[nodiscard]] static SiLU<P, Device> silu() { return {}; }

  /// @brief `nn::SoftmaxCrossEntropy<P, Device>(options)`: the loss for logits made in `P`.
  [[nodiscard]] static SoftmaxCrossEntropy<P, Device> softmax_cross_entropy(
      typename SoftmaxCrossEntropy<P, Device>::Options options = {}) {
    return SoftmaxCrossEntropy<P, Device>(options);
  }

  /// @brief `nn::MSELoss<P, Device>()`: the loss for predictions made in `P`.
  [[nodiscard]] static MSELoss<P, Device> mse_loss() { return MSELoss<P, Device>(); }
};

}  // namespace mpx::nn
