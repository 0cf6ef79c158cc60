// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief FP8 scaling recipes as types (`DelayedScaling`, `CurrentScaling`) and the arithmetic that
/// turns an amax into a scale, transcribed from Transformer Engine so that a scale computed here is
/// the bits TE computes: `update_delayed_scale` is one tensor of TE's
/// `amax_and_scale_update_after_reduction` (transformer_engine/common/recipe/delayed_scaling.cu),
/// `current_scale` is TE's `compute_scale_from_amax` (recipe_common.cuh). Both run on the host and,
/// unchanged, on the device.
///
/// A scale multiplies a tensor before its cast to FP8, so that its amax lands near the format's
/// largest value; the GEMM multiplies its result by the operands' inverse scales.

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#include "mpx/config.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief How delayed scaling reduces an amax history to the amax a scale is computed from (TE's
/// `amax_compute_algo`).
enum class AmaxAlgorithm {
  Max,         ///< the largest amax in the window ("max", TE's default)
  MostRecent,  ///< the amax of the step just finished ("most_recent")
};

/// @brief Delayed scaling (TE's `DelayedScaling`): each FP8 tensor's scale comes from the amaxes of
/// earlier steps, so the cast needs one read of the tensor. After each step the tensor's amax history
/// rolls and scale = (fp8_max * 2^-margin) / amax, with amax from the history by `Algorithm`; an amax
/// of 0, infinity or NaN keeps the previous scale, and a scale that overflows fp32 becomes FLT_MAX.
/// @tparam History  amaxes kept per tensor (TE's `amax_history_len`, default 1024)
/// @tparam Algorithm how the history gives the amax (`AmaxAlgorithm::Max` by default)
/// @tparam Margin   the scale is divided by 2^Margin, leaving headroom (TE's `margin`, default 0)
template <std::size_t History = 1024, AmaxAlgorithm Algorithm = AmaxAlgorithm::Max, int Margin = 0>
struct DelayedScaling {
  static_assert(History >= 1, "mpx::DelayedScaling<History>: the amax history needs at least one entry");
  static constexpr std::size_t history_length = History;      ///< amaxes kept per tensor
  static constexpr AmaxAlgorithm amax_algorithm = Algorithm;  ///< how the history gives the amax
  static constexpr int margin = Margin;                       ///< the scale's headroom, a power of two
  static constexpr std::string_view name = "delayed";         ///< name in records
};

/// @brief Current scaling (TE's `Float8CurrentScaling`): each FP8 tensor's scale comes from its own
/// amax, read just before the cast: scale = fp8_max / max(amax, AmaxEpsilon), 1 when that amax is 0
/// or infinite, FLT_MAX when the quotient overflows, optionally truncated to a power of two.
/// @tparam PowerOfTwoScales round each scale down to a power of two (TE's `force_pow_2_scales`)
/// @tparam AmaxEpsilon     the smallest amax a scale is computed from (TE's `amax_epsilon`, 0)
template <bool PowerOfTwoScales = false, float AmaxEpsilon = 0.0f>
struct CurrentScaling {
  static_assert(AmaxEpsilon >= 0.0f, "mpx::CurrentScaling<..., AmaxEpsilon>: the epsilon must be >= 0");
  static constexpr bool power_of_two_scales = PowerOfTwoScales;  ///< scales rounded down to 2^k
  static constexpr float amax_epsilon = AmaxEpsilon;             ///< the smallest amax used
  static constexpr std::string_view name = "current";            ///< name in records
};

/// @brief `numeric_traits<Tag>::max_finite` times 2^-margin, in fp32 (TE's `scaled_max`): the value a
/// tensor's amax is scaled to under delayed scaling.
template <NumericTag Tag>
[[nodiscard]] inline float scaled_max(int margin) {
  return static_cast<float>(numeric_traits<Tag>::max_finite) * std::pow(2.0f, static_cast<float>(-margin));
}

/// @brief One tensor's delayed-scaling update after a step, in place. `history[0 .. length)`
/// (elements `stride` apart) holds the amaxes, newest first, with history[0] the amax of the step just
/// finished (under data parallel, the maximum over ranks). Then, as TE:
/// - when history[0] is 0 (the tensor was not cast this step), nothing rolls and the scale stays;
/// - otherwise the history rolls: entry i takes entry i + 1, the last takes history[0], and
///   history[0] becomes 0, ready for the next step's amax; amax is the largest of the rolled
///   entries and the old history[0] (`Max`; NaNs are passed over, as `fmaxf` does) or the old
///   history[0] itself (`MostRecent`);
/// - a finite positive amax gives scale = scaled_max / amax (one fp32 division, rounded to nearest);
///   any other keeps `scale`; an infinite scale becomes FLT_MAX; scale_inverse = 1 / scale.
MPX_HOST_DEVICE inline void update_delayed_scale(float* history, std::size_t length, std::size_t stride,
                                                 AmaxAlgorithm algorithm, float scaled_max, float& scale,
                                                 float& scale_inverse) {
  const float last = history[0];
  float amax = 0.0f;
  if (last != 0.0f) {
    for (std::size_t i = 0; i < length; ++i) {
      const float rolled = i + 1 < length ? history[(i + 1) * stride] : last;
      amax = fmaxf(amax, rolled);
      history[i * stride] = i > 0 ? rolled : 0.0f;
    }
    if (algorithm == AmaxAlgorithm::MostRecent) amax = last;
  }
  float updated = std::isfinite(amax) && amax > 0.0f ? scaled_max / amax : scale;
  if (std::isinf(updated)) updated = std::numeric_limits<float>::max();
  scale = updated;
  scale_inverse = 1.0f / updated;
}

/// @brief The current-scaling scale of a tensor whose amax is `amax`, for a format whose largest value
/// is `fp8_max` (TE's `compute_scale_from_amax`): amax below `epsilon` is raised to it; then 0 or an
/// infinite amax gives 1, otherwise fp8_max / amax rounded to nearest, FLT_MAX where that overflows,
/// 1 where it is NaN, and, with `power_of_two`, its mantissa cleared (the power of two at or below).
MPX_HOST_DEVICE inline float current_scale(float amax, float fp8_max, bool power_of_two, float epsilon) {
  if (amax < epsilon) amax = epsilon;
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  float scale = fp8_max / amax;
  if (std::isinf(scale)) scale = std::numeric_limits<float>::max();
  if (std::isnan(scale)) scale = 1.0f;
  if (power_of_two) scale = std::bit_cast<float>(std::bit_cast<std::uint32_t>(scale) & 0xff800000u);
  return scale;
}

}  // namespace mpx
