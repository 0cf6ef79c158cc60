// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Fp8Precision<Recipe, Formats, Activations>`: a precision whose Linear GEMMs take FP8
/// operands, scaled by a recipe, while activations between layers stay 16-bit, as Transformer
/// Engine's `fp8_autocast` runs them.
///
/// Only the GEMMs of `nn::Linear` layers change: each casts its input and weight into the forward
/// format and the gradient of its output into the backward format, every tensor with its own scale
/// (`DelayedScaling` or `CurrentScaling`, policy/fp8_scaling.hpp), and multiplies the codes with the
/// inverse scales applied to the fp32 sums. Every other layer computes in `Activations` (bf16 by
/// default) as under `Precision<Activations>`; master weights, gradients and optimizer state are fp32.

#include <string_view>
#include <type_traits>

#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/policy/gemm_accumulation.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx {

/// @brief The FP8 formats of a precision's GEMM operands: `Forward` for inputs and weights, `Backward`
/// for the gradients of outputs (Transformer Engine's `Format`).
template <class Forward, class Backward>
struct Fp8Formats {
  static_assert(std::is_same_v<Forward, Float8E4M3>,
                "mpx::Fp8Formats<Forward, Backward>: forward operands (inputs and weights) are E4M3, "
                "whose 3 mantissa bits they need; E5M2 trades those for range that only gradients use. "
                "Write mpx::Fp8Hybrid (E4M3 forward, E5M2 backward) or mpx::Fp8E4M3Only");
  static_assert(std::is_same_v<Backward, Float8E4M3> || std::is_same_v<Backward, Float8E5M2>,
                "mpx::Fp8Formats<Forward, Backward>: the backward format is mpx::Float8E5M2 or "
                "mpx::Float8E4M3");
  using forward = Forward;    ///< the format of inputs and weights
  using backward = Backward;  ///< the format of output gradients
  /// "hybrid" (E4M3 forward, E5M2 backward, TE's `Format.HYBRID`) or "e4m3" (TE's `Format.E4M3`)
  static constexpr std::string_view name = std::is_same_v<Backward, Float8E5M2> ? "hybrid" : "e4m3";
};

/// @brief E4M3 forward, E5M2 backward: Transformer Engine's default `Format.HYBRID`.
using Fp8Hybrid = Fp8Formats<Float8E4M3, Float8E5M2>;
/// @brief E4M3 everywhere: Transformer Engine's `Format.E4M3`.
using Fp8E4M3Only = Fp8Formats<Float8E4M3, Float8E4M3>;

namespace detail {
template <class T>
struct is_fp8_formats : std::false_type {};
template <class Forward, class Backward>
struct is_fp8_formats<Fp8Formats<Forward, Backward>> : std::true_type {};
template <class T>
struct is_delayed_scaling : std::false_type {};
template <std::size_t History, AmaxAlgorithm Algorithm, int Margin>
struct is_delayed_scaling<DelayedScaling<History, Algorithm, Margin>> : std::true_type {};
template <class T>
struct is_scaling_recipe : is_delayed_scaling<T> {};
template <bool PowerOfTwoScales, float AmaxEpsilon>
struct is_scaling_recipe<CurrentScaling<PowerOfTwoScales, AmaxEpsilon>> : std::true_type {};
inline constexpr std::string_view fp8_prefix = "fp8_";
inline constexpr std::string_view underscore = "_";
// The suffix of an FP8 precision's name for its GEMMs' accumulation: none for Hopper's (the
// default), "_fp32acc" for fp32 sums, else the three models' names.
inline constexpr std::string_view fp32_accumulation_suffix = "_fp32acc";
inline constexpr std::string_view no_suffix = "";
// (Names are joined inside consteval functions: nvcc 13 hands a `joined` named in a static member's
// initializer to the host compiler with pointers where its parameters are references.)
template <class Accumulation>
consteval std::string_view accumulation_suffix_of() {
  if constexpr (std::is_same_v<Accumulation, HopperGemmAccumulation>) {
    return no_suffix;
  } else if constexpr (std::is_same_v<Accumulation, Fp32GemmAccumulation>) {
    return fp32_accumulation_suffix;
  } else {
    return joined<underscore, Accumulation::fprop::name, underscore, Accumulation::dgrad::name, underscore,
                  Accumulation::wgrad::name>::value;
  }
}
template <class Accumulation>
struct accumulation_suffix {
  static constexpr std::string_view value = accumulation_suffix_of<Accumulation>();
};
// "fp8_<formats>_<recipe>[_<activations>]<accumulation suffix>", as `Fp8Precision::name` documents.
template <class Recipe, class Formats, class Activations, class Accumulation>
consteval std::string_view fp8_precision_name() {
  if constexpr (std::is_same_v<Activations, BFloat16>) {
    return joined<fp8_prefix, Formats::name, underscore, Recipe::name,
                  accumulation_suffix<Accumulation>::value>::value;
  } else {
    return joined<fp8_prefix, Formats::name, underscore, Recipe::name, underscore,
                  numeric_traits<Activations>::name, accumulation_suffix<Accumulation>::value>::value;
  }
}
}  // namespace detail

/// @brief Satisfied by the scaling recipes: `DelayedScaling<...>` and `CurrentScaling<...>`.
template <class R>
concept ScalingRecipe = detail::is_scaling_recipe<R>::value;

/// @brief A precision with FP8 GEMMs in its Linear layers.
/// @tparam Recipe      how each FP8 tensor's scale is chosen: `mpx::DelayedScaling<>` (TE's
///                     default) or `mpx::CurrentScaling<>`
/// @tparam Formats     the operand formats: `mpx::Fp8Hybrid` (default) or `mpx::Fp8E4M3Only`
/// @tparam Activations what activations, and every layer other than Linear, compute in: bf16 (default)
///                     or fp16
/// @tparam Accumulation how each of a Linear's three GEMMs sums its products:
///                     `mpx::HopperGemmAccumulation` (default: Hopper's Tensor Cores under Transformer
///                     Engine, as MMA-Sim models them bit for bit), `mpx::Fp32GemmAccumulation` (fp32
///                     sums, 4-9 times faster steps on the CPU) or any `mpx::GemmAccumulation<F, D, W>`
/// Its `compute_type` is `Activations`: code that asks a precision for its compute type sees what
/// flows between layers. Named "fp8_<formats>_<recipe>" in records ("fp8_hybrid_delayed"), with
/// "_fp16" where activations are fp16 and "_fp32acc" under `Fp32GemmAccumulation`.
template <class Recipe, class Formats = Fp8Hybrid, class Activations = BFloat16,
          class Accumulation = HopperGemmAccumulation>
struct Fp8Precision : Precision<Activations, Float> {
  static_assert(
      ScalingRecipe<Recipe>,
      "mpx::Fp8Precision<Recipe>: an FP8 precision needs a scaling recipe, "
      "mpx::DelayedScaling<> or mpx::CurrentScaling<>, e.g. mpx::fp8_hybrid<mpx::DelayedScaling<>>");
  static_assert(detail::is_fp8_formats<Formats>::value,
                "mpx::Fp8Precision<Recipe, Formats>: Formats is mpx::Fp8Hybrid or mpx::Fp8E4M3Only");
  static_assert(detail::is_gemm_accumulation<Accumulation>::value,
                "mpx::Fp8Precision<Recipe, Formats, Activations, Accumulation>: Accumulation is "
                "mpx::HopperGemmAccumulation, mpx::Fp32GemmAccumulation or an "
                "mpx::GemmAccumulation<Fprop, Dgrad, Wgrad> of accumulator models");
  static_assert(SixteenBitTag<Activations>,
                "mpx::Fp8Precision<Recipe, Formats, Activations>: activations between FP8 GEMMs are "
                "mpx::BFloat16 (the default, as Transformer Engine keeps them) or mpx::Half");

  using recipe = Recipe;                               ///< how scales are chosen
  using formats = Formats;                             ///< the GEMM operand formats
  using forward_format = typename Formats::forward;    ///< inputs' and weights' format
  using backward_format = typename Formats::backward;  ///< output gradients' format
  using accumulation = Accumulation;                   ///< each GEMM's accumulator model
  /// "fp8_hybrid_delayed", "fp8_e4m3_current", ... (and "_fp16" where activations are fp16,
  /// "_fp32acc" under fp32 accumulation)
  static constexpr std::string_view name =
      detail::fp8_precision_name<Recipe, Formats, Activations, Accumulation>();
};

/// @brief FP8 GEMMs with E4M3 forward and E5M2 backward operands under `Recipe`, bf16 activations:
/// `mpx::fp8_hybrid<mpx::DelayedScaling<>>` is Transformer Engine's default recipe.
/// `mpx::fp8_hybrid<mpx::DelayedScaling<>, mpx::Fp32GemmAccumulation>` sums in fp32 instead of as
/// Hopper does.
template <class Recipe = DelayedScaling<>, class Accumulation = HopperGemmAccumulation>
using fp8_hybrid = Fp8Precision<Recipe, Fp8Hybrid, BFloat16, Accumulation>;
/// @brief FP8 GEMMs with E4M3 operands throughout under `Recipe`, bf16 activations.
template <class Recipe = DelayedScaling<>, class Accumulation = HopperGemmAccumulation>
using fp8_e4m3 = Fp8Precision<Recipe, Fp8E4M3Only, BFloat16, Accumulation>;

namespace detail {
template <class Recipe, class Formats, class Activations, class Accumulation>
struct is_precision<Fp8Precision<Recipe, Formats, Activations, Accumulation>> : std::true_type {};
template <class Recipe, class Formats, class Activations, class Accumulation>
struct accumulate_of<Fp8Precision<Recipe, Formats, Activations, Accumulation>> {
  using type = float;
};
template <class Policy>
struct is_fp8_precision : std::false_type {};
template <class Recipe, class Formats, class Activations, class Accumulation>
struct is_fp8_precision<Fp8Precision<Recipe, Formats, Activations, Accumulation>> : std::true_type {};
}  // namespace detail

/// @brief Satisfied by the FP8 precisions (`mpx::Fp8Precision<...>`).
template <class P>
concept Fp8PrecisionPolicy = PrecisionPolicy<P> && detail::is_fp8_precision<P>::value;

}  // namespace mpx
