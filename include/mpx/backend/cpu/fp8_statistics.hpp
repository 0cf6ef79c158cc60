// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `cpu::accumulate_fp8_statistics`: what a cast into an FP8 format does to a tensor's values,
/// counted by the rule of backend/fp8_statistics_spec.hpp. A pass of its own, run only when a layer
/// collects statistics, so that the casts themselves stay as fast without them.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/fp8_cast.hpp"  // detail::largest_magnitude
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/fp8_statistics_spec.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

namespace detail {
// One chunk's counts; integers, so that their sum does not depend on the chunking.
struct Fp8RangeCounts {
  std::int64_t saturated = 0, flushed = 0;
  float amax = 0.0f;
};
// How many of values[i] * factor (i < count) saturate and how many flush in Format's cast. A
// function of its own, branch-free and in integers, so that its loop vectorises.
template <NumericTag Format>
std::pair<std::int32_t, std::int32_t> count_out_of_range(const float* values, std::int64_t count,
                                                         float factor) {
  using Limits = Fp8RangeLimits<Format>;
  std::int32_t saturated = 0, flushed = 0;
#ifdef _OPENMP
#pragma omp simd reduction(+ : saturated, flushed)
#endif
  for (std::int64_t i = 0; i < count; ++i) {
    const float scaled = std::fabs(values[i] * factor);
    saturated += static_cast<std::int32_t>(scaled > Limits::saturates_above);
    flushed += static_cast<std::int32_t>((values[i] != 0.0f) & (scaled <= Limits::flushes_at_or_below));
  }
  return {saturated, flushed};
}
}  // namespace detail

/// @brief Adds to `statistics` (`fp8_statistics_fields` doubles, in `Fp8StatisticsField` order) what
/// casting `x` into `Format` with `*scale` does: values cast, saturated, flushed, and the largest |x|.
/// @param x          the tensor the cast reads (fp32, bf16, fp16)
/// @param scale      a float in the device's memory: the scale the cast multiplies by
/// @param statistics doubles in the device's memory, accumulated into
template <NumericTag Format, FloatingElement S>
void accumulate_fp8_statistics(const Tensor<S, Host>& x, const float* scale, double* statistics) {
  const float factor = *scale;
  const S* in = x.data();
  const std::int64_t count = x.numel();
  const std::int64_t chunks = (count + parallel_grain - 1) / parallel_grain;
  std::vector<detail::Fp8RangeCounts> partial(static_cast<std::size_t>(chunks));
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    float widened[detail::conversion_block];
    detail::Fp8RangeCounts counts;
    for (std::int64_t first = begin; first < end; first += detail::conversion_block) {
      const std::int64_t length = std::min(detail::conversion_block, end - first);
      detail::widen_range<tag_of_t<S>>(in + first, widened, 0, length);
      const auto [saturated, flushed] = detail::count_out_of_range<Format>(widened, length, factor);
      const float amax = detail::largest_magnitude(widened, length, counts.amax);
      counts.saturated += saturated;
      counts.flushed += flushed;
      counts.amax = amax;
    }
    partial[static_cast<std::size_t>(begin / parallel_grain)] = counts;
  });
  double* field = statistics;
  field[static_cast<int>(Fp8StatisticsField::Values)] += static_cast<double>(count);
  for (const detail::Fp8RangeCounts& counts : partial) {
    field[static_cast<int>(Fp8StatisticsField::Saturated)] += static_cast<double>(counts.saturated);
    field[static_cast<int>(Fp8StatisticsField::Flushed)] += static_cast<double>(counts.flushed);
    double& amax = field[static_cast<int>(Fp8StatisticsField::Amax)];
    amax = std::max(amax, static_cast<double>(counts.amax));
  }
}

}  // namespace mpx::cpu
