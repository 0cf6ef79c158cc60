// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The diffusion UNet of the examples, tests and benchmarks: a noise predictor for 28 x 28 x 1
/// images (channels-last), conditioned on the timestep, written as nested types (`nn::Concat` for the
/// skips, `nn::Residual` for the blocks, `nn::TimeConditioned` around it all) so that all three
/// measure one network.

#include <cstdint>

#include "mpx/nn/concat.hpp"
#include "mpx/nn/layers.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"
#include "mpx/nn/time_conditioned.hpp"

namespace mpx::experiment {

/// @brief The groups of every GroupNorm of the UNet (channel counts must be multiples of it).
inline constexpr std::int64_t unet_groups = 8;

// [blocks]
/// @brief A residual block's body, as diffusers' `ResnetBlock2D` (pre-activation): GroupNorm - SiLU -
/// conv 3x3 - plus the projected time embedding - GroupNorm - SiLU - conv 3x3.
template <PrecisionPolicy P, class Device = Host>
auto unet_block_body(std::int64_t in, std::int64_t out, std::int64_t embedding) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{L::group_norm(unet_groups, in),        L::silu(),
                        L::conv2d(in, out, 3, {.padding = 1}), L::add_time_embedding(embedding, out),
                        L::group_norm(unet_groups, out),       L::silu(),
                        L::conv2d(out, out, 3, {.padding = 1})};
}

/// @brief A residual block that keeps its channels: x + body(x).
template <PrecisionPolicy P, class Device = Host>
auto unet_block(std::int64_t channels, std::int64_t embedding) {
  return nn::Residual{unet_block_body<P, Device>(channels, channels, embedding)};
}

/// @brief Self-attention over the pixels with a residual connection: x + attention(GroupNorm(x)),
/// one head over every pixel of the image (bidirectional), as DDPM's attention blocks.
template <PrecisionPolicy P, class Device = Host>
auto unet_attention(std::int64_t channels) {
  using L = nn::layers<P, Device>;
  return nn::Residual{nn::Sequential{L::group_norm(unet_groups, channels), L::self_attention(channels, 1)}};
}

/// @brief A residual block from `in` to `out` channels: a 1 x 1 convolution on the shortcut.
template <PrecisionPolicy P, class Device = Host>
auto unet_projected_block(std::int64_t in, std::int64_t out, std::int64_t embedding) {
  using L = nn::layers<P, Device>;
  return nn::Residual{unet_block_body<P, Device>(in, out, embedding), L::conv2d(in, out, 1)};
}
// [blocks]

// [unet]
/// @brief The noise predictor: eps_hat(x_t, t) for x_t [N, 28, 28, 1]. With c base channels and an
/// embedding of 4c: a 3 x 3 stem to c channels at 28 x 28 and a block; a strided convolution to
/// 14 x 14 and a block to 2c; another to 7 x 7, a block and self-attention over the 49 pixels there;
/// then back up, each level
/// concatenating its input beside the level below's upsampled output (`nn::Concat`) and mixing
/// them with a block; GroupNorm - SiLU - conv 3x3 to one channel. The timesteps' sinusoidal
/// features (c of them) go through Linear - SiLU - Linear - SiLU to the embedding every block adds.
/// @tparam P the precision of every layer; @tparam Device `Host` or `Cuda`.
/// @param c the base channel count (a multiple of `unet_groups`)
template <PrecisionPolicy P, class Device = Host>
auto unet(std::int64_t c) {
  using L = nn::layers<P, Device>;
  const std::int64_t embedding = 4 * c;
  auto lowest = nn::Sequential{L::conv2d(2 * c, 2 * c, 3, {.stride = 2, .padding = 1}),  // 7 x 7
                               unet_block<P, Device>(2 * c, embedding), unet_attention<P, Device>(2 * c),
                               L::upsample(2), L::conv2d(2 * c, 2 * c, 3, {.padding = 1})};
  auto middle = nn::Sequential{L::conv2d(c, c, 3, {.stride = 2, .padding = 1}),  // 14 x 14
                               unet_projected_block<P, Device>(c, 2 * c, embedding),
                               nn::Concat{std::move(lowest)},
                               unet_projected_block<P, Device>(4 * c, 2 * c, embedding),
                               L::upsample(2),
                               L::conv2d(2 * c, c, 3, {.padding = 1})};
  auto body = nn::Sequential{L::conv2d(1, c, 3, {.padding = 1}),  // 28 x 28
                             unet_block<P, Device>(c, embedding),
                             nn::Concat{std::move(middle)},
                             unet_projected_block<P, Device>(2 * c, c, embedding),
                             L::group_norm(unet_groups, c),
                             L::silu(),
                             L::conv2d(c, 1, 3, {.padding = 1})};
  return nn::TimeConditioned{
      nn::TimestepFeatures{.dim = c},
      nn::Sequential{L::linear(c, embedding), L::silu(), L::linear(embedding, embedding), L::silu()},
      std::move(body)};
}
// [unet]

}  // namespace mpx::experiment
