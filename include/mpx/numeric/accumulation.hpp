// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How a GEMM's products are summed, as a type: the accumulator models.
///
/// A product of two FP8 values (4 and 3 significant bits) or two bf16 values (8 and 8) is exact in
/// fp32, so what separates one machine's GEMM from another's is how the products are summed. Three
/// models, each a type with one function, `accumulate(acc, products)`:
/// - `Fp32Accumulation`: each product added to an fp32 accumulator, rounded to nearest each time;
///   what the CPU GEMM does and what "fp32 accumulation" usually means.
/// - `TruncatedAccumulation<FractionalBits, Group>`: the model of Hopper's FP8 "fast accumulation"
///   that published measurements describe (DeepSeek-V3, section 3.3: "around 14 bits" kept; MMA-Sim,
///   arXiv 2511.10909): per MMA instruction, a group of products and the accumulator are aligned to
///   the largest exponent among them, every bit below 2^-FractionalBits of that exponent is dropped
///   (truncated toward zero), the rest is summed exactly and the sum truncated to fp32.
/// - `PromotedAccumulation<Interval, Inner>`: Transformer Engine's split accumulator, the default for
///   its dgrad and wgrad GEMMs: `Inner` sums `Interval` products from zero, then that partial is added
///   to an fp32 accumulator rounded to nearest ("promotion" to CUDA-core registers).
///
/// The truncated model is a model of measurements, not of a specification: its parameters and its
/// final rounding are what the sources report, and the GPU check that compares it with an sm_90 FP8
/// GEMM bit for bit (tests/cuda) waits for a GPU session (docs/fp8.md, "Accumulator models").

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "mpx/error.hpp"

namespace mpx {

/// @brief A way to sum a GEMM's products: `Model::accumulate(acc, products)` returns acc plus the
/// products, summed in order as the model says, and `Model::name` names it in records and messages.
template <class Model>
concept AccumulationModel = requires(float acc, std::span<const float> products) {
  { Model::accumulate(acc, products) } -> std::same_as<float>;
  { Model::name } -> std::convertible_to<std::string_view>;
};

/// @brief Round-to-nearest fp32 sums, one product at a time, in order.
struct Fp32Accumulation {
  static constexpr std::string_view name = "fp32";  ///< the model's name in records and messages
  /// @brief acc + products[0] + products[1] + ..., each addition rounded to nearest in fp32.
  static float accumulate(float acc, std::span<const float> products) noexcept {
    for (const float p : products) acc = acc + p;
    return acc;
  }
};

namespace detail {

// `value` converted to fp32 rounding toward zero (a value past FLT_MAX gives FLT_MAX).
inline float to_float_toward_zero(double value) noexcept {
  float rounded = static_cast<float>(value);
  if (std::fabs(static_cast<double>(rounded)) > std::fabs(value)) rounded = std::nextafter(rounded, 0.0f);
  return rounded;
}

}  // namespace detail

/// @brief Fused group sums with truncated alignment: the model of Hopper's FP8 fast accumulation.
///
/// The products are taken `Group` at a time (an FP8 `wgmma` instruction's k extent is 32). For each
/// group, with e the exponent of the leading bit of the largest of |acc| and the group's |products|,
/// every term (acc and each product) is truncated toward zero to a multiple of 2^(e - FractionalBits);
/// the truncated terms are added exactly, and the sum becomes the new acc, truncated toward zero to
/// fp32. A group holding NaN or an infinity (or meeting one in acc) is summed in plain fp32 instead, so
/// that they propagate as IEEE arithmetic has them.
/// @tparam FractionalBits bits kept below the leading bit of the largest term (13 by default: the
///                        "about 14 bits" of the measurements, the leading bit included)
/// @tparam Group          products summed in one step (the MMA instruction's k; 32 for FP8 on sm_90)
template <int FractionalBits = 13, std::size_t Group = 32>
struct TruncatedAccumulation {
  static_assert(FractionalBits >= 0 && Group >= 1, "TruncatedAccumulation: FractionalBits >= 0, Group >= 1");
  // The exact sum is held in a double: Group + 1 terms below 2^(FractionalBits + 1) units each.
  static_assert(FractionalBits + 1 + std::bit_width(Group + 1) <= 53,
                "TruncatedAccumulation: the exact group sum must fit a double's 53 bits");
  static constexpr std::string_view name = "truncated";   ///< the model's name in records and messages
  static constexpr int fractional_bits = FractionalBits;  ///< bits kept below the largest term's leading bit
  static constexpr std::size_t group = Group;             ///< products summed in one step

  /// @brief acc plus the products, a group at a time (see the type's description).
  static float accumulate(float acc, std::span<const float> products) noexcept {
    for (std::size_t first = 0; first < products.size(); first += Group) {
      acc = add_group(acc, products.subspan(first, std::min(Group, products.size() - first)));
    }
    return acc;
  }

 private:
  static float add_group(float acc, std::span<const float> group) noexcept {
    float largest = std::fabs(acc);
    for (const float p : group) {
      if (!std::isfinite(p)) return Fp32Accumulation::accumulate(acc, group);
      largest = std::fmax(largest, std::fabs(p));
    }
    if (!std::isfinite(acc)) return Fp32Accumulation::accumulate(acc, group);
    if (largest == 0.0f) return Fp32Accumulation::accumulate(acc, group);  // zeros: fp32's sign rules
    // 2^(e - FractionalBits), e the exponent of the largest term's leading bit. Every term is a
    // multiple of 2^-149 and at most 2^128, so its quotient by the quantum is exact in double.
    const double quantum = std::ldexp(1.0, std::ilogb(largest) - FractionalBits);
    double sum = std::trunc(static_cast<double>(acc) / quantum);
    for (const float p : group) sum += std::trunc(static_cast<double>(p) / quantum);
    return detail::to_float_toward_zero(sum * quantum);
  }
};

/// @brief The model of Hopper's FP8 fast accumulation (`CUBLASLT_MATMUL_DESC_FAST_ACCUM` on): 13
/// fractional bits in groups of 32 products.
using HopperFp8FastAccumulation = TruncatedAccumulation<13, 32>;

/// @brief Transformer Engine's split accumulator: `Inner` sums each run of `Interval` products from
/// zero, and each run's partial sum is added to the fp32 accumulator rounded to nearest.
/// @tparam Interval products per promotion (128 in TE: 4 FP8 `wgmma` of k = 32)
/// @tparam Inner    how a run is summed (Hopper's fast accumulation by default)
template <std::size_t Interval = 128, AccumulationModel Inner = HopperFp8FastAccumulation>
struct PromotedAccumulation {
  static_assert(Interval >= 1, "PromotedAccumulation: Interval >= 1");
  static constexpr std::string_view name = "promoted";  ///< the model's name in records and messages
  static constexpr std::size_t interval = Interval;     ///< products per promotion into fp32
  using inner = Inner;                                  ///< how each run of `Interval` products is summed

  /// @brief acc plus the products: each run of `Interval` through `Inner` from zero, then added to
  /// acc in fp32.
  static float accumulate(float acc, std::span<const float> products) noexcept {
    for (std::size_t first = 0; first < products.size(); first += Interval) {
      const float partial =
          Inner::accumulate(0.0f, products.subspan(first, std::min(Interval, products.size() - first)));
      acc = acc + partial;
    }
    return acc;
  }
};

static_assert(AccumulationModel<Fp32Accumulation>);
static_assert(AccumulationModel<HopperFp8FastAccumulation>);
static_assert(AccumulationModel<PromotedAccumulation<>>);

/// @brief The dot product of `a` and `b` summed as `Model` says, starting from `initial`: each product
/// is the fp32 product of the two values (exact for FP8 and 16-bit operands), so the model decides
/// everything else. A scalar reference for the GEMMs' accumulator models; throws
/// `mpx::invalid_argument` when the lengths differ.
template <AccumulationModel Model>
float dot(std::span<const float> a, std::span<const float> b, float initial = 0.0f) {
  if (a.size() != b.size()) {
    throw invalid_argument(detail::concat("mpx::dot<", Model::name, ">: a has ", a.size(), " values, b ",
                                          b.size(), "; they must be as long"));
  }
  std::vector<float> products(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) products[i] = a[i] * b[i];
  return Model::accumulate(initial, products);
}

}  // namespace mpx
