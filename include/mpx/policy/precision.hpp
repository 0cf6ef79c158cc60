// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Precision<Compute, Master>`: the precision policy a model, its layers and its optimizer
/// are instantiated with.

#include <string_view>
#include <type_traits>

#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

/// @brief How optimizers round updated master weights of type `Master` unless told otherwise:
/// stochastically for fp16/bf16 masters (an update smaller than half a unit in the last place would
/// otherwise round back to the old weight and be lost), to nearest for fp32/fp64 (where the update's
/// arithmetic is already exact in the master type).
template <class Master>
using default_update_rounding_t = std::conditional_t<SixteenBitTag<Master>, RoundStochastic, RoundNearest>;

namespace detail {
template <class Compute, class Master, class UpdateRounding>
struct precision_name {
  static constexpr std::string_view value = "custom";
};
template <>
struct precision_name<Double, Double, RoundNearest> {
  static constexpr std::string_view value = "fp64";
};
template <>
struct precision_name<Float, Float, RoundNearest> {
  static constexpr std::string_view value = "fp32";
};
template <>
struct precision_name<TF32, Float, RoundNearest> {
  static constexpr std::string_view value = "tf32";
};
template <>
struct precision_name<Half, Float, RoundNearest> {
  static constexpr std::string_view value = "fp16_mixed";
};
template <>
struct precision_name<BFloat16, Float, RoundNearest> {
  static constexpr std::string_view value = "bf16_mixed";
};
template <>
struct precision_name<Half, Half, RoundStochastic> {
  static constexpr std::string_view value = "fp16_pure";
};
template <>
struct precision_name<Half, Half, RoundNearest> {
  static constexpr std::string_view value = "fp16_pure_nearest";
};
template <>
struct precision_name<BFloat16, BFloat16, RoundStochastic> {
  static constexpr std::string_view value = "bf16_pure";
};
template <>
struct precision_name<BFloat16, BFloat16, RoundNearest> {
  static constexpr std::string_view value = "bf16_pure_nearest";
};

// Evaluated only for valid tags, so that a non-tag argument reports one error, not a cascade; a TF32
// master and an fp64 compute type without an fp64 master have their own messages, so they are
// skipped here too (this message's advice, Master = mpx::Float, would be wrong for them).
template <class Master, class Compute>
consteval bool master_represents_compute() {
  if constexpr (NumericTag<Master> && NumericTag<Compute> && !std::is_same_v<Master, TF32> &&
                !std::is_same_v<Compute, Double>) {
    return represents_v<Master, Compute>;
  } else {
    return true;
  }
}
}  // namespace detail

/// @brief A precision policy: matmuls and activations in `Compute`, parameters in `Master`,
/// accumulation, gradients and optimizer state in fp32 (fp64 when `Compute` is `Double`).
///
/// @tparam Compute the type weights are cast to for compute and activations are stored in.
/// @tparam Master  the type parameters live in; must represent every `Compute` value.
/// @tparam UpdateRounding how the optimizer rounds updated weights into `Master`: `mpx::RoundNearest`
///         or `mpx::RoundStochastic` (the default for fp16/bf16 masters, the "pure" modes).
///
/// Misuse is a compile error whose message names the fix (see docs/precision.md).
template <class Compute, class Master = Float, class UpdateRounding = default_update_rounding_t<Master>>
struct Precision {
  static_assert(NumericTag<Compute>,
                "mpx::Precision<Compute, Master>: Compute must be a precision tag "
                "(mpx::Double, mpx::Float, mpx::TF32, mpx::Half or mpx::BFloat16), "
                "e.g. mpx::Precision<mpx::BFloat16>; for a new format, specialise "
                "mpx::numeric_traits first");
  static_assert(NumericTag<Master>,
                "mpx::Precision<Compute, Master>: Master must be a precision tag; "
                "leave it out to get fp32 master weights (mpx::Float)");
  static_assert(!std::is_same_v<Master, TF32>,
                "mpx::Precision<Compute, Master>: TF32 is a Tensor Core compute mode, not a "
                "storage type, so it cannot hold master weights; write mpx::Precision<mpx::TF32> "
                "(master weights in mpx::Float)");
  static_assert(!(std::is_same_v<Compute, Double> && !std::is_same_v<Master, Double>),
                "mpx::Precision<mpx::Double, Master>: fp64 compute needs fp64 master weights; "
                "write mpx::Precision<mpx::Double, mpx::Double> (alias mpx::fp64)");
  static_assert(!(std::is_same_v<Master, Double> && !std::is_same_v<Compute, Double>),
                "mpx::Precision<Compute, mpx::Double>: optimizer updates accumulate in fp32 unless the "
                "compute type is fp64, so fp64 master weights would be rounded every step; use "
                "mpx::Precision<Compute> (fp32 master) or mpx::fp64");
  static_assert(detail::master_represents_compute<Master, Compute>(),
                "mpx::Precision<Compute, Master>: the master type is narrower than the compute "
                "type (fewer mantissa or exponent bits), so refreshing the compute copy from it "
                "would lose information; use Master = mpx::Float (the default)");
  static_assert(std::is_same_v<UpdateRounding, RoundNearest> ||
                    std::is_same_v<UpdateRounding, RoundStochastic>,
                "mpx::Precision<Compute, Master, UpdateRounding>: UpdateRounding must be "
                "mpx::RoundNearest or mpx::RoundStochastic");
  static_assert(!(std::is_same_v<UpdateRounding, RoundStochastic> && !SixteenBitTag<Master>),
                "mpx::Precision<Compute, Master, mpx::RoundStochastic>: stochastic rounding is for fp16 "
                "or bf16 master weights (the pure modes); fp32 and fp64 masters hold the update "
                "exactly, so leave UpdateRounding out (mpx::RoundNearest)");

  /// Type of the weights' compute copy and of activations.
  using compute_type = Compute;
  /// Type of parameters and optimizer state.
  using master_type = Master;
  /// Type that matmul products and sums, reductions and losses accumulate in: the compute type's
  /// `math_t` (fp32, fp64 under fp64), the one accumulate type of mpx.
  using accumulate_type = tag_of_t<math_t<Compute>>;
  /// How optimizers round updated weights into `master_type` (`RoundNearest` or `RoundStochastic`).
  using update_rounding = UpdateRounding;

  /// Short name used in records and logs ("bf16_mixed", "fp32", "bf16_pure", ...).
  static constexpr std::string_view name = detail::precision_name<Compute, Master, UpdateRounding>::value;
  /// True when master weights are a separate, wider copy of the compute weights.
  static constexpr bool has_master_copy =
      !std::is_same_v<Compute, Master> && !(std::is_same_v<Compute, TF32> && std::is_same_v<Master, Float>);
};

/// @brief Strict fp32: no reduced precision anywhere.
using fp32 = Precision<Float>;
/// @brief fp32 storage with TF32 Tensor Core matmuls.
using tf32 = Precision<TF32>;
/// @brief fp16 compute with fp32 master weights; needs loss scaling (the default scaler is dynamic).
using fp16_mixed = Precision<Half>;
/// @brief bf16 compute with fp32 master weights; no loss scaling needed.
using bf16_mixed = Precision<BFloat16>;
/// @brief fp64 everywhere: reference runs and gradient checks.
using fp64 = Precision<Double, Double>;
/// @brief Pure bf16: weights live in bf16 (no fp32 master copy) and optimizer updates round
/// stochastically into them; gradients and optimizer state stay fp32.
using bf16_pure = Precision<BFloat16, BFloat16>;
/// @brief Pure bf16 with updates rounded to nearest: small updates are lost (for comparison).
using bf16_pure_nearest = Precision<BFloat16, BFloat16, RoundNearest>;

namespace detail {
template <class T>
struct is_precision : std::false_type {};
template <class C, class M, class R>
struct is_precision<Precision<C, M, R>> : std::true_type {};
}  // namespace detail

/// @brief Satisfied by the specialisations of `mpx::Precision`.
template <class P>
concept PrecisionPolicy = detail::is_precision<P>::value && requires {
  typename P::compute_type;
  typename P::master_type;
  typename P::accumulate_type;
  typename P::update_rounding;
};

/// @brief Element type of compute-copy weights and activations under `P` (e.g. `Eigen::bfloat16`).
template <PrecisionPolicy P>
using compute_t = storage_t<typename P::compute_type>;
/// @brief Element type of master weights and optimizer state under `P`.
template <PrecisionPolicy P>
using master_t = storage_t<typename P::master_type>;
/// @brief Type accumulation happens in under `P` (`float`, or `double` for fp64).
template <PrecisionPolicy P>
using accumulate_t = storage_t<typename P::accumulate_type>;

}  // namespace mpx
