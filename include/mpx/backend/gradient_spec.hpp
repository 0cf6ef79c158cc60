// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the gradient passes of both backends (`unscale_and_inspect`) share: what one pass over
/// a gradient found (`GradientStats`), and the check and conversion of the number of micro-batches a
/// step's gradients are the sum of.

#include <cstdint>

#include "mpx/error.hpp"

namespace mpx {

/// @brief What one pass over a gradient found.
struct GradientStats {
  double sum_of_squares = 0.0;  ///< of the (unscaled) values; inf or NaN when any value is
  bool finite = true;           ///< every value finite

  /// @brief Combines the statistics of two parts of a gradient.
  friend GradientStats operator+(const GradientStats& a, const GradientStats& b) noexcept {
    return {a.sum_of_squares + b.sum_of_squares, a.finite && b.finite};
  }
};

/// @brief `micro_batches` as the gradients' element type `G`, which holds every count up to 2^24
/// exactly; throws `mpx::invalid_argument` naming `where` for a count below 1 or above that.
template <class G>
[[nodiscard]] G micro_batches_divisor(const char* where, std::int64_t micro_batches) {
  if (micro_batches < 1 || micro_batches > (std::int64_t{1} << 24)) {
    throw invalid_argument(
        mpx::detail::concat(where, ": ", micro_batches, " micro-batches; expected a count in [1, 2^24]"));
  }
  return static_cast<G>(micro_batches);
}

}  // namespace mpx
