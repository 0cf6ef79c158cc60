// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `BlockScaledPrecision<Forward, Backward, Activations, Accumulation>`: a precision whose Linear
/// GEMMs take block-scaled operands (MXFP8, MXFP6, MXFP4, NVFP4, FP8 128-blocks), quantized by a
/// block-scaling recipe (policy/block_scaling.hpp), while activations between layers stay 16-bit, as
/// Transformer Engine's `MXFP8BlockScaling`, `NVFP4BlockScaling` and `Float8BlockScaling` recipes run
/// them.
///
/// Only the GEMMs of `nn::Linear` layers change: forward quantizes the input and the fp32 master
/// weight under `Forward`, backward the gradient of the output under `Backward`; each operand along
/// the K of the GEMM that reads it (a rowwise and a columnwise copy, each from the high-precision
/// source), with new scales at every cast (no state between steps). Every other layer computes in
/// `Activations` as under `Precision<Activations>`; master weights, gradients and optimizer state are
/// fp32. A layer that should stay high is given another precision (`experiment::mlp3<P, Head>`,
/// `experiment::LayerPrecisions`): NVFP4's recipe keeps the last layers in bf16.

#include <string_view>
#include <type_traits>

#include "mpx/numeric/accumulation.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/block_scaling.hpp"
#include "mpx/policy/gemm_accumulation.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx {

namespace detail {
template <class T>
struct is_block_scaling_recipe : std::false_type {};
template <class Element, E8M0Rounding Rounding>
struct is_block_scaling_recipe<MxScaling<Element, Rounding>> : std::true_type {};
template <bool TwoDimensionalWeights, bool StochasticGradients, bool HadamardWgrad>
struct is_block_scaling_recipe<Nvfp4Scaling<TwoDimensionalWeights, StochasticGradients, HadamardWgrad>>
    : std::true_type {};
template <bool PowerOfTwoScales>
struct is_block_scaling_recipe<Fp8BlockScaling<PowerOfTwoScales>> : std::true_type {};

inline constexpr std::string_view gradient_infix = "_grad_";
inline constexpr std::string_view block_underscore = "_";
// The parts of a block-scaled precision's name: "_grad_<backward recipe>" where the recipes differ,
// "_<activations>" where they are not bf16, the three models' names where they are not fp32.
template <class Forward, class Backward>
consteval std::string_view gradient_part() {
  if constexpr (std::is_same_v<Forward, Backward>) {
    return "";
  } else {
    return joined<gradient_infix, Backward::name>::value;
  }
}
template <class Activations>
consteval std::string_view activations_part() {
  if constexpr (std::is_same_v<Activations, BFloat16>) {
    return "";
  } else {
    return joined<block_underscore, numeric_traits<Activations>::name>::value;
  }
}
template <class Accumulation>
consteval std::string_view block_accumulation_part() {
  if constexpr (std::is_same_v<Accumulation, Fp32GemmAccumulation>) {
    return "";
  } else {
    return joined<block_underscore, Accumulation::fprop::name, block_underscore, Accumulation::dgrad::name,
                  block_underscore, Accumulation::wgrad::name>::value;
  }
}
// The parts as objects `joined` can refer to.
template <class Forward, class Backward, class Activations, class Accumulation>
struct block_scaled_name_parts {
  static constexpr std::string_view gradient = gradient_part<Forward, Backward>();
  static constexpr std::string_view activations = activations_part<Activations>();
  static constexpr std::string_view accumulation = block_accumulation_part<Accumulation>();
};
// (Joined inside a consteval function, as fp8_precision.hpp's names are, for nvcc 13.)
template <class Forward, class Backward, class Activations, class Accumulation>
consteval std::string_view block_scaled_precision_name() {
  using Parts = block_scaled_name_parts<Forward, Backward, Activations, Accumulation>;
  return joined<Forward::name, Parts::gradient, Parts::activations, Parts::accumulation>::value;
}
}  // namespace detail

/// @brief Satisfied by the block-scaling recipes: `MxScaling<...>`, `Nvfp4Scaling<...>`,
/// `Fp8BlockScaling<...>`.
template <class R>
concept BlockScalingRecipe = detail::is_block_scaling_recipe<R>::value;

/// @brief What DeepSeek-V3 describes for its FP8 128-block GEMMs on Hopper: each 128-element block's
/// partial sum by the FP8 `wgmma`'s fast accumulation (`HopperFp8FastAccumulation`), then scaled by
/// both blocks' scales and added to an fp32 accumulator, in all three GEMMs.
using HopperBlockScaledAccumulation =
    GemmAccumulation<HopperFp8FastAccumulation, HopperFp8FastAccumulation, HopperFp8FastAccumulation>;

/// @brief A precision with block-scaled GEMMs in its Linear layers.
/// @tparam Forward      the recipe of inputs and weights: `mpx::MxScaling<>`, `mpx::Nvfp4Scaling<>`,
///                      `mpx::Fp8BlockScaling<>`
/// @tparam Backward     the recipe of output gradients (by default `Forward`'s; e.g.
///                      `MxScaling<Float8E5M2>` for E5M2 gradients); the same kind of recipe as
///                      `Forward`, so that both operands of a GEMM have blocks as wide along K
/// @tparam Activations  what activations and every other layer compute in: bf16 (default) or fp16
/// @tparam Accumulation each GEMM's accumulator model (`mpx::GemmAccumulation<Fprop, Dgrad, Wgrad>`):
///                      `Fp32GemmAccumulation` (default: exact products of the scaled values summed in
///                      fp32) or per-block partial sums by another model, promoted with the scales
///                      (`HopperBlockScaledAccumulation`); see backend/cpu/block_scaled_gemm.hpp
/// Named after its recipes ("mxfp8", "nvfp4", "fp8block", "mxfp8_rceil", "nvfp4_nosr",
/// "mxfp8_grad_mxfp8_e5m2"), with "_fp16" where activations are fp16 and the three models' names
/// where the accumulation is not fp32.
template <class Forward, class Backward = Forward, class Activations = BFloat16,
          class Accumulation = Fp32GemmAccumulation>
struct BlockScaledPrecision : Precision<Activations, Float> {
  static_assert(BlockScalingRecipe<Forward> && BlockScalingRecipe<Backward>,
                "mpx::BlockScaledPrecision<Forward, Backward>: each is a block-scaling recipe: "
                "mpx::MxScaling<...>, mpx::Nvfp4Scaling<...> or mpx::Fp8BlockScaling<...>");
  static_assert(Forward::block_size == Backward::block_size &&
                    std::is_same_v<typename Forward::scale_format, typename Backward::scale_format>,
                "mpx::BlockScaledPrecision<Forward, Backward>: both recipes must be of one kind (MX, "
                "NVFP4 or FP8 128-blocks): a GEMM's two operands need blocks as wide along K and "
                "scales of one format");
  static_assert(hadamard_wgrad_of<Forward>() == hadamard_wgrad_of<Backward>(),
                "mpx::BlockScaledPrecision<Forward, Backward>: the weight gradient's two operands (x^T under "
                "Forward, dZ^T under Backward) are transformed together or not at all: give both recipes "
                "the same HadamardWgrad");
  static_assert(detail::is_gemm_accumulation<Accumulation>::value,
                "mpx::BlockScaledPrecision<..., Accumulation>: Accumulation is mpx::Fp32GemmAccumulation, "
                "mpx::HopperBlockScaledAccumulation or an mpx::GemmAccumulation<Fprop, Dgrad, Wgrad>");
  static_assert(SixteenBitTag<Activations>,
                "mpx::BlockScaledPrecision<Forward, Backward, Activations>: activations between "
                "block-scaled GEMMs are mpx::BFloat16 (the default) or mpx::Half");

  using forward_recipe = Forward;                             ///< inputs' and weights' recipe
  using backward_recipe = Backward;                           ///< output gradients' recipe
  using forward_format = typename Forward::element_format;    ///< inputs' and weights' elements
  using backward_format = typename Backward::element_format;  ///< output gradients' elements
  using accumulation = Accumulation;                          ///< each GEMM's accumulator model
  /// the precision's name in records (see above)
  static constexpr std::string_view name =
      detail::block_scaled_precision_name<Forward, Backward, Activations, Accumulation>();
};

/// @brief MXFP8: E4M3 elements in 1 x 32 blocks with E8M0 scales for inputs, weights and gradients
/// (Transformer Engine's `MXFP8BlockScaling` default), the scale exponent rounded as `Rounding` says.
template <E8M0Rounding Rounding = E8M0Rounding::Floor>
using mxfp8 = BlockScaledPrecision<MxScaling<Float8E4M3, Rounding>>;

/// @brief NVFP4 (Transformer Engine's `NVFP4BlockScaling`): E2M1 in 1 x 16 blocks with E4M3 scales and
/// a global fp32 scale per tensor; each published trick a switch, all on by default.
template <bool TwoDimensionalWeights = true, bool StochasticGradients = true, bool HadamardWgrad = true>
using nvfp4 = BlockScaledPrecision<Nvfp4Scaling<TwoDimensionalWeights, StochasticGradients, HadamardWgrad>>;

/// @brief FP8 with 128-element blocks (DeepSeek-V3, TE's `Float8BlockScaling`): E4M3, 1 x 128
/// activation and gradient blocks, 128 x 128 weight blocks, power-of-two fp32 scales.
template <class Accumulation = Fp32GemmAccumulation>
using fp8_block = BlockScaledPrecision<Fp8BlockScaling<>, Fp8BlockScaling<>, BFloat16, Accumulation>;

namespace detail {
template <class Forward, class Backward, class Activations, class Accumulation>
struct is_precision<BlockScaledPrecision<Forward, Backward, Activations, Accumulation>> : std::true_type {};
template <class Forward, class Backward, class Activations, class Accumulation>
struct accumulate_of<BlockScaledPrecision<Forward, Backward, Activations, Accumulation>> {
  using type = float;
};
template <class Policy>
struct is_block_scaled_precision : std::false_type {};
template <class Forward, class Backward, class Activations, class Accumulation>
struct is_block_scaled_precision<BlockScaledPrecision<Forward, Backward, Activations, Accumulation>>
    : std::true_type {};
}  // namespace detail

/// @brief Satisfied by the block-scaled precisions (`mpx::BlockScaledPrecision<...>`).
template <class P>
concept BlockScaledPrecisionPolicy = PrecisionPolicy<P> && detail::is_block_scaled_precision<P>::value;

}  // namespace mpx
