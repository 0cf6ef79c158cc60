// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Counter-based random bits (Random123 Philox4x32-10): a pure function of
/// (seed, stream, index), so the CPU and a GPU kernel draw identical bits for the same element
/// without sharing any generator state.

#include <cstdint>

#include <Random123/philox.h>

#include "mpx/config.hpp"

namespace mpx {

/// @brief Four 32-bit words of Philox4x32-10 output for one counter block.
///
/// The 128-bit counter is (block, stream) as four little-endian 32-bit words and the 64-bit key is the
/// seed. `random_bits` hands out the words of a block to four consecutive indices, so a kernel that
/// processes four elements per thread makes one Philox call per thread.
MPX_HOST_DEVICE inline r123::Philox4x32::ctr_type philox_block(std::uint64_t seed, std::uint64_t stream,
                                                               std::uint64_t block) {
  const r123::Philox4x32::ctr_type counter = {
      {static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32),
       static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)}};
  const r123::Philox4x32::key_type key = {
      {static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)}};
  return r123::Philox4x32{}(counter, key);
}

/// @brief 32 random bits for element `index` of stream `stream` under `seed`.
MPX_HOST_DEVICE inline std::uint32_t random_bits(std::uint64_t seed, std::uint64_t stream,
                                                 std::uint64_t index) {
  return philox_block(seed, stream, index >> 2).v[index & 3];
}

/// @brief Maps 32 random bits to a float uniform on [0, 1) with 24 bits of resolution.
MPX_HOST_DEVICE inline float uniform_from_bits(std::uint32_t bits) {
  return static_cast<float>(bits >> 8) * 0x1p-24f;
}

/// @brief `low + (high - low) * uniform_from_bits(bits)` in double: a value uniform on [low, high).
///
/// Each operation rounds on its own on every compiler: nvcc contracts `a * b + c` into an FMA by
/// default (`--fmad=true`), which would give device-initialised weights other bits than the host's.
MPX_HOST_DEVICE inline double uniform_between(double low, double high, std::uint32_t bits) {
  const double u = uniform_from_bits(bits);
#if MPX_DEVICE_PASS
  return __dadd_rn(low, __dmul_rn(high - low, u));
#else
  return low + (high - low) * u;
#endif  // MPX_DEVICE_PASS
}

}  // namespace mpx
