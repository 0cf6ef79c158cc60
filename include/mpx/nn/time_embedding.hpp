// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a diffusion model's timestep conditioning shares between its parts: the sinusoidal
/// features of the timesteps (`timestep_features`), and the slot through which the layers inside a
/// `nn::TimeConditioned` model read the time embedding and return its gradient
/// (`TimeEmbeddingSlot`).

#include <cmath>
#include <cstdint>
#include <numbers>
#include <span>

#include "mpx/error.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::nn {

/// @brief The sinusoidal features of a timestep, as diffusers' `get_timestep_embedding` computes
/// them for `UNet2DModel` (`flip_sin_to_cos=True`, `downscale_freq_shift=0`): with half = dim / 2
/// and frequencies f_i = max_period^(-i / half) for i < half,
///   features[i] = cos(t f_i),   features[half + i] = sin(t f_i).
/// (Ho et al.'s DDPM put the sines first and divided by half - 1.)
struct TimestepFeatures {
  std::int64_t dim = 64;        ///< features per timestep; even
  double max_period = 10000.0;  ///< the longest period, 2 pi max_period, of the lowest frequency
};

/// @brief The features of each timestep (the row for `timesteps[n]` at row n of `features`
/// [timesteps.size(), spec.dim]), computed in double and rounded once into T (PyTorch computes them
/// in fp32, so the two differ in the last bit of fp32 at most, up to its sin/cos).
/// @param timesteps diffusion steps (integers as floats, or any real t)
/// @param spec the features' width and longest period
/// @param features [timesteps.size(), spec.dim] on the host
/// @throws mpx::invalid_argument for an odd or non-positive width; mpx::shape_error for a
///         `features` of another shape.
template <FloatingElement T>
void timestep_features(std::span<const float> timesteps, const TimestepFeatures& spec,
                       Tensor<T, Host>& features) {
  if (spec.dim <= 0 || spec.dim % 2 != 0 || !(spec.max_period > 0.0)) {
    throw invalid_argument(
        mpx::detail::concat("mpx::nn::timestep_features: dim must be even and positive and ",
                            "max_period positive, got dim = ", spec.dim, ", max_period = ", spec.max_period));
  }
  const auto count = static_cast<std::int64_t>(timesteps.size());
  require_shape("mpx::nn::timestep_features", "features", features.shape(), Shape{count, spec.dim});
  const std::int64_t half = spec.dim / 2;
  for (std::int64_t n = 0; n < count; ++n) {
    const double t = timesteps[static_cast<std::size_t>(n)];
    T* row = features.data() + n * spec.dim;
    for (std::int64_t i = 0; i < half; ++i) {
      const double frequency =
          std::exp(-std::log(spec.max_period) * static_cast<double>(i) / static_cast<double>(half));
      row[i] = round_to<tag_of_t<T>>(static_cast<accumulate_t<T>>(std::cos(t * frequency)));
      row[half + i] = round_to<tag_of_t<T>>(static_cast<accumulate_t<T>>(std::sin(t * frequency)));
    }
  }
}

/// @brief Where a `nn::TimeConditioned` model's time embedding [N, E] and its gradient meet the
/// layers that read it (`nn::AddTimeEmbedding`): the container sets `embedding` before its body's
/// forward; each reading layer adds its share of the gradient into `gradient` in its backward
/// (`Backend::add`: in the compute type, rounded at each add, as PyTorch's autograd sums the
/// gradients of a tensor that several layers read); `gradient_started` says whether any has.
/// @tparam T the embedding's element type (the compute type); @tparam Device `Host` or `Cuda`.
template <class T, class Device>
struct TimeEmbeddingSlot {
  const Tensor<T, Device>* embedding = nullptr;  ///< [N, E]; null before the container's forward
  Tensor<T, Device> gradient;                    ///< dL/d(embedding), [N, E]
  bool gradient_started = false;                 ///< whether `gradient` holds a sum yet this backward
};

}  // namespace mpx::nn
