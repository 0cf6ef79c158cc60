// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How a GEMM's products are summed, as a type: the accumulator models.
///
/// A product of two FP8 values (4 and 3 significant bits) or two bf16 values (8 and 8) is exact, so
/// what separates one machine's GEMM from another's is how the products are summed. Three models,
/// each a type with one function, `accumulate<AFormat, BFormat>(acc, a, b)`: acc plus the dot product
/// of a and b, whose values are in the two operand formats.
/// - `Fp32Accumulation`: each product added to an fp32 accumulator, rounded to nearest each time;
///   what the CPU GEMM does (up to its order) and what "fp32 accumulation" usually means.
/// - `TruncatedAccumulation<FractionalBits, Group, ResultBits>`: a Tensor Core instruction as MMA-Sim
///   (arXiv 2511.10909, microsoft/MMA-Sim) models it bit for bit: a fused dot-add of `Group` products
///   and the accumulator, aligned to the largest exponent among them, every bit below
///   2^-FractionalBits of that exponent dropped, the rest summed exactly, the sum truncated to
///   `ResultBits` fraction bits. `HopperFp8FastAccumulation` is its FP8 `wgmma` on sm_90 (13 and 13
///   bits: the "about 14 bits" DeepSeek-V3 reports, section 3.3), `Hopper16BitAccumulation` its fp16
///   and bf16 `wgmma` (25 bits, fp32 result truncated).
/// - `PromotedAccumulation<Interval, Inner>`: Transformer Engine's split accumulator, the default for
///   its dgrad and wgrad GEMMs: `Inner` sums `Interval` products from zero, then that partial is added
///   to an fp32 accumulator rounded to nearest ("promotion" to CUDA-core registers).
///
/// MMA-Sim's models were checked against the hardware bit for bit; mpx's transcription of them is
/// checked against a second, integer implementation (tests/unit/accumulation_test.cpp), and against an
/// sm_90 FP8 GEMM only when a GPU session runs that check (docs/fp8.md, "Accumulator models").

#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "mpx/error.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief A way to sum a GEMM's products: `Model::accumulate<AFormat, BFormat>(acc, a, b)` returns acc
/// plus the products a[i] * b[i] summed as the model says (the operands hold values of `AFormat` and
/// `BFormat`, widened to float), and `Model::name` names it in records and messages.
template <class Model>
concept AccumulationModel = requires(float acc, std::span<const float> a, std::span<const float> b) {
  { Model::template accumulate<Float, Float>(acc, a, b) } -> std::same_as<float>;
  { Model::name } -> std::convertible_to<std::string_view>;
};

/// @brief Round-to-nearest fp32 sums, one product at a time, in order.
struct Fp32Accumulation {
  static constexpr std::string_view name = "fp32";  ///< the model's name in records and messages
  /// @brief acc + a[0] b[0] + a[1] b[1] + ..., each product and each addition rounded to nearest in
  /// fp32 (the products of FP8 and 16-bit values are exact).
  template <NumericTag AFormat, NumericTag BFormat>
  static float accumulate(float acc, std::span<const float> a, std::span<const float> b) noexcept {
    for (std::size_t i = 0; i < a.size(); ++i) acc = acc + a[i] * b[i];
    return acc;
  }
};

namespace detail {

/// The exponent of a term that is zero, below every other (a sum of two stays far inside int32).
inline constexpr int no_alignment_exponent = -(1 << 20);

/// The exponent a finite value of `Format` (held in a float) is aligned by: that of its leading bit,
/// or, for a subnormal, the format's smallest normal exponent (its significand is then below 1);
/// `no_alignment_exponent` for zero. Read from the float's exponent field, so that the CPU GEMM's
/// decoding can call it once per operand element (backend/cpu/gemm_accumulation.hpp).
template <NumericTag Format>
inline int alignment_exponent(float value) noexcept {
  // Branch-free, so that a loop over an operand vectorises. A subnormal float has field 0, which
  // reads as -127: below every format's smallest normal exponent.
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const int exponent =
      std::max(static_cast<int>((bits >> 23) & 0xffu) - 127, 1 - numeric_traits<Format>::exponent_bias);
  return (bits & 0x7fffffffu) == 0 ? no_alignment_exponent : exponent;
}

// `value` with its significand truncated toward zero to `fraction_bits` bits after the leading one (a
// value below fp32's smallest normal keeps the bits above 2^(-126 - fraction_bits)), as fp32; a value
// that leaves fp32's range becomes an infinity of its sign.
inline float truncate_to_float(double value, int fraction_bits) noexcept {
  if (value == 0.0) return 0.0f;
  const int exponent = std::max(std::ilogb(value), -126);
  if (exponent > 127) return value > 0 ? HUGE_VALF : -HUGE_VALF;
  const double quantum = std::ldexp(1.0, exponent - fraction_bits);
  return static_cast<float>(std::trunc(value / quantum) * quantum);  // exact: <= 24 bits in range
}

}  // namespace detail

/// @brief A fused dot-add with truncated alignment: a Tensor Core instruction as MMA-Sim models it.
///
/// The products are taken `Group` at a time (the instruction's k; an FP8 `wgmma` has 32). For each
/// group, every term is given an exponent: a product a * b that of a plus that of b (each operand's
/// leading-bit exponent, its format's smallest normal one for a subnormal), so a product's
/// significand lies in [1, 4); the accumulator its own fp32 exponent. With E the largest exponent
/// among the group's nonzero terms, each term is truncated toward zero to a multiple of
/// 2^(E - FractionalBits); the truncated terms are added exactly; the sum, truncated toward zero to
/// `ResultBits` bits after its leading one, is the new accumulator (an infinity past fp32's range).
/// A group with NaN or an infinity among its terms gives the exact sum of its terms rounded to fp32:
/// NaN, or the infinity. A zero result is +0.
/// @tparam FractionalBits bits kept below 2^E when terms are aligned
/// @tparam Group          products summed in one instruction
/// @tparam ResultBits     fraction bits kept in the accumulator after each instruction (23: fp32)
template <int FractionalBits = 13, std::size_t Group = 32, int ResultBits = 13>
struct TruncatedAccumulation {
  static_assert(FractionalBits >= 0 && Group >= 1 && ResultBits >= 0 && ResultBits <= 23,
                "TruncatedAccumulation: FractionalBits >= 0, Group >= 1, 0 <= ResultBits <= 23");
  // The exact sum is held in a double: Group + 1 terms below 2^(FractionalBits + 2) units each.
  static_assert(FractionalBits + 2 + static_cast<int>(std::bit_width(Group + 1)) <= 53,
                "TruncatedAccumulation: the exact group sum must fit a double's 53 bits");
  static constexpr std::string_view name = "truncated";   ///< the model's name in records and messages
  static constexpr int fractional_bits = FractionalBits;  ///< bits kept below the largest exponent
  static constexpr std::size_t group = Group;             ///< products summed in one instruction
  static constexpr int result_bits = ResultBits;          ///< fraction bits of the accumulator

  /// @brief acc plus the products, a group at a time (see the type's description).
  template <NumericTag AFormat, NumericTag BFormat>
  static float accumulate(float acc, std::span<const float> a, std::span<const float> b) noexcept {
    for (std::size_t first = 0; first < a.size(); first += Group) {
      const std::size_t count = std::min(Group, a.size() - first);
      acc = add_group<AFormat, BFormat>(acc, a.subspan(first, count), b.subspan(first, count));
    }
    return acc;
  }

 private:
  template <NumericTag AFormat, NumericTag BFormat>
  static float add_group(float acc, std::span<const float> a, std::span<const float> b) noexcept {
    constexpr int none = detail::no_alignment_exponent;
    double exact = acc;
    int largest = detail::alignment_exponent<Float>(acc);
    for (std::size_t i = 0; i < a.size(); ++i) {
      exact += static_cast<double>(a[i]) * static_cast<double>(b[i]);
      if (a[i] == 0.0f || b[i] == 0.0f) continue;
      largest = std::max(
          largest, detail::alignment_exponent<AFormat>(a[i]) + detail::alignment_exponent<BFormat>(b[i]));
    }
    if (!std::isfinite(exact)) return static_cast<float>(exact);  // NaN or infinity among the terms
    if (largest == none) return 0.0f;
    // Each term over the quantum 2^(E - FractionalBits) is exact in a double (at most 48 significant
    // bits from two 24-bit operands, well inside the exponent range), and so is its truncation.
    const double quantum = std::ldexp(1.0, largest - FractionalBits);
    double sum = std::trunc(static_cast<double>(acc) / quantum);
    for (std::size_t i = 0; i < a.size(); ++i) {
      sum += std::trunc(static_cast<double>(a[i]) * static_cast<double>(b[i]) / quantum);
    }
    return detail::truncate_to_float(sum * quantum, ResultBits);
  }
};

/// @brief Hopper's FP8 `wgmma` (`CUBLASLT_MATMUL_DESC_FAST_ACCUM` on sm_90): 32 products a
/// group, 13 fraction bits in alignment and in the accumulator (MMA-Sim's "f32_e8m13").
using HopperFp8FastAccumulation = TruncatedAccumulation<13, 32, 13>;

/// @brief Hopper's fp16 and bf16 `wgmma`: 16 products a group, 25 fraction bits in alignment, the
/// sum truncated to fp32 (MMA-Sim).
using Hopper16BitAccumulation = TruncatedAccumulation<25, 16, 23>;

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
  template <NumericTag AFormat, NumericTag BFormat>
  static float accumulate(float acc, std::span<const float> a, std::span<const float> b) noexcept {
    for (std::size_t first = 0; first < a.size(); first += Interval) {
      const std::size_t count = std::min(Interval, a.size() - first);
      acc = acc + Inner::template accumulate<AFormat, BFormat>(0.0f, a.subspan(first, count),
                                                               b.subspan(first, count));
    }
    return acc;
  }
};

static_assert(AccumulationModel<Fp32Accumulation>);
static_assert(AccumulationModel<HopperFp8FastAccumulation>);
static_assert(AccumulationModel<Hopper16BitAccumulation>);
static_assert(AccumulationModel<PromotedAccumulation<>>);

/// @brief The dot product of `a` and `b`, values of `AFormat` and `BFormat`, summed as `Model` says,
/// starting from `initial`. A scalar reference for the GEMMs' accumulator models; throws
/// `mpx::invalid_argument` when the lengths differ.
template <AccumulationModel Model, NumericTag AFormat = Float, NumericTag BFormat = AFormat>
float dot(std::span<const float> a, std::span<const float> b, float initial = 0.0f) {
  if (a.size() != b.size()) {
    throw invalid_argument(detail::concat("mpx::dot<", Model::name, ">: a has ", a.size(), " values, b ",
                                          b.size(), "; they must be as long"));
  }
  return Model::template accumulate<AFormat, BFormat>(initial, a, b);
}

}  // namespace mpx
