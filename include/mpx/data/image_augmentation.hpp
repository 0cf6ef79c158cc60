// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `ImageAugmentation`: random crop with padding and horizontal flip of channels-last images,
/// drawn deterministically from (seed, epoch, sample).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mpx/error.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/shape.hpp"

namespace mpx::data {

/// @brief The training-time augmentation of CIFAR-style ResNets, for `[H, W, C]` (channels-last)
/// images: torchvision's `RandomCrop((H, W), padding=crop_padding, fill=padding_value)` followed by
/// `RandomHorizontalFlip(p=0.5)`. Off by default; `Batcher::Options::augmentation` applies it to
/// every sample it deals.
///
/// What one sample becomes, with p = `crop_padding`, given a `Draw` {top, left, flip}:
/// - padded[i][j] = image[i - p][j - p] where 0 <= i - p < H and 0 <= j - p < W, else
///   `padding_value` (an `(H + 2p) x (W + 2p)` image; the value is in the dataset's units, i.e.
///   after normalisation: 0 is the mean pixel of a standardised set, not black);
/// - cropped[y][x] = padded[top + y][left + x] for y < H, x < W, with top, left in [0, 2p];
/// - out[y][x] = cropped[y][W - 1 - x] if flip, else cropped[y][x];
/// and all C channels of a pixel move together. With p = 0 the crop is the identity.
///
/// The draws are counter-based (`mpx::random_bits`, Philox4x32-10), a pure function of the batcher's
/// seed, the epoch and the sample's index in the dataset, never of the batch, the position in the
/// epoch, the shard or the thread: a sample is augmented the same way on every machine, under every
/// data-parallel split and when a run resumes mid-epoch. With stream = 2^63 | epoch (the shuffle
/// uses stream = epoch, so the two never share words for epochs below 2^63) and
/// w_k = random_bits(seed, stream, 4 * sample + k):
/// - top  = (uint64(w_0) * (2p + 1)) >> 32,
/// - left = (uint64(w_1) * (2p + 1)) >> 32,
/// - flip = horizontal_flip && (w_2 >> 31) == 1.
/// Each draw uses one fixed word (no rejection), so turning one transform on or off leaves the other's
/// draws unchanged. The offsets are uniform up to a bias below (2p + 1) / 2^32 (about 2e-9 for p = 4).
struct ImageAugmentation {
  /// @brief Pixels of padding on each side before the random crop back to H x W; 0: no crop.
  std::int64_t crop_padding = 0;
  /// @brief Value of the padded pixels, in the dataset's (normalised) units, every channel.
  float padding_value = 0.0f;
  /// @brief Mirror left to right with probability 1/2, after the crop.
  bool horizontal_flip = false;

  /// @brief Whether any transform is on (`crop_padding > 0 || horizontal_flip`).
  [[nodiscard]] constexpr bool enabled() const noexcept { return crop_padding > 0 || horizontal_flip; }

  /// @brief Throws `mpx::invalid_argument`, its message starting with `where`, unless
  /// 0 <= `crop_padding` < 2^31, `padding_value` is finite and, when `enabled()`, `sample_shape` is
  /// `[H, W, C]` (rank 3).
  void validate(const char* where, const Shape& sample_shape) const {
    if (crop_padding < 0 || crop_padding >= (std::int64_t{1} << 31)) {
      throw invalid_argument(mpx::detail::concat(where, ": augmentation.crop_padding = ", crop_padding,
                                                 " is invalid; expected 0 <= crop_padding < 2^31"));
    }
    if (!std::isfinite(padding_value)) {
      throw invalid_argument(mpx::detail::concat(where, ": augmentation.padding_value = ", padding_value,
                                                 " is invalid; expected a finite value"));
    }
    if (enabled() && sample_shape.rank() != 3) {
      throw invalid_argument(mpx::detail::concat(
          where, ": augmentation (crop_padding = ", crop_padding,
          ", horizontal_flip = ", horizontal_flip ? "true" : "false",
          ") needs images of shape [H, W, C], but the samples have shape ", sample_shape,
          "; give the dataset its image shape with Dataset::set_sample_shape (e.g. Shape{28, 28, 1})"));
    }
  }

  /// @brief Where one sample is cropped from and whether it is mirrored.
  struct Draw {
    std::int64_t top = 0;   ///< first row of the crop in the padded image, in [0, 2 crop_padding]
    std::int64_t left = 0;  ///< first column of the crop in the padded image, in [0, 2 crop_padding]
    bool flip = false;      ///< mirrored left to right after the crop
  };

  /// @brief The draw of dataset sample `sample` in `epoch` under `seed`, as the class comment states.
  [[nodiscard]] Draw draw(std::uint64_t seed, std::uint64_t epoch, std::int64_t sample) const noexcept {
    const std::uint64_t stream = (std::uint64_t{1} << 63) | epoch;
    const auto index = 4 * static_cast<std::uint64_t>(sample);
    // Multiply-shift without rejection: each value of [0, 2p] is hit by floor or ceil of 2^32 / (2p + 1)
    // words, a relative bias below (2p + 1) / 2^32, and every sample reads the same fixed words.
    const auto choices = static_cast<std::uint64_t>(2 * crop_padding + 1);
    Draw result;
    result.top = static_cast<std::int64_t>((std::uint64_t{random_bits(seed, stream, index)} * choices) >> 32);
    result.left =
        static_cast<std::int64_t>((std::uint64_t{random_bits(seed, stream, index + 1)} * choices) >> 32);
    result.flip = horizontal_flip && (random_bits(seed, stream, index + 2) >> 31) != 0;
    return result;
  }

  /// @brief Writes the H * W * C values of `image` (`[H, W, C]`, fp32) cropped and flipped as
  /// `draw` says into `out`, rounding to nearest into `T` (as `Batcher::next` does). Unchecked:
  /// `sample_shape` must be rank 3 and `draw` within [0, 2 crop_padding] (from `this->draw`).
  template <FloatingElement T>
  void apply(const float* image, const Shape& sample_shape, const Draw& draw, T* out) const {
    const std::int64_t height = sample_shape[0];
    const std::int64_t width = sample_shape[1];
    const std::int64_t channels = sample_shape[2];
    const std::int64_t row = width * channels;
    const T fill = convert<T>(padding_value);
    // Cropped column x reads image column x + shift; the columns inside the image are [begin, end).
    const std::int64_t shift = draw.left - crop_padding;
    const std::int64_t begin = std::clamp<std::int64_t>(-shift, 0, width);
    const std::int64_t end = std::clamp<std::int64_t>(width - shift, begin, width);
    for (std::int64_t y = 0; y < height; ++y) {
      T* to = out + y * row;
      const std::int64_t source_y = y + draw.top - crop_padding;
      if (source_y < 0 || source_y >= height || begin == end) {
        std::fill(to, to + row, fill);
        continue;
      }
      const float* from = image + source_y * row;
      if (!draw.flip) {
        std::fill(to, to + begin * channels, fill);
        convert_range(from + (begin + shift) * channels, (end - begin) * channels, to + begin * channels);
        std::fill(to + end * channels, to + row, fill);
      } else {
        // Output column x shows cropped column width - 1 - x: inside for x in [width - end, width - begin).
        std::fill(to, to + (width - end) * channels, fill);
        for (std::int64_t x = width - end; x < width - begin; ++x) {
          const float* pixel = from + (width - 1 - x + shift) * channels;
          for (std::int64_t c = 0; c < channels; ++c) to[x * channels + c] = convert<T>(pixel[c]);
        }
        std::fill(to + (width - begin) * channels, to + row, fill);
      }
    }
  }

 private:
  template <FloatingElement T>
  [[nodiscard]] static T convert(float value) {
    if constexpr (std::is_same_v<T, float>) {
      return value;
    } else {
      return round_to<tag_of_t<T>>(value);
    }
  }

  template <FloatingElement T>
  static void convert_range(const float* from, std::int64_t count, T* to) {
    if constexpr (std::is_same_v<T, float>) {
      if (count > 0) std::memcpy(to, from, static_cast<std::size_t>(count) * sizeof(float));
    } else {
      for (std::int64_t i = 0; i < count; ++i) to[i] = round_to<tag_of_t<T>>(from[i]);
    }
  }
};

}  // namespace mpx::data
