// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `Precision<Compute, Master>`: the precision policy a model, its layers and its optimizer
/// are instantiated with.

#include <string_view>
#include <type_traits>

#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx {

namespace detail {
template <class Compute, class Master>
struct precision_name {
  static constexpr std::string_view value = "custom";
};
template <>
struct precision_name<Double, Double> {
  static constexpr std::string_view value = "fp64";
};
template <>
struct precision_name<Float, Float> {
  static constexpr std::string_view value = "fp32";
};
template <>
struct precision_name<TF32, Float> {
  static constexpr std::string_view value = "tf32";
};
template <>
struct precision_name<Half, Float> {
  static constexpr std::string_view value = "fp16_mixed";
};
template <>
struct precision_name<BFloat16, Float> {
  static constexpr std::string_view value = "bf16_mixed";
};
template <>
struct precision_name<Half, Half> {
  static constexpr std::string_view value = "fp16_pure";
};
template <>
struct precision_name<BFloat16, BFloat16> {
  static constexpr std::string_view value = "bf16_pure";
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

/// @brief A precision policy: matmuls and activations in `Compute`, parameters and optimizer state in
/// `Master`, accumulation in fp32 (fp64 when `Compute` is `Double`).
///
/// @tparam Compute the type weights are cast to for compute and activations are stored in.
/// @tparam Master  the type parameters live in; must represent every `Compute` value.
///
/// Misuse is a compile error whose message names the fix (see docs/precision.md).
template <class Compute, class Master = Float>
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

  /// Type of the weights' compute copy and of activations.
  using compute_type = Compute;
  /// Type of parameters and optimizer state.
  using master_type = Master;
  /// Type that matmul products and sums, reductions and losses accumulate in.
  using accumulate_type = std::conditional_t<std::is_same_v<Compute, Double>, Double, Float>;

  /// Short name used in records and logs ("bf16_mixed", "fp32", ...).
  static constexpr std::string_view name = detail::precision_name<Compute, Master>::value;
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

namespace detail {
template <class T>
struct is_precision : std::false_type {};
template <class C, class M>
struct is_precision<Precision<C, M>> : std::true_type {};
}  // namespace detail

/// @brief Satisfied by the specialisations of `mpx::Precision`.
template <class P>
concept PrecisionPolicy = detail::is_precision<P>::value && requires {
  typename P::compute_type;
  typename P::master_type;
  typename P::accumulate_type;
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
