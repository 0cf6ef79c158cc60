// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief The small ResNet of the examples, tests and benchmarks (ResNet-8 for 28 x 28 x 1 images,
/// channels-last), built from `nn::` layers so that all three measure the same network.

#include <cstdint>

#include "mpx/nn/layers.hpp"
#include "mpx/nn/residual.hpp"
#include "mpx/nn/sequential.hpp"

namespace mpx::experiment {

// [blocks]
/// @brief A basic block's body: conv 3x3 - BatchNorm - ReLU - conv 3x3 - BatchNorm; the first convolution
/// takes the stride. The convolutions have no bias: the BatchNorm after each adds its own (beta).
template <PrecisionPolicy P, class Device = Host>
auto basic_block(std::int64_t in, std::int64_t out, std::int64_t stride) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{L::conv2d(in, out, 3, {.stride = stride, .padding = 1, .bias = false}),
                        L::batch_norm2d(out), L::relu(),
                        L::conv2d(out, out, 3, {.padding = 1, .bias = false}), L::batch_norm2d(out)};
}

/// @brief A block that halves the image and doubles the channels: its shortcut is a projection, a strided
/// 1 x 1 convolution and a BatchNorm, so that both paths give one shape.
template <PrecisionPolicy P, class Device = Host>
auto downsampling_block(std::int64_t in, std::int64_t out) {
  using L = nn::layers<P, Device>;
  return nn::Residual{
      basic_block<P, Device>(in, out, 2),
      nn::Sequential{L::conv2d(in, out, 1, {.stride = 2, .bias = false}), L::batch_norm2d(out)}};
}
// [blocks]

// [resnet]
/// @brief ResNet-8 for [N, 28, 28, 1] images: a stem (conv 3x3, 1 -> c channels, BatchNorm, ReLU at
/// 28 x 28), then three stages of one downsampling block each (2c, 4c and 8c channels at 14, 7 and
/// 4 pixels), ReLU after each block's sum, global average pooling and a linear classifier; every
/// layer in precision P. Each stage halves the image first: in 5-epoch fp32 runs this reached 0.7-0.9
/// points more test accuracy than stages at 28, 14 and 7 pixels with c, 2c and 4c channels, in about
/// the same time (docs/cnn.md). A `Sequential`'s layers are fixed at compile time: a deeper network adds
/// `Residual{basic_block(...)}` and ReLU lines after a stage's first block.
template <PrecisionPolicy P, class Device = Host>
auto resnet(std::int64_t c, std::int64_t classes) {
  using L = nn::layers<P, Device>;
  return nn::Sequential{L::conv2d(1, c, 3, {.padding = 1, .bias = false}),
                        L::batch_norm2d(c),
                        L::relu(),
                        downsampling_block<P, Device>(c, 2 * c),
                        L::relu(),
                        downsampling_block<P, Device>(2 * c, 4 * c),
                        L::relu(),
                        downsampling_block<P, Device>(4 * c, 8 * c),
                        L::relu(),
                        L::global_avg_pool2d(),
                        L::linear(8 * c, classes)};
}
// [resnet]

}  // namespace mpx::experiment
