// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How far an accumulator model's sum may lie from the exact one, output by output: the bound
/// the GPU tests hold a cuBLASLt GEMM to when it is meant to sum as a model does
/// (tests/cuda/fp8_cuda_test.cu, accumulation_cuda_test.cu). Plain code, no test framework.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <mpx/mpx.hpp>

namespace mpx_test {

/// @brief An upper bound on |Model's sum - the exact sum| along the model's own groups (and runs): a
/// group of TruncatedAccumulation<F, G, R> loses less than 2^(E - F) per nonzero term it aligns (the
/// accumulator included; E its largest alignment exponent) and less than 2^(e + 1 - R) when it cuts
/// its sum (exponent e) to R fraction bits; PromotedAccumulation adds half an fp32 ulp of the
/// accumulator at each promotion. `acc` is the model's accumulator, advanced as the model advances it.
template <class Model>
struct ModelErrorBound;

template <int FractionalBits, std::size_t Group, int ResultBits>
struct ModelErrorBound<mpx::TruncatedAccumulation<FractionalBits, Group, ResultBits>> {
  using Model = mpx::TruncatedAccumulation<FractionalBits, Group, ResultBits>;
  template <class AFormat, class BFormat>
  static double of(float& acc, std::span<const float> a, std::span<const float> b) {
    double bound = 0.0;
    for (std::size_t first = 0; first < a.size(); first += Group) {
      const std::size_t count = std::min(Group, a.size() - first);
      int largest = mpx::detail::alignment_exponent<mpx::Float>(acc);
      int terms = acc != 0.0f ? 1 : 0;
      for (std::size_t i = first; i < first + count; ++i) {
        if (a[i] == 0.0f || b[i] == 0.0f) continue;
        largest = std::max(largest, mpx::detail::alignment_exponent<AFormat>(a[i]) +
                                        mpx::detail::alignment_exponent<BFormat>(b[i]));
        ++terms;
      }
      if (terms > 0) bound += terms * std::ldexp(1.0, largest - FractionalBits);
      acc =
          Model::template accumulate<AFormat, BFormat>(acc, a.subspan(first, count), b.subspan(first, count));
      if (acc != 0.0f) bound += std::ldexp(1.0, std::ilogb(acc) + 1 - ResultBits);
    }
    return bound;
  }
};

template <std::size_t Interval, class Inner>
struct ModelErrorBound<mpx::PromotedAccumulation<Interval, Inner>> {
  template <class AFormat, class BFormat>
  static double of(float& acc, std::span<const float> a, std::span<const float> b) {
    double bound = 0.0;
    for (std::size_t first = 0; first < a.size(); first += Interval) {
      const std::size_t count = std::min(Interval, a.size() - first);
      float run = 0.0f;
      bound += ModelErrorBound<Inner>::template of<AFormat, BFormat>(run, a.subspan(first, count),
                                                                     b.subspan(first, count));
      acc = acc + run;
      if (acc != 0.0f) bound += std::ldexp(1.0, std::ilogb(acc) - 24);
    }
    return bound;
  }
};

/// @brief The model's error bound of each output of op(A) op(B) for A [m, k] and B [n, k] (row-major
/// host tensors of `AFormat` and `BFormat` values, B transposed), and each output's magnitude
/// sum_k |a b|.
template <class Model, class AFormat, class BFormat, class SA, class SB>
void model_bounds(const mpx::Tensor<SA>& a, const mpx::Tensor<SB>& b, std::int64_t m, std::int64_t n,
                  std::int64_t k, std::vector<double>& bounds, std::vector<double>& magnitudes) {
  std::vector<float> a_values(static_cast<std::size_t>(m * k)), b_values(static_cast<std::size_t>(n * k));
  for (std::int64_t i = 0; i < m * k; ++i) a_values[static_cast<std::size_t>(i)] = static_cast<float>(a[i]);
  for (std::int64_t i = 0; i < n * k; ++i) b_values[static_cast<std::size_t>(i)] = static_cast<float>(b[i]);
  bounds.assign(static_cast<std::size_t>(m * n), 0.0);
  magnitudes.assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    const std::span<const float> row(a_values.data() + i * k, static_cast<std::size_t>(k));
    for (std::int64_t j = 0; j < n; ++j) {
      const std::span<const float> column(b_values.data() + j * k, static_cast<std::size_t>(k));
      float acc = 0.0f;
      const auto at = static_cast<std::size_t>(i * n + j);
      bounds[at] = ModelErrorBound<Model>::template of<AFormat, BFormat>(acc, row, column);
      double magnitude = 0.0;
      for (std::int64_t p = 0; p < k; ++p) magnitude += std::abs(double(row[p]) * double(column[p]));
      magnitudes[at] = magnitude;
    }
  }
}

}  // namespace mpx_test
