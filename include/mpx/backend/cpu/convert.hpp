// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Conversions between every format's storage and its accumulate type on the CPU, bit for bit
/// the scalar conversions (`static_cast`, `round_to`), vectorised for the 16-bit storage types: what
/// the GEMM widens its operands and rounds its output with, and what the elementwise kernels read and
/// write narrow tensors with.

#include <array>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <Eigen/Core>
#if defined(EIGEN_HAS_FP16_C) || (defined(__F16C__) && defined(__AVX2__))
#include <immintrin.h>
#endif

#include "mpx/backend/cpu/parallel.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/traits.hpp"
#include "mpx/tensor/tensor.hpp"

namespace mpx::cpu::detail {

// Elementwise conversions between storage and accumulate types. They produce exactly the bits of the
// scalar conversions (static_cast fp16/bf16 <-> fp32, round_tf32, round_to<Tag>), but are written to
// vectorise and run on all OpenMP threads for large arrays: done one element at a time, at 1024^3
// they cost fp16 about 40% of the fp32 GEMM's time. For fp16 they take the F16C instructions where
// the compiler may use them (-mf16c -mavx2, or -march=native on such a CPU), otherwise Eigen's
// software algorithm without branches. Eigen's scalar conversion is the F16C instruction itself
// only where Eigen defines EIGEN_HAS_FP16_C, which Eigen 3.4.0 leaves undefined under GCC (its test
// `!defined(EIGEN_COMP_CLANG) || EIGEN_COMP_CLANG >= 380` fails because it defines EIGEN_COMP_CLANG
// as 0); its software algorithm differs from the instructions on NaNs alone, so the F16C path
// converts a vector that holds a NaN again with it (the instructions' other results are the same:
// both round to nearest even and keep subnormals).

// round_mantissa_ties_away (TF32's rule) without branches, bit for bit: finite values get half of the
// dropped bits' weight added (ties away), NaN is made quiet, infinities stay, and then the dropped
// bits are cleared.
template <int MantissaBits>
inline float round_mantissa_ties_away_branchless(float x) {
  constexpr std::uint32_t dropped = 23 - MantissaBits;
  constexpr std::uint32_t keep = ~((std::uint32_t{1} << dropped) - 1);
  const std::uint32_t bits = Eigen::numext::bit_cast<std::uint32_t>(x);
  const bool special = (bits & 0x7f800000u) == 0x7f800000u;
  const std::uint32_t quieted = (bits & 0x007fffffu) != 0 ? (bits | 0x00400000u) : bits;
  return Eigen::numext::bit_cast<float>((special ? quieted : bits + (std::uint32_t{1} << (dropped - 1))) &
                                        keep);
}

// Elements a loop converts at a time into a buffer on the stack, to work on them in the wider type.
inline constexpr std::int64_t conversion_block = 256;

// The value of every code of a format of at most 8 bits kept as bit patterns: widening is one load.
template <NumericTag Tag>
inline constexpr auto decoded_codes = [] {
  std::array<float, 256> values{};
  for (std::uint32_t code = 0; code < 256; ++code) values[code] = mpx::detail::decode_bits<Tag>(code);
  return values;
}();

// Whether decode_code computes Tag's values: codes of sign | exponent | mantissa in a byte whose
// values (the scale of its subnormals included) are normal floats. Others (E8M0's 2^128) take the
// table.
template <NumericTag Tag>
inline constexpr bool decodes_by_arithmetic = [] {
  using L = mpx::detail::format_layout<Tag>;
  return L::has_zero && L::sign <= 0x80u && L::mantissa_bits <= 23 &&
         L::min_exponent - L::mantissa_bits >= -126 && static_cast<int>(L::top_exponent) - L::bias <= 127;
}();

// decoded_codes<Tag>[code], bit for bit, computed without a memory access and without branches, so
// that a loop of it vectorises: twice as fast as the table's loads where there is no gather
// instruction to speak of (E4M3, 1M codes: 0.24 ms against 0.44 on an AVX-512 Xeon). A normal code's
// exponent and mantissa fields move into fp32's and are rebiased; a subnormal code's mantissa is
// its value in units of the smallest subnormal, scaled by it; NaN and infinity codes are replaced.
template <NumericTag Tag>
inline float decode_code(std::uint32_t code) {
  static_assert(decodes_by_arithmetic<Tag>);
  using L = mpx::detail::format_layout<Tag>;
  constexpr int m = L::mantissa_bits;
  const std::uint32_t magnitude = code & L::magnitude_mask;
  const std::uint32_t sign = (code & L::sign) << (31 - L::exponent_bits - m);
  const std::uint32_t normal = (magnitude << (23 - m)) + (static_cast<std::uint32_t>(127 - L::bias) << 23);
  constexpr float smallest_subnormal =
      std::bit_cast<float>(static_cast<std::uint32_t>(127 + L::min_exponent - m) << 23);
  const float subnormal_value = static_cast<float>(static_cast<std::int32_t>(magnitude)) * smallest_subnormal;
  const std::uint32_t subnormal =
      numeric_traits<Tag>::has_subnormals ? std::bit_cast<std::uint32_t>(subnormal_value) : 0u;
  // Masks rather than conditional expressions, which GCC 12 leaves as branches here.
  const auto all_if = [](bool condition) { return 0u - static_cast<std::uint32_t>(condition); };
  const std::uint32_t below_normal = all_if(magnitude < (std::uint32_t{1} << m));
  std::uint32_t bits = (subnormal & below_normal) | (normal & ~below_normal);
  if constexpr (L::non_finite == NonFinite::NanOnly) {
    const std::uint32_t nan = all_if(magnitude == L::magnitude_mask);
    bits = (bits & ~nan) | (0x7fc00000u & nan);
  } else if constexpr (L::non_finite == NonFinite::InfAndNan) {
    const std::uint32_t top = all_if(magnitude >= L::infinity);
    const std::uint32_t special =
        (0x7f800000u & all_if(magnitude == L::infinity)) | (0x7fc00000u & ~all_if(magnitude == L::infinity));
    bits = (bits & ~top) | (special & top);
  }
  return std::bit_cast<float>(bits | sign);
}

// Eigen's scalar float -> bfloat16 (float_to_bfloat16_rtne<false>) without branches, bit for bit:
// round to nearest even, NaN -> 0x7fc0 with x's sign.
inline std::uint16_t bfloat16_bits_of(float x) {
  const std::uint32_t bits = Eigen::numext::bit_cast<std::uint32_t>(x);
  const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
  const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>(nan ? ((bits >> 16) & 0x8000u) | 0x7fc0u : rounded);
}

#if defined(EIGEN_HAS_FP16_C)
#define MPX_DETAIL_F16C 1  // Eigen's scalar conversions are these instructions
#elif defined(__F16C__) && defined(__AVX2__) && !defined(EIGEN_HAS_ARM64_FP16_SCALAR_ARITHMETIC)
#define MPX_DETAIL_F16C 1
#define MPX_DETAIL_F16C_MEND_NANS 1  // Eigen's scalar conversions are its software algorithm
#endif

#if defined(MPX_DETAIL_F16C)
// Whether any of the fp16 values in a vector is a NaN.
inline bool any_half_nan(__m128i halves) {
  const __m128i magnitude = _mm_and_si128(halves, _mm_set1_epi16(0x7fff));
  return _mm_movemask_epi8(_mm_cmpgt_epi16(magnitude, _mm_set1_epi16(0x7c00))) != 0;
}
inline bool any_half_nan(__m256i halves) {
  const __m256i magnitude = _mm256_and_si256(halves, _mm256_set1_epi16(0x7fff));
  return _mm256_movemask_epi8(_mm256_cmpgt_epi16(magnitude, _mm256_set1_epi16(0x7c00))) != 0;
}

// The instructions quiet a signalling NaN and keep the top of a NaN's payload; Eigen's software
// conversions keep a NaN's payload as it is (fp16 -> fp32) and give 0x7e00 with the sign (fp32 ->
// fp16). A vector holding a NaN, in or out, is converted again by Eigen's scalar conversion.
#if defined(MPX_DETAIL_F16C_MEND_NANS)
inline constexpr bool mend_half_nans = true;
#else
inline constexpr bool mend_half_nans = false;
#endif

#if defined(__AVX512F__)
inline constexpr std::int64_t halves_per_vector = 16;

inline void widen_halves(const Eigen::half* in, float* out) {
  const __m256i halves = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  _mm512_storeu_ps(out, _mm512_cvtph_ps(halves));
  if (mend_half_nans && any_half_nan(halves)) {
    for (std::int64_t j = 0; j < halves_per_vector; ++j) out[j] = static_cast<float>(in[j]);
  }
}

inline void round_to_halves(const float* in, Eigen::half* out) {
  const __m256i halves = _mm512_cvtps_ph(_mm512_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), halves);
  if (mend_half_nans && any_half_nan(halves)) {
    for (std::int64_t j = 0; j < halves_per_vector; ++j) out[j] = static_cast<Eigen::half>(in[j]);
  }
}
#else
inline constexpr std::int64_t halves_per_vector = 8;

inline void widen_halves(const Eigen::half* in, float* out) {
  const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  _mm256_storeu_ps(out, _mm256_cvtph_ps(halves));
  if (mend_half_nans && any_half_nan(halves)) {
    for (std::int64_t j = 0; j < halves_per_vector; ++j) out[j] = static_cast<float>(in[j]);
  }
}

inline void round_to_halves(const float* in, Eigen::half* out) {
  const __m128i halves = _mm256_cvtps_ph(_mm256_loadu_ps(in), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), halves);
  if (mend_half_nans && any_half_nan(halves)) {
    for (std::int64_t j = 0; j < halves_per_vector; ++j) out[j] = static_cast<Eigen::half>(in[j]);
  }
}
#endif
#endif

#if !defined(MPX_DETAIL_F16C) && !defined(EIGEN_HAS_ARM64_FP16_SCALAR_ARITHMETIC)
#define MPX_DETAIL_SOFTWARE_FP16 1
// Eigen's software half_to_float (Half.h) without branches, bit for bit.
inline float half_bits_to_float(std::uint16_t h) {
  const std::uint32_t shifted_exp = 0x7c00u << 13;
  std::uint32_t o = (std::uint32_t{h} & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += std::uint32_t{127 - 15} << 23;
  const std::uint32_t inf_nan = o + (std::uint32_t{128 - 16} << 23);
  const float magic = Eigen::numext::bit_cast<float>(std::uint32_t{113} << 23);
  const std::uint32_t denormal = Eigen::numext::bit_cast<std::uint32_t>(
      Eigen::numext::bit_cast<float>(o + (std::uint32_t{1} << 23)) - magic);
  const std::uint32_t magnitude = exp == shifted_exp ? inf_nan : (exp == 0 ? denormal : o);
  return Eigen::numext::bit_cast<float>(magnitude | ((std::uint32_t{h} & 0x8000u) << 16));
}

// Eigen's software float_to_half_rtne (Half.h) without branches, bit for bit.
inline std::uint16_t float_to_half_bits(float x) {
  const std::uint32_t f32_infinity = std::uint32_t{255} << 23;
  const std::uint32_t f16_max = std::uint32_t{127 + 16} << 23;
  const std::uint32_t denorm_magic = std::uint32_t{(127 - 15) + (23 - 10) + 1} << 23;
  std::uint32_t u = Eigen::numext::bit_cast<std::uint32_t>(x);
  const std::uint32_t sign = u & 0x80000000u;
  u ^= sign;
  const std::uint32_t inf_nan = u > f32_infinity ? 0x7e00u : 0x7c00u;
  const std::uint32_t subnormal =
      Eigen::numext::bit_cast<std::uint32_t>(Eigen::numext::bit_cast<float>(u) +
                                             Eigen::numext::bit_cast<float>(denorm_magic)) -
      denorm_magic;
  const std::uint32_t normal = (u + 0xc8000fffu + ((u >> 13) & 1u)) >> 13;
  const std::uint32_t magnitude =
      u >= f16_max ? inf_nan : (u < (std::uint32_t{113} << 23) ? subnormal : normal);
  return static_cast<std::uint16_t>((magnitude & 0xffffu) | (sign >> 16));
}
#endif

// out[i] = in[i] in the compute type, widened to Acc, for i in [begin, end). A format kept in a wider
// float's storage (TF32) is rounded here, as Tensor Cores round their operands; the storage types with
// vector conversions take them; formats kept as bytes are decoded by decode_code (or one table load
// per element); every other format converts through its traits.
template <NumericTag Compute, class S, class Acc>
void widen_range(const S* in, Acc* out, std::int64_t begin, std::int64_t end) {
  std::int64_t i = begin;
  if constexpr (!owns_storage_v<Compute>) {
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t j = begin; j < end; ++j)
      out[j] = round_mantissa_ties_away_branchless<numeric_traits<Compute>::mantissa_bits>(in[j]);
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
  } else if constexpr (std::is_same_v<S, Encoded<Compute>> && sizeof(S) == 1) {
    if constexpr (decodes_by_arithmetic<Compute>) {
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = begin; j < end; ++j) out[j] = static_cast<Acc>(decode_code<Compute>(in[j].bits));
    } else {
      const auto& values = decoded_codes<Compute>;
      MPX_DETAIL_OMP_SIMD
      for (std::int64_t j = begin; j < end; ++j) out[j] = static_cast<Acc>(values[in[j].bits]);
    }
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
  } else if constexpr (std::is_same_v<S, Eigen::bfloat16> && std::is_same_v<Acc, float>) {
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t j = begin; j < end; ++j) {
      const std::uint32_t bits = Eigen::numext::bit_cast<std::uint16_t>(in[j]);
      out[j] = Eigen::numext::bit_cast<float>(bits << 16);
    }
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
  } else if constexpr (std::is_same_v<S, Eigen::half> && std::is_same_v<Acc, float>) {
#if defined(MPX_DETAIL_F16C)
    for (; i + halves_per_vector <= end; i += halves_per_vector) widen_halves(in + i, out + i);
#elif defined(MPX_DETAIL_SOFTWARE_FP16)
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t j = begin; j < end; ++j)
      out[j] = half_bits_to_float(Eigen::numext::bit_cast<std::uint16_t>(in[j]));
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
#endif
  }
  for (; i < end; ++i) out[i] = static_cast<Acc>(in[i]);
}

// out[i] = round_to<tag of TD>(in[i]) for i in [begin, end).
template <class Acc, class TD>
void round_range(const Acc* in, TD* out, std::int64_t begin, std::int64_t end) {
  std::int64_t i = begin;
  if constexpr (std::is_same_v<TD, Eigen::bfloat16> && std::is_same_v<Acc, float>) {
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t j = begin; j < end; ++j)
      out[j] = Eigen::numext::bit_cast<Eigen::bfloat16>(bfloat16_bits_of(in[j]));
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
  } else if constexpr (std::is_same_v<TD, Eigen::half> && std::is_same_v<Acc, float>) {
#if defined(MPX_DETAIL_F16C)
    for (; i + halves_per_vector <= end; i += halves_per_vector) round_to_halves(in + i, out + i);
#elif defined(MPX_DETAIL_SOFTWARE_FP16)
    MPX_DETAIL_OMP_SIMD
    for (std::int64_t j = begin; j < end; ++j)
      out[j] = Eigen::numext::bit_cast<Eigen::half>(float_to_half_bits(in[j]));
    i = end;  // done; not `return`, which makes the tail loop unreachable (nvcc error 128)
#endif
  }
  for (; i < end; ++i) out[i] = round_to<tag_of_t<TD>>(in[i]);
}

#undef MPX_DETAIL_SOFTWARE_FP16
#undef MPX_DETAIL_F16C
#undef MPX_DETAIL_F16C_MEND_NANS

// The elements of `tensor` converted to Acc (short vectors: a layer's gamma and beta).
template <class Acc, class T>
std::vector<Acc> widened(const Tensor<T, Host>& tensor) {
  std::vector<Acc> values(static_cast<std::size_t>(tensor.numel()));
  widen_range<tag_of_t<T>>(tensor.data(), values.data(), 0, tensor.numel());
  return values;
}

}  // namespace mpx::cpu::detail
