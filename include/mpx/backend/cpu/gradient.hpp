// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Whole-gradient passes on the CPU: unscale fused with the finite check and the squared
/// norm, and in-place scaling for clipping.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <type_traits>

#include "mpx/backend/cpu/convert.hpp"
#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/gradient_spec.hpp"
#include "mpx/error.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief Divides every element by `divisor` (when it is not 1: the mean over a step's micro-batches,
/// rounded once), then multiplies it by `factor` (skipped when `Scale` is false, rounded once more), and
/// inspects it: finiteness and sum of squares, in one read of the gradient. The sum is combined in a
/// fixed order, so it is the same on any number of threads: each chunk of `parallel_grain` elements
/// as `detail::lane_sum` (element i into lane i % 8), and the chunks in order.
template <bool Scale, Element G>
GradientStats unscale_and_inspect(Tensor<G, Host>& grad, G factor, G divisor = G(1)) {
  G* g = grad.data();
  const bool divide = divisor != G(1);
  return parallel_sum_chunks<GradientStats>(
      grad.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
        const double sum = detail::lane_sum(end - begin, [&](std::int64_t offset) {
          const std::int64_t i = begin + offset;
          if (divide) g[i] /= divisor;
          if constexpr (Scale) g[i] *= factor;
          return static_cast<double>(g[i]) * static_cast<double>(g[i]);
        });
        // A float's square cannot overflow a double, so for float gradients an inf or NaN sum is
        // exactly "some value was inf or NaN"; a double's square can overflow (1e200), so doubles are
        // checked element by element and their sum may be inf while every value is finite, as on the
        // GPU (the H200 found the difference).
        bool finite = true;
        if constexpr (std::is_same_v<G, double>) {
          for (std::int64_t k = begin; k < end; ++k) finite = finite && std::isfinite(g[k]);
        } else {
          finite = std::isfinite(sum);
        }
        return GradientStats{sum, finite};
      });
}

/// @brief The CPU needs no scratch memory for `unscale_and_inspect`; the type exists so that a
/// training step holds one workspace whatever its device.
struct GradientWorkspace {};

/// @brief One pass over all `gradients` of a training step, as `cuda::unscale_and_inspect` does it
/// on the GPU. Each gradient holds the sum over the step's `micro_batches` (every one seeded with the
/// full loss scale); the pass divides it by `micro_batches` (when more than one: one rounding, the
/// division data-parallel ranks apply to their sum), multiplies it by
/// `G(float(1.0 / double(*scale)))` (GradScaler's inverse; only when `Scale`), raises `*nonfinite` to
/// 1 when a value is inf or NaN, and adds the sum of the squares of the final values to
/// `*sum_of_squares`, tensor by tensor in list order.
template <bool Scale, Element G>
void unscale_and_inspect(std::span<Tensor<G, Host>* const> gradients, const float* scale,
                         std::int64_t micro_batches, double* sum_of_squares, int* nonfinite,
                         GradientWorkspace& /*workspace*/) {
  const G inverse = static_cast<G>(static_cast<float>(1.0 / static_cast<double>(*scale)));
  const G divisor = micro_batches_divisor<G>("mpx::cpu::unscale_and_inspect", micro_batches);
  for (Tensor<G, Host>* g : gradients) {
    if (g == nullptr) throw invalid_argument("mpx::cpu::unscale_and_inspect: a gradient is null");
    const GradientStats stats = unscale_and_inspect<Scale>(*g, inverse, divisor);
    *sum_of_squares += stats.sum_of_squares;
    if (!stats.finite) *nonfinite = 1;
  }
}

/// @brief As the overload without a continuation, and then `then(args...)` (as
/// `cuda::unscale_and_inspect` runs it in the same kernel on a GPU).
template <bool Scale, Element G, class Then, class... Args>
void unscale_and_inspect(std::span<Tensor<G, Host>* const> gradients, const float* scale,
                         std::int64_t micro_batches, double* sum_of_squares, int* nonfinite,
                         GradientWorkspace& workspace, const Then& then, Args... args) {
  unscale_and_inspect<Scale>(gradients, scale, micro_batches, sum_of_squares, nonfinite, workspace);
  then(args...);
}

/// @brief Sets `*flag` to 1 when `x` holds inf or NaN (leaves it otherwise).
template <FloatingElement T>
void flag_nonfinite(const Tensor<T, Host>& x, int* flag) {
  using Wide = accumulate_t<tag_of_t<T>>;
  // A block at a time, widened with the vector conversions: v - v is NaN exactly when v is inf or
  // NaN, and the test has no branch, so the loop vectorises.
  Wide widened[detail::conversion_block];
  for (std::int64_t first = 0; first < x.numel(); first += detail::conversion_block) {
    const std::int64_t length = std::min(detail::conversion_block, x.numel() - first);
    detail::widen_range<tag_of_t<T>>(x.data() + first, widened, 0, length);
    bool nonfinite = false;
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t i = 0; i < length; ++i) {
      const Wide difference = widened[i] - widened[i];
      nonfinite = nonfinite || difference != difference;
    }
    if (nonfinite) {
      *flag = 1;
      return;
    }
  }
}

/// @brief Runs `before(args...)`, then sets `*flag` to 1 when `x` holds inf or NaN (as
/// `cuda::flag_nonfinite` does in one kernel on a GPU).
template <FloatingElement T, class Before, class... Args>
void flag_nonfinite(const Tensor<T, Host>& x, int* flag, GradientWorkspace& /*workspace*/,
                    const Before& before, Args... args) {
  before(args...);
  flag_nonfinite(x, flag);
}

/// @brief grad *= factor.
template <Element G>
void scale_in_place(Tensor<G, Host>& grad, G factor) {
  G* g = grad.data();
  parallel_for_chunks(grad.numel(), parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t i = begin; i < end; ++i) g[i] *= factor;
  });
}

}  // namespace mpx::cpu
