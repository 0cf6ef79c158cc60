// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Dropout on the CPU: the reference the CUDA kernel is tested against, bit for bit.

#include <cstdint>

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/backend/dropout_spec.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu {

/// @brief y = x * keep / (1 - p), elementwise, with keep drawn from `mask`'s key (see
/// backend/dropout_spec.hpp): element i is dropped when its random bits are below
/// `dropout_threshold(p)`. Computed in the accumulate type (fp32; fp64 for double) and rounded once into T.
///
/// Forward and backward are this one operation: backward passes dy with forward's `mask`, which
/// regenerates forward's keep bits, so nothing is stored between them. Reads `*mask.step` now.
/// Throws as `validate_dropout` says (shapes, p, size, micro-batch, a missing step).
template <FloatingElement T>
void dropout(const Tensor<T, Host>& x, Tensor<T, Host>& y, const DropoutMask& mask) {
  using Acc = accumulate_t<T>;
  validate_dropout("mpx::cpu::dropout", x, y, mask);
  const std::int64_t count = x.numel();
  const auto step_words = dropout_step_words(mask.seed, mask.stream, *mask.step);
  const auto micro_batch = static_cast<std::uint32_t>(mask.micro_batch);
  const std::uint32_t threshold = dropout_threshold(mask.p);
  const Acc keep = dropout_keep_probability<Acc>(mask.p);
  const T* in = x.data();
  T* out = y.data();
  static_assert(parallel_grain % 4 == 0, "chunks must hold whole four-element blocks");
  parallel_for_chunks(count, parallel_grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t block = begin / 4; block * 4 < end; ++block) {
      const auto bits = dropout_block_bits(step_words, micro_batch, static_cast<std::uint32_t>(block));
      for (int lane = 0; lane < 4; ++lane) {
        const std::int64_t i = block * 4 + lane;
        if (i >= end) break;
        out[i] =
            round_to<tag_of_t<T>>(dropout_element(static_cast<Acc>(in[i]), bits.v[lane] >= threshold, keep));
      }
    }
  });
}

}  // namespace mpx::cpu
