// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `GemmAccumulation<Fprop, Dgrad, Wgrad>`: which accumulator model (numeric/accumulation.hpp)
/// each of a Linear layer's three FP8 GEMMs sums its products with, as Transformer Engine's recipes
/// choose `use_split_accumulator` per GEMM (`fp8_gemm_fprop`, `fp8_gemm_dgrad`, `fp8_gemm_wgrad`).

#include <type_traits>

#include "mpx/numeric/accumulation.hpp"

namespace mpx {

/// @brief The accumulator model of each GEMM of an FP8 Linear layer.
/// @tparam Fprop the forward GEMM's (y = x W^T)
/// @tparam Dgrad the input gradient's (dx = dy W)
/// @tparam Wgrad the weight gradient's (dW = dy^T x)
template <AccumulationModel Fprop, AccumulationModel Dgrad, AccumulationModel Wgrad>
struct GemmAccumulation {
  using fprop = Fprop;  ///< the forward GEMM's model
  using dgrad = Dgrad;  ///< the input gradient GEMM's model
  using wgrad = Wgrad;  ///< the weight gradient GEMM's model
};

/// @brief What Transformer Engine runs on Hopper (sm_90): the forward GEMM with fast accumulation,
/// dgrad and wgrad with the split accumulator promoted every 128 products (TE's recipe defaults
/// `use_split_accumulator` = False, True, True). The default of `mpx::Fp8Precision`.
using HopperGemmAccumulation =
    GemmAccumulation<HopperFp8FastAccumulation, PromotedAccumulation<>, PromotedAccumulation<>>;

/// @brief Round-to-nearest fp32 sums in all three GEMMs (the CPU's fp32 GEMM, up to its order):
/// a step 4-9 times faster on the CPU than under Hopper's emulated accumulator (small / wide MLP), and what a
/// machine with exact fp32 accumulation would give.
using Fp32GemmAccumulation = GemmAccumulation<Fp32Accumulation, Fp32Accumulation, Fp32Accumulation>;

namespace detail {
template <class T>
struct is_gemm_accumulation : std::false_type {};
template <class Fprop, class Dgrad, class Wgrad>
struct is_gemm_accumulation<GemmAccumulation<Fprop, Dgrad, Wgrad>> : std::true_type {};
}  // namespace detail

}  // namespace mpx
