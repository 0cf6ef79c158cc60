// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Precision<Compute, Master>`: the precision policy a model, its layers and its optimizer
/// are instantiated with.

#include <algorithm>
#include <array>
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
// The concatenation of string constants, as a constant, NUL-terminated like the literals it joins
// (so that `name.data()` can be printed with %s).
template <const std::string_view&... Parts>
struct joined {
  static constexpr auto chars = [] {
    std::array<char, (Parts.size() + ... + 0) + 1> out{};  // the last stays '\0'
    auto next = out.begin();
    ((next = std::copy(Parts.begin(), Parts.end(), next)), ...);
    return out;
  }();
  static constexpr std::string_view value{chars.data(), chars.size() - 1};
};
inline constexpr std::string_view mixed_suffix = "_mixed";
inline constexpr std::string_view mixed_infix = "_mixed_";
inline constexpr std::string_view pure_suffix = "_pure";
inline constexpr std::string_view pure_nearest_suffix = "_pure_nearest";

// A precision's name, from its formats' names: the compute format's name where the master weights are
// the compute weights at full width ("fp32", "tf32", "fp64"); "<compute>_pure" (stochastic updates) or
// "<compute>_pure_nearest" where narrow weights are their own masters; "<compute>_mixed" over fp32
// masters, "<compute>_mixed_<master>" over others.
template <class Compute, class Master, class UpdateRounding>
consteval std::string_view precision_name() {
  if constexpr (!NumericTag<Compute> || !NumericTag<Master>) {
    return "custom";
  } else {
    if constexpr (std::is_same_v<storage_t<Compute>, storage_t<Master>> &&
                  std::is_same_v<storage_t<Master>, accumulate_t<Master>>) {
      return numeric_traits<Compute>::name;
    } else if constexpr (std::is_same_v<Compute, Master>) {
      return std::is_same_v<UpdateRounding, RoundStochastic>
                 ? joined<numeric_traits<Compute>::name, pure_suffix>::value
                 : joined<numeric_traits<Compute>::name, pure_nearest_suffix>::value;
    } else if constexpr (std::is_same_v<Master, Float>) {
      return joined<numeric_traits<Compute>::name, mixed_suffix>::value;
    } else {
      return joined<numeric_traits<Compute>::name, mixed_infix, numeric_traits<Master>::name>::value;
    }
  }
}

// Facts of a format that the checks below ask of any argument: a non-tag has none of them, so that it
// reports "not a precision tag" once rather than a cascade (a concept's conjunction stops at the first
// false part, so the trait is never instantiated for a non-tag).
// A format kept in another format's storage (TF32 in fp32's): it cannot hold weights.
template <class Tag>
concept BorrowsStorage = NumericTag<Tag> && !owns_storage_v<Tag>;
// A format that computes in fp64 (mpx::Double), and one stored in fp64.
template <class Tag>
concept ComputesInFp64 = NumericTag<Tag> && std::is_same_v < accumulate_t<Tag>,
double > ;
template <class Tag>
concept StoredInFp64 = NumericTag<Tag> && std::is_same_v < storage_t<Tag>,
double > ;

// Evaluated only for valid tags, so that a non-tag argument reports one error, not a cascade; a
// master in borrowed storage (TF32) and an fp64 compute type without an fp64 master have their own
// messages, so they are skipped here too (this message's advice, Master = mpx::Float, would be wrong
// for them).
template <class Master, class Compute>
consteval bool master_represents_compute() {
  if constexpr (NumericTag<Master> && NumericTag<Compute> && !BorrowsStorage<Master> &&
                !ComputesInFp64<Compute>) {
    return represents_v<Master, Compute>;
  } else {
    return true;
  }
}

// A master type stochastic rounding can target: fp16 or bf16 (a non-tag is reported elsewhere).
template <class Master>
concept StochasticRoundingTarget = !NumericTag<Master> || SixteenBitTag<Master>;
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
  static_assert(NumericTag<Compute> || detail::has_numeric_traits<Compute>,
                "mpx::Precision<Compute, Master>: Compute must be a precision tag "
                "(mpx::Double, mpx::Float, mpx::TF32, mpx::Half or mpx::BFloat16), "
                "e.g. mpx::Precision<mpx::BFloat16>; for a new format, specialise "
                "mpx::numeric_traits first");
  static_assert(detail::checked_format<Compute>::value);  // names what a format of your own lacks
  static_assert(!std::is_same_v<Compute, Float8E4M3> && !std::is_same_v<Compute, Float8E5M2>,
                "mpx::Precision<FP8 format>: FP8 values are GEMM operands scaled per tensor by a recipe, "
                "and activations between layers need a 16-bit type; write "
                "mpx::fp8_hybrid<mpx::DelayedScaling<>> (<mpx/policy/fp8_precision.hpp>)");
  static_assert(NumericTag<Master> || detail::has_numeric_traits<Master>,
                "mpx::Precision<Compute, Master>: Master must be a precision tag; "
                "leave it out to get fp32 master weights (mpx::Float)");
  static_assert(detail::checked_format<Master>::value);
  static_assert(!detail::BorrowsStorage<Master>,
                "mpx::Precision<Compute, Master>: TF32 is a Tensor Core compute mode, not a "
                "storage type (it is kept in fp32's storage), so it cannot hold master weights; write "
                "mpx::Precision<mpx::TF32> (master weights in mpx::Float)");
  static_assert(!(detail::ComputesInFp64<Compute> && !detail::StoredInFp64<Master>),
                "mpx::Precision<mpx::Double, Master>: fp64 compute needs fp64 master weights; "
                "write mpx::Precision<mpx::Double, mpx::Double> (alias mpx::fp64)");
  static_assert(!(detail::StoredInFp64<Master> && !detail::ComputesInFp64<Compute>),
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
  static_assert(!std::is_same_v<UpdateRounding, RoundStochastic> || detail::StochasticRoundingTarget<Master>,
                "mpx::Precision<Compute, Master, mpx::RoundStochastic>: stochastic rounding is for fp16 "
                "or bf16 master weights (the pure modes); fp32 and fp64 masters hold the update "
                "exactly, so leave UpdateRounding out (mpx::RoundNearest)");

  /// Type of the weights' compute copy and of activations.
  using compute_type = Compute;
  /// Type of parameters and optimizer state.
  using master_type = Master;
  /// Type that matmul products and sums, reductions, losses, gradients and optimizer state accumulate
  /// in: the tag of the compute format's `accumulate_type` (fp32; fp64 under fp64).
  using accumulate_type = tag_of_t<accumulate_t<Compute>>;
  /// How optimizers round updated weights into `master_type` (`RoundNearest` or `RoundStochastic`).
  using update_rounding = UpdateRounding;

  /// Short name used in records and logs ("bf16_mixed", "fp32", "bf16_pure", ...).
  static constexpr std::string_view name = detail::precision_name<Compute, Master, UpdateRounding>();
  /// True when master weights are a separate, wider copy of the compute weights (their storage types
  /// differ; TF32 compute reads fp32 masters as they are).
  static constexpr bool has_master_copy = !std::is_same_v<storage_t<Compute>, storage_t<Master>>;
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

// `accumulate_t<P>` (numeric/traits.hpp) of a precision: the element type of its accumulate_type.
namespace detail {
template <class C, class M, class R>
struct accumulate_of<Precision<C, M, R>> {
  using type = storage_t<typename Precision<C, M, R>::accumulate_type>;
};
}  // namespace detail

}  // namespace mpx
