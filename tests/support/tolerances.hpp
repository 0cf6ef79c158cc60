// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief How far a GEMM result may lie from an fp64 reference, per precision: the one place the
/// CPU and CUDA GEMM tests take their tolerances from. Plain constexpr code, no test framework.
///
/// The reference is computed in double from the operands *after* rounding them to the compute type
/// (that rounding is part of the GEMM's meaning, so it is not an error). What remains:
///
/// 1. Products. Two fp16, bf16 or TF32 operands have at most 11 significant bits each, so their
///    product (22 bits) is exact in fp32; fp32 and fp64 products round once, by u = eps/2.
/// 2. The sum over k, in any order (Eigen's blocking, Tensor Cores' trees, split-K): the classical
///    bound (Higham, Accuracy and Stability, Thm 3.1) for a dot product of length K in precision u is
///      |computed - exact| <= gamma_K * sum_k |a_k b_k|,   gamma_K = K u / (1 - K u).
/// 3. Scaling and the epilogue: alpha *, + beta C, + bias, one multiply by the activation's
///    derivative and the ~10 operations of gelu_tanh (its float tanh, numeric/tanh.hpp, is within
///    7 ulp; cuBLASLt's own GELU is undocumented). Counting them as 16 more roundings gives (K + 16)
///    terms.
/// 4. Rounding into D's type: at most half an ulp of D's format, i.e. u_out * |value|, and in the
///    subnormal range at most half the subnormal step min_normal * eps_out.
///
/// We charge a full eps (2u) per operation instead of u. The factor 2 covers, at once: the
/// 1 / (1 - K u) in gamma_K; Tensor Core adders that truncate instead of rounding (up to 1 ulp); the
/// fp64 reference's own rounding (as large as the result's error when the compute type is Double);
/// an activation's gain (|relu'| <= 1, |gelu_tanh'| <= 1.13) applied to the error of its input; and
/// in step 4, that D's value and the reference differ so either may sit nearer a rounding midpoint.
///
/// Two roundings are not the CPU's, and a GPU test asks for them (`OperandRounding::nearest_or_truncated`):
/// - TF32 operands. mpx rounds fp32 operands to TF32 to nearest (`cvt.rna`); a Tensor Core kernel fed
///   fp32 bits may instead ignore the 13 low bits (the CUDA Programming Guide leaves TF32's internal
///   layout implementation-defined and asks for an explicit conversion). The two differ by up to one
///   TF32 ulp, 2^-10 of the operand, so a product by up to 2 * 2^-10 of its size: eps_tf32 more in
///   `accumulate` (the comparisons double the bound).
/// - Bias gradients of DRELU_BGRAD / DGELU_BGRAD. cuBLASLt says the bias gradient is applied
///   "independently" to the matmul output, not whether it sums the values before or after rounding
///   them into D's type: each term may differ by eps_out of its size, so eps_out more when D is 16-bit.
///
/// Errors are measured against the element's *magnitude*
///   magnitude(m, n) = |alpha| sum_k |op(A)[m,k] op(B)[k,n]| + |beta C[m,n]| + |bias[n]|,
/// not against |D|, since cancellation in the sum leaves the absolute error where the terms put it.

#include <cstdint>
#include <type_traits>

#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx::test {

/// @brief How the backend under test may round the operands to the compute type (see the file comment).
enum class OperandRounding {
  nearest,               ///< to nearest, as mpx::round_to (the CPU backend)
  nearest_or_truncated,  ///< either to nearest or towards zero (a GPU's TF32 Tensor Cores)
};

/// @brief An error bound: |result - reference| <= bound(magnitude, reference).
struct GemmTolerance {
  double accumulate = 0;  ///< times the magnitude: sums, scaling and epilogue (steps 1-3)
  double output = 0;      ///< times |reference|: rounding into the result's type (step 4)
  double absolute = 0;    ///< floor for results in the subnormal range of the result's type

  [[nodiscard]] constexpr double bound(double magnitude, double reference) const noexcept {
    const double size = reference < 0 ? -reference : reference;
    return accumulate * magnitude + output * size + absolute;
  }
};

/// @brief What `OperandRounding::nearest_or_truncated` adds to `accumulate`: one TF32 ulp for TF32,
/// nothing for the other compute types (their operands are stored in the compute type already).
template <NumericTag Compute>
[[nodiscard]] constexpr double truncation_allowance(OperandRounding rounding) noexcept {
  if constexpr (std::is_same_v<Compute, TF32>) {
    return rounding == OperandRounding::nearest_or_truncated ? epsilon_v<TF32> : 0.0;
  } else {
    return 0.0;
  }
}

/// @brief Tolerance of one element of D (or of aux) for a GEMM of inner dimension `k` that computes
/// in `Compute` and stores its result in `Output` (the tag of D's element type):
/// accumulate = (k + 16) eps_acc, output = eps_out, absolute = min_normal_out * eps_out.
///
/// For example, K = 129 gives accumulate = 145 * 2^-23 ~ 1.7e-5 for fp32, fp16 and bf16 compute
/// (all accumulate in fp32), and output = 2^-10 ~ 9.8e-4 for fp16 D, 2^-7 ~ 7.8e-3 for bf16 D.
template <NumericTag Compute, NumericTag Output>
[[nodiscard]] constexpr GemmTolerance gemm_tolerance(
    std::int64_t k, OperandRounding rounding = OperandRounding::nearest) noexcept {
  constexpr double eps_acc = epsilon_v<tag_of_t<accumulate_t<Compute>>>;
  constexpr double eps_out = epsilon_v<Output>;
  constexpr double min_normal_out = min_normal_v<Output>;
  return {static_cast<double>(k + 16) * eps_acc + truncation_allowance<Compute>(rounding), eps_out,
          min_normal_out * eps_out};
}

/// @brief Tolerance of a bias gradient: a sum over `rows` accumulate-type values, each the result
/// of a length-`k` dot product and epilogue (the *BGrad epilogues: k = K, rows = M), or each an
/// operand value (BGradA / BGradB: k = 0, rows = K). Each term carries at most (k + 16) eps_acc of
/// its magnitude and the sum adds gamma_rows of the terms' sizes (<= their magnitudes), so, measured
/// against the sum of the terms' magnitudes: accumulate = (k + 16 + rows) eps_acc. The result stays
/// in the accumulate type, so nothing is added for an output rounding. `Output` is D's tag: when the
/// terms may have been rounded into it first (a *BGrad epilogue on a GPU, see the file comment) and
/// it is not the accumulate type, eps_out is added.
template <NumericTag Compute, NumericTag Output = tag_of_t<accumulate_t<Compute>>>
[[nodiscard]] constexpr GemmTolerance gemm_bias_grad_tolerance(
    std::int64_t k, std::int64_t rows, OperandRounding rounding = OperandRounding::nearest) noexcept {
  constexpr double eps_acc = epsilon_v<tag_of_t<accumulate_t<Compute>>>;
  constexpr double rounded_terms =
      std::is_same_v<Output, tag_of_t<accumulate_t<Compute>>> ? 0.0 : epsilon_v<Output>;
  const double terms = rounding == OperandRounding::nearest_or_truncated ? rounded_terms : 0.0;
  return {static_cast<double>(k + 16 + rows) * eps_acc + terms + truncation_allowance<Compute>(rounding), 0.0,
          0.0};
}

}  // namespace mpx::test
