// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Counter-based random bits (Random123 Philox4x32-10): a pure function of
/// (seed, stream, index), so the CPU and a GPU kernel draw identical bits for the same element
/// without sharing any generator state.

#include <cmath>
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

/// @brief The words of `count` consecutive Philox blocks, `philox_block(seed, stream, first_block +
/// j)` for j = 0 .. count - 1, into words[4 j .. 4 j + 3]: the same bits, computed a block per SIMD
/// lane (a loop the compiler vectorises), for host code that draws bits for many elements at once.
inline void philox_blocks(std::uint64_t seed, std::uint64_t stream, std::uint64_t first_block,
                          std::int64_t count, std::uint32_t* words) {
  constexpr std::uint64_t m0 = PHILOX_M4x32_0, m1 = PHILOX_M4x32_1;
  constexpr std::uint32_t w0 = PHILOX_W32_0, w1 = PHILOX_W32_1;
  const auto stream_low = static_cast<std::uint32_t>(stream),
             stream_high = static_cast<std::uint32_t>(stream >> 32);
  const auto key_low = static_cast<std::uint32_t>(seed), key_high = static_cast<std::uint32_t>(seed >> 32);
#ifdef _OPENMP
#pragma omp simd
#endif
  for (std::int64_t j = 0; j < count; ++j) {
    const std::uint64_t block = first_block + static_cast<std::uint64_t>(j);
    std::uint32_t c0 = static_cast<std::uint32_t>(block), c1 = static_cast<std::uint32_t>(block >> 32);
    std::uint32_t c2 = stream_low, c3 = stream_high;
    std::uint32_t k0 = key_low, k1 = key_high;
    for (int round = 0; round < 10; ++round) {  // Philox4x32-10: the key bumped before rounds 2 .. 10
      if (round > 0) {
        k0 += w0;
        k1 += w1;
      }
      const std::uint64_t product0 = m0 * c0, product1 = m1 * c2;
      const auto high0 = static_cast<std::uint32_t>(product0 >> 32),
                 low0 = static_cast<std::uint32_t>(product0);
      const auto high1 = static_cast<std::uint32_t>(product1 >> 32),
                 low1 = static_cast<std::uint32_t>(product1);
      c0 = high1 ^ c1 ^ k0;
      c1 = low1;
      c2 = high0 ^ c3 ^ k1;
      c3 = low0;
    }
    words[4 * j] = c0;
    words[4 * j + 1] = c1;
    words[4 * j + 2] = c2;
    words[4 * j + 3] = c3;
  }
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

/// @brief A standard normal value from two 32-bit words (Box-Muller, cosine branch), in double:
/// u1 = (first + 1) 2^-32 lies in (0, 1], so the logarithm is finite, and u2 = second 2^-32.
///
/// Host only, on purpose: CUDA's log and cos are not glibc's to the last bit, so a device that
/// wants these values draws them on the host (see `Backend<Cuda>::fill_normal`), and weights
/// initialised on either device start identical.
inline double normal_from_bits(std::uint32_t first, std::uint32_t second) {
  const double u1 = (static_cast<double>(first) + 1.0) * 0x1p-32;
  const double u2 = static_cast<double>(second) * 0x1p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// @brief Element `index` of a normal stream with the given mean and standard deviation under
/// (seed, stream): `mean + stddev * normal_from_bits` of the words `2 index` and `2 index + 1` of
/// `random_bits(seed, stream, .)`, computed in double.
inline double normal_at(double mean, double stddev, std::uint64_t seed, std::uint64_t stream,
                        std::uint64_t index) {
  return mean + stddev * normal_from_bits(random_bits(seed, stream, 2 * index),
                                          random_bits(seed, stream, 2 * index + 1));
}

}  // namespace mpx
