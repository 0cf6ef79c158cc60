// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Converting host tensors between precisions with a chosen rounding.

#include <cstdint>
#include <type_traits>

#include "mpx/numeric/random.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Rounds every element of `source` into precision `To` and writes it to `destination`
/// (same shape). With `RoundNearest`, TF32 uses the Tensor Core rule (see `round_tf32`).
template <NumericTag To, FloatingElement From>
void round_into(const Tensor<From, Host>& source, Tensor<storage_t<To>, Host>& destination,
                RoundNearest = {}) {
  require_shape("mpx::round_into", "destination", destination.shape(), source.shape());
  const From* in = source.data();
  storage_t<To>* out = destination.data();
  const std::int64_t count = source.numel();
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = round_to<To>(static_cast<accumulate_t<From>>(in[i]));
  }
}

/// @brief Stochastic rounding of fp32 into fp16 or bf16: element i (row-major) uses
/// `random_bits(rounding.seed, rounding.stream, i)`, exactly as the CUDA kernels do.
template <SixteenBitTag To>
void round_into(const Tensor<float, Host>& source, Tensor<storage_t<To>, Host>& destination,
                RoundStochastic rounding) {
  require_shape("mpx::round_into", "destination", destination.shape(), source.shape());
  const float* in = source.data();
  storage_t<To>* out = destination.data();
  const std::int64_t count = source.numel();
  for (std::int64_t block = 0; block * 4 < count; ++block) {
    const auto bits = philox_block(rounding.seed, rounding.stream, static_cast<std::uint64_t>(block));
    for (std::int64_t lane = 0; lane < 4 && block * 4 + lane < count; ++lane) {
      const std::int64_t i = block * 4 + lane;
      out[i] = round_stochastic<To>(in[i], bits.v[lane]);
    }
  }
}

/// @brief A new tensor holding `source` rounded into precision `To`.
/// @code
/// auto weights_bf16 = mpx::convert<mpx::BFloat16>(weights_fp32);
/// auto sr = mpx::convert<mpx::BFloat16>(weights_fp32, mpx::RoundStochastic{.seed = 42});
/// @endcode
template <NumericTag To, FloatingElement From, class Rounding = RoundNearest>
[[nodiscard]] Tensor<storage_t<To>, Host> convert(const Tensor<From, Host>& source, Rounding rounding = {}) {
  auto destination = Tensor<storage_t<To>, Host>::uninitialized(source.shape());
  round_into<To>(source, destination, rounding);
  return destination;
}

}  // namespace mpx
