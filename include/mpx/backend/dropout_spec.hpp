// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief What the dropout kernels of both backends share: `DropoutMask` (the key a mask is a
/// function of), the map from that key to Philox counters, the keep test and the scaling of a kept
/// element, and the operand checks. The CPU and the CUDA kernel call these same functions, so they
/// draw the same mask bit for bit.
///
/// ## The key -> Philox counter mapping
/// A mask is a function of (seed, layer stream, step, micro-batch, element); nothing of it is stored.
/// Two Philox4x32-10 calls derive the 32 random bits of element `i`:
///
/// 1. `L = philox_block(seed, stream, step)`: key = seed, counter = (step, stream) as four 32-bit
///    words (`random_bits`' layout). For one seed, Philox is a bijection of the 128-bit counter, so
///    distinct (stream, step) pairs give distinct 128-bit values L.
/// 2. `B = Philox4x32(key = (L0, L1), counter = (i / 4, micro_batch, L2, L3))`; element i takes word
///    `i % 4` of B.
///
/// So for one seed, distinct (layer, step, micro-batch, element) never reach the same Philox input:
/// distinct (layer, step) differ in all of L, which is the whole key and half the counter of the
/// second call, and within one (layer, step) the micro-batch and the element block fill the rest of
/// the counter. The price is the field widths of the second counter: an element block is 32 bits
/// (at most 2^34 elements per tensor) and a micro-batch index 32 bits; both are host values and are
/// checked there (`validate_dropout`). The step has all 64 bits and may be any value, so a kernel that
/// reads it from device memory has nothing to check. Step 1 reuses the counters of
/// `fill_uniform(seed, stream)`, i.e. of the layer's own stream, which only the layer draws from
/// (a dropout layer has no parameters).

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <Random123/philox.h>

#include "mpx/config.hpp"
#include "mpx/error.hpp"
#include "mpx/numeric/random.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx {

/// @brief Everything a dropout mask is a function of: the drop probability and the key
/// (seed, layer stream, step, micro-batch). Forward and backward pass the same one, so backward
/// regenerates forward's mask instead of storing it.
struct DropoutMask {
  float p = 0.0f;                      ///< probability of dropping an element, in [0, 1)
  std::uint64_t seed = 0;              ///< the model's seed (from `initialize`)
  std::uint64_t stream = 0;            ///< the layer's random stream (from `initialize`)
  const std::int64_t* step = nullptr;  ///< the step count, in the memory of the kernel's device; read
                                       ///< when the kernel runs (so a replayed CUDA graph sees each step's)
  std::int64_t micro_batch = 0;        ///< the micro-batch within the step, in [0, 2^32)
};

/// @brief The most elements one dropout call draws for: element blocks of four are 32-bit counters.
inline constexpr std::int64_t dropout_max_elements = std::int64_t{1} << 34;

/// @brief Level 1 of the mapping: the 128 bits that key the second Philox call of every element of
/// one (seed, stream, step). Any step value is valid.
MPX_HOST_DEVICE inline r123::Philox4x32::ctr_type dropout_step_words(std::uint64_t seed, std::uint64_t stream,
                                                                     std::int64_t step) {
  return philox_block(seed, stream, static_cast<std::uint64_t>(step));
}

/// @brief Level 2 of the mapping: the random words of elements 4 block .. 4 block + 3.
MPX_HOST_DEVICE inline r123::Philox4x32::ctr_type dropout_block_bits(
    const r123::Philox4x32::ctr_type& step_words, std::uint32_t micro_batch, std::uint32_t block) {
  const r123::Philox4x32::ctr_type counter = {{block, micro_batch, step_words.v[2], step_words.v[3]}};
  const r123::Philox4x32::key_type key = {{step_words.v[0], step_words.v[1]}};
  return r123::Philox4x32{}(counter, key);
}

/// @brief An element is dropped when its 32 random bits are below this threshold, round(p 2^32):
/// the drop probability is threshold / 2^32, which is p exactly for every p that is a multiple of
/// 2^-32 (every float p >= 2^-8, e.g. 0.1f and 0.5f) and within 2^-33 of it otherwise.
[[nodiscard]] inline std::uint32_t dropout_threshold(float p) noexcept {
  return static_cast<std::uint32_t>(std::llround(static_cast<double>(p) * 4294967296.0));
}

/// @brief The keep probability 1 - p, computed in double and rounded once into the accumulate type `Acc`
/// (fp32; fp64 under `mpx::fp64`): the divisor of a kept element.
template <class Acc>
[[nodiscard]] Acc dropout_keep_probability(float p) noexcept {
  return static_cast<Acc>(1.0 - static_cast<double>(p));
}

/// @brief One output element in the accumulate type: x / keep when kept, x * 0 when dropped (so inf and
/// NaN still propagate, as PyTorch's `x * mask * scale`). The division is correctly rounded on
/// both sides (no fast-math reciprocal on the GPU).
template <class Acc>
MPX_HOST_DEVICE inline Acc dropout_element(Acc x, bool kept, Acc keep) {
  if (!kept) return x * Acc(0);
#if MPX_DEVICE_PASS
  if constexpr (std::is_same_v<Acc, float>) {
    return __fdiv_rn(x, keep);
  } else {
    return __ddiv_rn(x, keep);
  }
#else
  return x / keep;
#endif  // MPX_DEVICE_PASS
}

/// @brief Throws naming `where` unless `output` has `input`'s shape, p is in [0, 1), the tensor has
/// at most `dropout_max_elements` elements, the micro-batch is in [0, 2^32) and a step is given.
template <class X, class Y>
void validate_dropout(const char* where, const X& input, const Y& output, const DropoutMask& mask) {
  require_shape(where, "output", output.shape(), input.shape());
  if (!(mask.p >= 0.0f && mask.p < 1.0f)) {
    throw invalid_argument(detail::concat(where, ": p = ", mask.p, " is not in [0, 1)"));
  }
  if (input.numel() > dropout_max_elements) {
    throw invalid_argument(detail::concat(where, ": ", input.numel(), " elements (shape ", input.shape(),
                                          "); a dropout draw covers at most 2^34"));
  }
  if (mask.micro_batch < 0 || mask.micro_batch > std::int64_t{0xffffffff}) {
    throw invalid_argument(
        detail::concat(where, ": micro-batch ", mask.micro_batch, " is outside [0, 2^32)"));
  }
  if (mask.step == nullptr)
    throw invalid_argument(detail::concat(where, ": no step count to key the mask by"));
}

}  // namespace mpx
