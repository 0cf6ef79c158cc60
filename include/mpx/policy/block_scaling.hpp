// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Block-scaling recipes as types (`MxScaling`, `Nvfp4Scaling`, `Fp8BlockScaling`) and the
/// arithmetic that turns a block's amax into its scale, each as published, so that a scale computed
/// here is the bits the reference computes: the OCP MX specification and torchao's `to_mx` (MX,
/// `E8M0Rounding::Floor`), Transformer Engine's `float_to_e8m0` (`RoundUp`) and cuBLAS's and torchao's
/// RCEIL (`RCeil`); Transformer Engine's NVFP4 encode formulas (core_nvfp4.cuh); TE's
/// `Float8BlockScaling` (`compute_scale_from_amax`, as `current_scale`). Host and device alike.
///
/// A block's elements are encoded as x times the block's *element multiplier* (a reciprocal of the
/// scale) rounded into the element format, saturating; the value a code stands for is the code's
/// value times the block's scale (and, under NVFP4, the tensor's global scale).

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "mpx/config.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/policy/fp8_scaling.hpp"
#include "mpx/policy/precision.hpp"

namespace mpx {

/// @brief How an MX block's E8M0 scale is rounded from its amax.
enum class E8M0Rounding {
  /// The OCP MX specification (v1.0, section 6.3) and torchao's `ScaleCalculationMode.FLOOR`:
  /// 2^(floor(log2 amax) - emax), emax the exponent of the element format's largest power of two;
  /// the block's largest element may then exceed the format and saturate.
  Floor,
  /// Transformer Engine's MXFP8 cast: amax times the fp32 reciprocal of the element format's largest
  /// value, rounded up to a power of two as `cvt.rp.satfinite.ue8m0x2.f32` does (TE's software
  /// fallback `float_to_e8m0`, bit for bit: an fp32 subnormal at or below 2^-127 gives 2^-127, above
  /// it 2^-126; at or beyond 2^127 it saturates to 2^127; infinity gives 2^127, NaN gives NaN).
  RoundUp,
  /// cuBLAS's recipe ("computing scaling and conversion factors for FP8 with UE8M0 scales") and
  /// torchao's `ScaleCalculationMode.RCEIL`: amax divided by the element format's largest value,
  /// rounded up to a power of two as under `RoundUp`.
  RCeil,
};

/// @brief The E8M0 code of a positive fp32 rounded up to a power of two, saturating
/// (`cvt.rp.satfinite.ue8m0x2.f32`, as Transformer Engine's `float_to_e8m0` writes it in software):
/// NaN gives 0xFF, infinity 0xFE (2^127), zero 0 (2^-127); otherwise the exponent field, plus one
/// when any mantissa bit is set, except that an fp32 subnormal at or below 2^-127 stays at 0 and
/// 2^127 * (1 + m) stays at 0xFE.
MPX_HOST_DEVICE constexpr std::uint8_t e8m0_code_rounded_up(float x) {
  if (x != x) return 0xFF;
  if (x == std::numeric_limits<float>::infinity()) return 0xFE;
  if (x == 0.0f) return 0x00;
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x);
  auto exponent = static_cast<std::uint32_t>((bits >> 23) & 0xFFu);
  const std::uint32_t mantissa = bits & 0x007FFFFFu;
  if (mantissa > 0 && exponent != 0xFE && !(exponent == 0 && mantissa <= 0x00400000u)) ++exponent;
  return static_cast<std::uint8_t>(exponent);
}

/// @brief The E8M0 code of an MX block's scale from its amax (|x| of its largest element), for
/// elements of format `Element`, rounded as `rounding` says. `Floor` reads amax's fp32 exponent field
/// (a subnormal or zero amax counts as 2^-127), subtracts the element format's emax and clamps to
/// E8M0's codes 0 to 254 (an infinite amax gives a finite scale, as torchao's); a NaN amax gives NaN
/// (0xFF) in every mode.
template <NumericTag Element>
MPX_HOST_DEVICE constexpr std::uint8_t mx_scale_code(float amax, E8M0Rounding rounding) {
  constexpr float largest = static_cast<float>(numeric_traits<Element>::max_finite);
  if (amax != amax) return 0xFF;
  switch (rounding) {
    case E8M0Rounding::Floor: {
      constexpr int emax = detail::largest_exponent<Element>();
      const int field = static_cast<int>((std::bit_cast<std::uint32_t>(amax) >> 23) & 0xFFu);
      const int code = field - emax;
      return static_cast<std::uint8_t>(code < 0 ? 0 : code > 254 ? 254 : code);
    }
    case E8M0Rounding::RoundUp: {
      // TE's Quantized_Limits::max_norm_rcp: the double 1 / max, rounded once to fp32.
      constexpr float reciprocal = static_cast<float>(1.0 / static_cast<double>(largest));
      return e8m0_code_rounded_up(amax * reciprocal);
    }
    case E8M0Rounding::RCeil: return e8m0_code_rounded_up(amax / largest);
  }
  return 0xFF;
}

/// @brief What a block's elements are multiplied by before they are rounded into the element format:
/// 1 / 2^(code - 127) = 2^(127 - code), exactly (2^127 for code 0); NaN for a NaN scale, so that its
/// block's elements become NaN (or, in a format without NaN, its largest value): their value, the
/// code times a NaN scale, is NaN whatever the code. (torchao divides by 2^-126 where the code is 0,
/// and Transformer Engine multiplies by 1 there: blocks whose amax is below about 2^-119 differ.)
MPX_HOST_DEVICE constexpr float e8m0_element_multiplier(std::uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  // 2^(127 - code) for code 0 .. 254: 2^127 down to 2^-127 (an fp32 subnormal).
  const int exponent = 127 - static_cast<int>(code);
  return exponent >= -126 ? std::bit_cast<float>(static_cast<std::uint32_t>(exponent + 127) << 23)
                          : std::bit_cast<float>(std::uint32_t{0x00400000u});
}

/// @brief NVFP4's fp32 global encode scale from the tensor's amax (TE's
/// `compute_global_encode_scaling_factor_FP4`): S_enc = 448 * 6 / amax, at most FLT_MAX; 1 when amax
/// is 0 or the quotient is 0. Its reciprocal, the decode scale, multiplies every block's scale.
MPX_HOST_DEVICE constexpr float nvfp4_global_encode_scale(float amax) {
  constexpr float product = 448.0f * 6.0f;
  float scale = product / amax;
  if (scale > std::numeric_limits<float>::max()) scale = std::numeric_limits<float>::max();
  if (amax == 0.0f || scale == 0.0f) return 1.0f;
  return scale;
}

/// @brief An NVFP4 block's E4M3 scale from the block's amax and the global encode scale (TE's
/// `compute_decoding_scaling_factor`): e4m3(min(amax * (S_enc * fp32(1/6)), FLT_MAX)), rounded to
/// nearest and saturating. A NaN amax (a block holding a NaN) gives a NaN scale, so that the block's
/// values are NaN (TE's amax passes NaNs over and never asks).
MPX_HOST_DEVICE constexpr Encoded<Float8E4M3> nvfp4_block_scale(float block_amax, float global_encode_scale) {
  constexpr float one_sixth = static_cast<float>(1.0 / 6.0);
  float scale = block_amax * (global_encode_scale * one_sixth);
  if (scale > std::numeric_limits<float>::max()) scale = std::numeric_limits<float>::max();
  return Encoded<Float8E4M3>::rounded<Overflow::Saturate>(scale);
}

/// @brief What an NVFP4 block's elements are multiplied by before rounding into E2M1 (TE's
/// `compute_nvfp4_scaling_coefficient`, fp32 path): min(1 / (block scale * (1 / S_enc)), FLT_MAX).
MPX_HOST_DEVICE constexpr float nvfp4_element_multiplier(Encoded<Float8E4M3> block_scale,
                                                         float global_encode_scale) {
  const float global_decode_scale = 1.0f / global_encode_scale;
  const float multiplier = 1.0f / (static_cast<float>(block_scale) * global_decode_scale);
  return multiplier > std::numeric_limits<float>::max() ? std::numeric_limits<float>::max() : multiplier;
}

/// @brief The signs of `random_hadamard_16`'s diagonal, bit i for element i (1: negated). Fixed, so that
/// every tensor and step is transformed alike (both operands of a GEMM must be).
inline constexpr std::uint16_t hadamard_sign_mask = 0b1001'0111'0010'1101;

/// @brief NVFP4's random Hadamard transform of 16 consecutive values, in place: v = (1/4) H16 (s * v),
/// H16 the Sylvester-ordered Hadamard matrix of +-1 entries and s the signs of `hadamard_sign_mask`.
/// The matrix is orthogonal, so two vectors' dot product is that of their transforms (up to fp32
/// rounding): a GEMM whose operands are both transformed along K computes the same product, with the
/// outliers of each 16-value run spread over all 16 before quantization. Computed as four butterfly
/// stages in fp32, then the exact multiplication by 1/4.
MPX_HOST_DEVICE constexpr void random_hadamard_16(float* v) {
  for (int i = 0; i < 16; ++i) {
    if ((hadamard_sign_mask >> i) & 1u) v[i] = -v[i];
  }
  for (int half = 1; half < 16; half *= 2) {
    for (int first = 0; first < 16; first += 2 * half) {
      for (int j = first; j < first + half; ++j) {
        const float a = v[j], b = v[j + half];
        v[j] = a + b;
        v[j + half] = a - b;
      }
    }
  }
  for (int i = 0; i < 16; ++i) v[i] *= 0.25f;
}

namespace detail {
inline constexpr std::string_view nvfp4_prefix = "nvfp4";
inline constexpr std::string_view one_d = "_1d";
inline constexpr std::string_view no_sr = "_nosr";
inline constexpr std::string_view no_rht = "_norht";
inline constexpr std::string_view no_text = "";
template <bool On, const std::string_view& Off>
struct suffix_unless {
  static constexpr std::string_view value = On ? no_text : Off;
};
// The names of MX elements and roundings, as variables (objects `joined` can refer to).
template <class Element>
inline constexpr std::string_view mx_element_name = std::is_same_v<Element, Float8E4M3>   ? "mxfp8"
                                                    : std::is_same_v<Element, Float8E5M2> ? "mxfp8_e5m2"
                                                    : std::is_same_v<Element, Float6E2M3> ? "mxfp6_e2m3"
                                                    : std::is_same_v<Element, Float6E3M2> ? "mxfp6_e3m2"
                                                                                          : "mxfp4";
template <E8M0Rounding Rounding>
inline constexpr std::string_view mx_rounding_suffix = Rounding == E8M0Rounding::RoundUp ? "_roundup"
                                                       : Rounding == E8M0Rounding::RCeil ? "_rceil"
                                                                                         : "";
// (Names are joined inside consteval functions: nvcc 13 hands a `joined` named in a static member's
// initializer to the host compiler with pointers where its parameters are references.)
template <class Element, E8M0Rounding Rounding>
consteval std::string_view mx_name() {
  return joined<mx_element_name<Element>, mx_rounding_suffix<Rounding>>::value;
}
template <bool TwoDimensionalWeights, bool StochasticGradients, bool HadamardWgrad>
consteval std::string_view nvfp4_name() {
  return joined<nvfp4_prefix, suffix_unless<TwoDimensionalWeights, one_d>::value,
                suffix_unless<StochasticGradients, no_sr>::value,
                suffix_unless<HadamardWgrad, no_rht>::value>::value;
}
}  // namespace detail

/// @brief OCP MX block scaling: 32 consecutive elements along the reduction dimension share an E8M0
/// scale. MXFP8 is `MxScaling<Float8E4M3>` (E5M2 gradients under `MxScaling<Float8E5M2>`), MXFP6
/// `MxScaling<Float6E2M3>` or `<Float6E3M2>`, MXFP4 `MxScaling<Float4E2M1>`.
/// @tparam Element  the elements' format: E4M3, E5M2, E2M3, E3M2 or E2M1
/// @tparam Rounding how each block's scale is rounded from its amax (`E8M0Rounding::Floor`, the
///                  specification's, by default)
template <class Element = Float8E4M3, E8M0Rounding Rounding = E8M0Rounding::Floor>
struct MxScaling {
  static_assert(std::is_same_v<Element, Float8E4M3> || std::is_same_v<Element, Float8E5M2> ||
                    std::is_same_v<Element, Float6E2M3> || std::is_same_v<Element, Float6E3M2> ||
                    std::is_same_v<Element, Float4E2M1>,
                "mpx::MxScaling<Element>: the OCP MX element formats are mpx::Float8E4M3, mpx::Float8E5M2, "
                "mpx::Float6E2M3, mpx::Float6E3M2 and mpx::Float4E2M1");
  using element_format = Element;                     ///< the elements' format
  using scale_format = Float8E8M0;                    ///< each block's scale
  static constexpr int block_size = 32;               ///< elements per block, along K
  static constexpr E8M0Rounding rounding = Rounding;  ///< the scale's rounding
  static constexpr int weight_block_rows = 1;         ///< weights in 1 x 32 blocks too
  /// "mxfp8", "mxfp8_e5m2", "mxfp6_e2m3", "mxfp6_e3m2" or "mxfp4", then "_roundup" or "_rceil" for
  /// those roundings
  static constexpr std::string_view name = detail::mx_name<Element, Rounding>();
};

/// @brief NVIDIA's NVFP4 (Transformer Engine's `NVFP4BlockScaling`): E2M1 elements, 16 per block along
/// K with an E4M3 scale, and an fp32 global scale per tensor (S_enc = 448 * 6 / amax).
/// @tparam TwoDimensionalWeights weights in 16x16 blocks (one scale per tile, so that W and W^T are
///                               quantized alike), as TE's recipe does by default
/// @tparam StochasticGradients  gradients rounded into E2M1 stochastically (TE's default for them)
/// @tparam HadamardWgrad        the 16x16 random Hadamard transform on the weight-gradient GEMM's
///                              operands (TE's default)
template <bool TwoDimensionalWeights = true, bool StochasticGradients = true, bool HadamardWgrad = true>
struct Nvfp4Scaling {
  using element_format = Float4E2M1;                                        ///< the elements' format
  using scale_format = Float8E4M3;                                          ///< each block's scale
  static constexpr int block_size = 16;                                     ///< elements per block, along K
  static constexpr bool two_dimensional_weights = TwoDimensionalWeights;    ///< 16x16 weight blocks
  static constexpr bool stochastic_gradients = StochasticGradients;         ///< SR for gradients
  static constexpr bool hadamard_wgrad = HadamardWgrad;                     ///< RHT on wgrad operands
  static constexpr int weight_block_rows = TwoDimensionalWeights ? 16 : 1;  ///< weight blocks' height
  /// "nvfp4", with "_1d" (1 x 16 weight blocks), "_nosr" (gradients rounded to nearest) and "_norht"
  /// (no Hadamard transform) for the tricks turned off
  static constexpr std::string_view name =
      detail::nvfp4_name<TwoDimensionalWeights, StochasticGradients, HadamardWgrad>();
};

/// @brief FP8 with 128-element blocks (DeepSeek-V3; Transformer Engine's `Float8BlockScaling`): E4M3
/// elements, 1x128 blocks along K for activations and gradients, 128x128 for weights, each with an
/// fp32 scale = 448 / block amax (`current_scale`), rounded down to a power of two by default.
/// @tparam PowerOfTwoScales scales rounded down to a power of two (TE's default)
template <bool PowerOfTwoScales = true>
struct Fp8BlockScaling {
  using element_format = Float8E4M3;                             ///< the elements' format
  using scale_format = Float;                                    ///< each block's scale, fp32
  static constexpr int block_size = 128;                         ///< elements per block, along K
  static constexpr bool power_of_two_scales = PowerOfTwoScales;  ///< scales rounded down to 2^k
  static constexpr int weight_block_rows = 128;                  ///< weights in 128 x 128 blocks
  /// "fp8block", or "fp8block_fp32scales" with scales not rounded to powers of two
  static constexpr std::string_view name = PowerOfTwoScales ? "fp8block" : "fp8block_fp32scales";
};

/// @brief Whether a recipe transforms the weight gradient's operands (`Nvfp4Scaling`'s
/// `HadamardWgrad`; false for the others).
template <class Recipe>
consteval bool hadamard_wgrad_of() {
  if constexpr (requires { Recipe::hadamard_wgrad; }) {
    return Recipe::hadamard_wgrad;
  } else {
    return false;
  }
}

/// @brief Whether a recipe rounds gradients stochastically (`Nvfp4Scaling`'s `StochasticGradients`;
/// false for the others).
template <class Recipe>
consteval bool stochastic_gradients_of() {
  if constexpr (requires { Recipe::stochastic_gradients; }) {
    return Recipe::stochastic_gradients;
  } else {
    return false;
  }
}

}  // namespace mpx
