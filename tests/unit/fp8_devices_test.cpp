// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Where FP8 trains: every FP8 precision on the CPU, whose GEMMs read any layout (so an FP8 Linear
// keeps no transposed codes there), and the run-time choice the examples make with it.

#include <string>
#include <type_traits>

#include <catch2/catch.hpp>

#include <mpx/experiment/data_parallel_job.hpp>
#include <mpx/mpx.hpp>

namespace {
namespace MPX_UNITY_ID {

using Fp8 = mpx::fp8_hybrid<mpx::DelayedScaling<>>;

// The CPU's FP8 GEMMs need no K-major operands: its Linear's FP8 state holds no transposes.
static_assert(!mpx::Backend<mpx::Host>::fp8_gemm_needs_k_major_operands);
static_assert(std::is_empty_v<decltype(mpx::nn::detail::LinearFp8State<Fp8, mpx::Host>{}.transposed)>);

TEST_CASE("Every precision, FP8 included, trains on the CPU", "[fp8][experiment]") {
  CHECK(mpx::experiment::trains_on<Fp8, mpx::Host>());
  CHECK(mpx::experiment::trains_on<mpx::fp8_hybrid<mpx::CurrentScaling<>>, mpx::Host>());
  CHECK(mpx::experiment::trains_on<mpx::bf16_mixed, mpx::Host>());
  CHECK(mpx::experiment::fp8_unavailable_reason<mpx::Host>().empty());
  CHECK_NOTHROW(mpx::experiment::require_precision_on_device<mpx::Host>("fp8"));
  CHECK_NOTHROW(mpx::experiment::require_precision_on_device<mpx::Host>("fp8_current"));
}

}  // namespace MPX_UNITY_ID
}  // namespace
