// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What a cast into an FP8 format does to a tensor's values, counted (the diagnostics FP8
/// users ask for): how many values it cast, how many saturated, how many flushed to zero, and the
/// largest magnitude among them. Shared by the CPU and CUDA backends' `accumulate_fp8_statistics`,
/// so that both count by the same rule.
///
/// With v = x * scale rounded to fp32, as the cast computes it:
/// - a value *saturates* when |v| > the format's largest finite value (infinities included): the
///   saturating cast clamps it to +-max, so its magnitude is lost;
/// - a value *flushes* when x != 0 and |v| <= half the format's smallest subnormal (ties round to
///   even, and zero is even): its code is +-0, so it is lost entirely;
/// - NaNs count as cast values and neither saturate nor flush.

#include "mpx/config.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief The fields of one tensor's statistics, in this order; each is a `double` in the device's
/// memory (counts exact to 2^53). Accumulating adds the counts and takes the maximum of the amaxes.
enum class Fp8StatisticsField : int {
  Values = 0,     ///< elements cast
  Saturated = 1,  ///< of them, |x * scale| above the format's largest finite value
  Flushed = 2,    ///< of them, x nonzero and x * scale rounding to zero
  Amax = 3,       ///< the largest |x| (NaNs passed over)
};

/// @brief Doubles per tensor: one per `Fp8StatisticsField`.
inline constexpr int fp8_statistics_fields = 4;

/// @brief The magnitudes of x * scale beyond which `Format`'s cast saturates, and at or below which
/// it flushes to zero.
template <NumericTag Format>
struct Fp8RangeLimits {
  static_assert(numeric_traits<Format>::has_subnormals,
                "mpx::Fp8RangeLimits<Format>: flushing is counted against the smallest subnormal; a "
                "format without subnormals has no such statistics rule yet");
  /// @brief |v| above it saturates: the largest finite value.
  static constexpr float saturates_above = static_cast<float>(numeric_traits<Format>::max_finite);
  /// @brief |v| at or below it (x nonzero) flushes: half the smallest subnormal.
  static constexpr float flushes_at_or_below = static_cast<float>(min_positive_v<Format>) / 2;
};

}  // namespace mpx
