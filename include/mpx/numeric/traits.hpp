// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `numeric_traits<Tag>`: the customisation point that describes a number format, once (as
/// Eigen's `NumTraits`); the `NumericTag` concept, the element-type <-> tag mapping, and the facts
/// every other place derives from the traits (limits, the accumulate type, which formats need what).
///
/// Everything that depends on a format reads it from here: rounding and the generic encoder
/// (rounding.hpp, encoded.hpp), the CPU conversions, the CUDA data types, precision names, loss
/// scaling defaults, checkpoint dtypes. A format of your own is a tag and a specialisation of
/// `numeric_traits` (docs/precision.md, "Adding a number format").

#include <concepts>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <Eigen/Core>

#include "mpx/config.hpp"
#include "mpx/numeric/tags.hpp"

namespace mpx {

/// @brief How a format encodes what is not a finite number.
enum class NonFinite {
  /// IEEE 754: the all-ones exponent field holds +-infinity (zero mantissa) and NaN (any other
  /// mantissa); fp64, fp32, fp16, bf16, OCP E5M2.
  InfAndNan,
  /// No infinity; NaN is the one code (per sign) whose exponent and mantissa bits are all ones, and
  /// the rest of the top binade holds numbers (OCP E4M3, "fn" in ml_dtypes and PyTorch).
  NanOnly,
  /// Every code is a number (OCP MX E2M1, E2M3, E3M2); such a format must saturate.
  None,
};

/// @brief A value of format `Tag` kept as its bit pattern, for formats that have no C++ scalar type
/// (FP8, FP6, FP4): `numeric_traits<Tag>::storage_type` of such a format is `Encoded<Tag>`. Defined in
/// numeric/encoded.hpp.
template <class Tag>
struct Encoded;

/// @brief What a number format is: specialise it for your tag. The primary template is left undefined,
/// so that a type without a specialisation is not a `NumericTag`.
///
/// Members (every specialisation has them all; `mpx::Precision` and `mpx::Encoded` check each with a
/// `static_assert` that names a missing or inconsistent one):
/// - `storage_type`: the host element type of a tensor in this format (`float`, `Eigen::half`, ...,
///   or `mpx::Encoded<Tag>`, a byte or two holding the bit pattern);
/// - `accumulate_type`: the type arithmetic on the format's values happens in, and so what products,
///   sums, losses and gradients accumulate in (`float`; `double` for fp64). A `Precision`'s
///   `accumulate_type` is its compute format's;
/// - `name`: short name in messages and records ("bf16");
/// - `exponent_bits`, `mantissa_bits` (explicit fraction bits), `exponent_bias`: the layout
///   sign | exponent | mantissa; the value of a normal code is 2^(exponent - bias) * 1.mantissa;
/// - `has_subnormals`: whether the zero exponent field holds 2^(1 - bias) * 0.mantissa (else it holds
///   only zero, and encoding flushes smaller magnitudes to zero);
/// - `non_finite`: the `NonFinite` encoding of infinities and NaN;
/// - `saturates`: whether encoding a value beyond the largest finite one (infinity included) gives
///   +-`max_finite` (else infinity, or NaN where the format has no infinity);
/// - `max_finite`: the largest finite value, in `accumulate_type` (checked against the layout);
/// - `safetensors_dtype`: the format's dtype in safetensors files ("BF16"), empty when it has none;
/// - `cuda_data_type`: the name of its `cudaDataType_t` ("CUDA_R_16BF"), empty when CUDA has none.
///
/// Optional members, for formats unlike IEEE's (E8M0, a scale format, has both `false`):
/// - `has_sign` (default true): whether codes have a sign bit above the exponent; an unsigned format
///   encodes negative inputs (-0 included) as its NaN, as ml_dtypes does, so it needs a NaN code;
/// - `has_zero` (default true): whether the zero exponent field holds zero (and subnormals); else it
///   holds normal values 2^-bias * 1.mantissa, the format has no zero, zero encodes as NaN and
///   positive values below the smallest round to it (ml_dtypes' `float8_e8m0fnu`).
template <class Tag>
struct numeric_traits;

/// @brief IEEE binary64.
template <>
struct numeric_traits<Double> {
  using storage_type = double;                                      ///< host element type
  using accumulate_type = double;                                   ///< arithmetic and sums
  static constexpr std::string_view name = "fp64";                  ///< name in messages and records
  static constexpr int exponent_bits = 11;                          ///< exponent field width
  static constexpr int mantissa_bits = 52;                          ///< explicit fraction bits
  static constexpr int exponent_bias = 1023;                        ///< exponent offset
  static constexpr bool has_subnormals = true;                      ///< gradual underflow
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;     ///< IEEE infinities and NaN
  static constexpr bool saturates = false;                          ///< overflow gives infinity
  static constexpr double max_finite = 0x1.fffffffffffffp+1023;     ///< largest finite value
  static constexpr std::string_view safetensors_dtype = "F64";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_64F";  ///< cudaDataType_t
};

/// @brief IEEE binary32.
template <>
struct numeric_traits<Float> {
  using storage_type = float;                                       ///< host element type
  using accumulate_type = float;                                    ///< arithmetic and sums
  static constexpr std::string_view name = "fp32";                  ///< name in messages and records
  static constexpr int exponent_bits = 8;                           ///< exponent field width
  static constexpr int mantissa_bits = 23;                          ///< explicit fraction bits
  static constexpr int exponent_bias = 127;                         ///< exponent offset
  static constexpr bool has_subnormals = true;                      ///< gradual underflow
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;     ///< IEEE infinities and NaN
  static constexpr bool saturates = false;                          ///< overflow gives infinity
  static constexpr float max_finite = 0x1.fffffep+127f;             ///< largest finite value
  static constexpr std::string_view safetensors_dtype = "F32";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_32F";  ///< cudaDataType_t
};

/// @brief TF32 is stored as fp32 (its storage type holds another format's values): only Tensor Core
/// operands are rounded to it, so its limits are those of a float whose 13 low mantissa bits are zero.
template <>
struct numeric_traits<TF32> {
  using storage_type = float;                                       ///< host element type
  using accumulate_type = float;                                    ///< arithmetic and sums
  static constexpr std::string_view name = "tf32";                  ///< name in messages and records
  static constexpr int exponent_bits = 8;                           ///< exponent field width
  static constexpr int mantissa_bits = 10;                          ///< explicit fraction bits
  static constexpr int exponent_bias = 127;                         ///< exponent offset
  static constexpr bool has_subnormals = true;                      ///< gradual underflow
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;     ///< IEEE infinities and NaN
  static constexpr bool saturates = false;                          ///< overflow gives infinity
  static constexpr float max_finite = 0x1.ffcp+127f;                ///< largest finite value
  static constexpr std::string_view safetensors_dtype = "F32";      ///< saved as its storage, fp32
  static constexpr std::string_view cuda_data_type = "CUDA_R_32F";  ///< cudaDataType_t of its storage
};

/// @brief IEEE binary16.
template <>
struct numeric_traits<Half> {
  using storage_type = Eigen::half;                                 ///< host element type
  using accumulate_type = float;                                    ///< arithmetic and sums
  static constexpr std::string_view name = "fp16";                  ///< name in messages and records
  static constexpr int exponent_bits = 5;                           ///< exponent field width
  static constexpr int mantissa_bits = 10;                          ///< explicit fraction bits
  static constexpr int exponent_bias = 15;                          ///< exponent offset
  static constexpr bool has_subnormals = true;                      ///< gradual underflow
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;     ///< IEEE infinities and NaN
  static constexpr bool saturates = false;                          ///< overflow gives infinity
  static constexpr float max_finite = 65504.0f;                     ///< largest finite value
  static constexpr std::string_view safetensors_dtype = "F16";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_16F";  ///< cudaDataType_t
};

/// @brief bfloat16.
template <>
struct numeric_traits<BFloat16> {
  using storage_type = Eigen::bfloat16;                              ///< host element type
  using accumulate_type = float;                                     ///< arithmetic and sums
  static constexpr std::string_view name = "bf16";                   ///< name in messages and records
  static constexpr int exponent_bits = 8;                            ///< exponent field width
  static constexpr int mantissa_bits = 7;                            ///< explicit fraction bits
  static constexpr int exponent_bias = 127;                          ///< exponent offset
  static constexpr bool has_subnormals = true;                       ///< gradual underflow
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;      ///< IEEE infinities and NaN
  static constexpr bool saturates = false;                           ///< overflow gives infinity
  static constexpr float max_finite = 0x1.fep+127f;                  ///< largest finite value
  static constexpr std::string_view safetensors_dtype = "BF16";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_16BF";  ///< cudaDataType_t
};

/// @brief FP8 E4M3 ("fn": finite and NaN only), kept as bit patterns. Encoding saturates by default,
/// as CUDA's `__nv_fp8_e4m3` conversions (`__NV_SATFINITE`) and PyTorch's `.to(torch.float8_e4m3fn)`
/// do; `round_to<Float8E4M3, Overflow::NonFinite>` gives NaN instead, as ml_dtypes' `astype` does.
/// NaN is S.1111.111.
template <>
struct numeric_traits<Float8E4M3> {
  using storage_type = Encoded<Float8E4M3>;                             ///< the code, in a byte
  using accumulate_type = float;                                        ///< arithmetic and sums
  static constexpr std::string_view name = "e4m3";                      ///< name in messages and records
  static constexpr int exponent_bits = 4;                               ///< exponent field width
  static constexpr int mantissa_bits = 3;                               ///< explicit fraction bits
  static constexpr int exponent_bias = 7;                               ///< exponent offset
  static constexpr bool has_subnormals = true;                          ///< 2^-9 to 0.875 * 2^-6
  static constexpr NonFinite non_finite = NonFinite::NanOnly;           ///< no infinity
  static constexpr bool saturates = true;                               ///< overflow gives +-448
  static constexpr float max_finite = 448.0f;                           ///< 1.75 * 2^8
  static constexpr std::string_view safetensors_dtype = "F8_E4M3";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_8F_E4M3";  ///< cudaDataType_t
};

/// @brief FP8 E5M2 (IEEE-style infinities and NaN), kept as bit patterns. Encoding saturates by
/// default, as CUDA's `__nv_fp8_e5m2` conversions (`__NV_SATFINITE`) do; `round_to<Float8E5M2,
/// Overflow::NonFinite>` gives infinity instead, as ml_dtypes' `astype` and PyTorch's
/// `.to(torch.float8_e5m2)` do. mpx writes NaN as S.11111.10.
template <>
struct numeric_traits<Float8E5M2> {
  using storage_type = Encoded<Float8E5M2>;                             ///< the code, in a byte
  using accumulate_type = float;                                        ///< arithmetic and sums
  static constexpr std::string_view name = "e5m2";                      ///< name in messages and records
  static constexpr int exponent_bits = 5;                               ///< exponent field width
  static constexpr int mantissa_bits = 2;                               ///< explicit fraction bits
  static constexpr int exponent_bias = 15;                              ///< exponent offset
  static constexpr bool has_subnormals = true;                          ///< 2^-16 to 0.75 * 2^-14
  static constexpr NonFinite non_finite = NonFinite::InfAndNan;         ///< IEEE infinities and NaN
  static constexpr bool saturates = true;                               ///< overflow gives +-57344
  static constexpr float max_finite = 57344.0f;                         ///< 1.75 * 2^15
  static constexpr std::string_view safetensors_dtype = "F8_E5M2";      ///< safetensors dtype
  static constexpr std::string_view cuda_data_type = "CUDA_R_8F_E5M2";  ///< cudaDataType_t
};

/// @brief FP4 E2M1 (OCP MX), kept as bit patterns: every code is a number, so encoding saturates
/// (beyond 6 gives +-6); NaN encodes as +6 (see encoded.hpp). ml_dtypes' `float4_e2m1fn`.
template <>
struct numeric_traits<Float4E2M1> {
  using storage_type = Encoded<Float4E2M1>;                             ///< the code, in a byte
  using accumulate_type = float;                                        ///< arithmetic and sums
  static constexpr std::string_view name = "e2m1";                      ///< name in messages and records
  static constexpr int exponent_bits = 2;                               ///< exponent field width
  static constexpr int mantissa_bits = 1;                               ///< explicit fraction bit
  static constexpr int exponent_bias = 1;                               ///< exponent offset
  static constexpr bool has_subnormals = true;                          ///< 0.5
  static constexpr NonFinite non_finite = NonFinite::None;              ///< every code is a number
  static constexpr bool saturates = true;                               ///< overflow gives +-6
  static constexpr float max_finite = 6.0f;                             ///< 1.5 * 2^2
  static constexpr std::string_view safetensors_dtype = "";             ///< mpx keeps a code per byte
  static constexpr std::string_view cuda_data_type = "CUDA_R_4F_E2M1";  ///< cudaDataType_t
};

/// @brief FP6 E2M3 (OCP MX), kept as bit patterns; saturating, no infinity or NaN. ml_dtypes'
/// `float6_e2m3fn`.
template <>
struct numeric_traits<Float6E2M3> {
  using storage_type = Encoded<Float6E2M3>;                             ///< the code, in a byte
  using accumulate_type = float;                                        ///< arithmetic and sums
  static constexpr std::string_view name = "e2m3";                      ///< name in messages and records
  static constexpr int exponent_bits = 2;                               ///< exponent field width
  static constexpr int mantissa_bits = 3;                               ///< explicit fraction bits
  static constexpr int exponent_bias = 1;                               ///< exponent offset
  static constexpr bool has_subnormals = true;                          ///< 0.125 to 0.875
  static constexpr NonFinite non_finite = NonFinite::None;              ///< every code is a number
  static constexpr bool saturates = true;                               ///< overflow gives +-7.5
  static constexpr float max_finite = 7.5f;                             ///< 1.875 * 2^2
  static constexpr std::string_view safetensors_dtype = "";             ///< mpx keeps a code per byte
  static constexpr std::string_view cuda_data_type = "CUDA_R_6F_E2M3";  ///< cudaDataType_t
};

/// @brief FP6 E3M2 (OCP MX), kept as bit patterns; saturating, no infinity or NaN. ml_dtypes'
/// `float6_e3m2fn`.
template <>
struct numeric_traits<Float6E3M2> {
  using storage_type = Encoded<Float6E3M2>;                             ///< the code, in a byte
  using accumulate_type = float;                                        ///< arithmetic and sums
  static constexpr std::string_view name = "e3m2";                      ///< name in messages and records
  static constexpr int exponent_bits = 3;                               ///< exponent field width
  static constexpr int mantissa_bits = 2;                               ///< explicit fraction bits
  static constexpr int exponent_bias = 3;                               ///< exponent offset
  static constexpr bool has_subnormals = true;                          ///< 2^-4 to 0.75 * 2^-2
  static constexpr NonFinite non_finite = NonFinite::None;              ///< every code is a number
  static constexpr bool saturates = true;                               ///< overflow gives +-28
  static constexpr float max_finite = 28.0f;                            ///< 1.75 * 2^4
  static constexpr std::string_view safetensors_dtype = "";             ///< mpx keeps a code per byte
  static constexpr std::string_view cuda_data_type = "CUDA_R_6F_E3M2";  ///< cudaDataType_t
};

/// @brief E8M0 (OCP MX's scale format), kept as bit patterns: unsigned, no zero, 2^(code - 127) for
/// codes 0 to 254, NaN 0xFF. Encoding rounds to the nearest power of two (a tie, 1.5 * 2^k, rounds
/// up; fp32 subnormals above 2^-127 round up to 2^-126); zero, negative values and NaN give NaN,
/// values below 2^-127 give 2^-127, and values from 1.5 * 2^127 up overflow to NaN (saturating: to
/// 2^127), as ml_dtypes' `float8_e8m0fnu` and PyTorch's do (PyTorch takes |x| and maps 0 to 2^-127).
/// The MX recipes compute their scales' codes from amaxes directly (policy/block_scaling.hpp).
template <>
struct numeric_traits<Float8E8M0> {
  using storage_type = Encoded<Float8E8M0>;                              ///< the code, in a byte
  using accumulate_type = float;                                         ///< arithmetic and sums
  static constexpr std::string_view name = "e8m0";                       ///< name in messages and records
  static constexpr int exponent_bits = 8;                                ///< exponent field width
  static constexpr int mantissa_bits = 0;                                ///< a power of two
  static constexpr int exponent_bias = 127;                              ///< exponent offset
  static constexpr bool has_subnormals = false;                          ///< code 0 is 2^-127
  static constexpr NonFinite non_finite = NonFinite::NanOnly;            ///< 0xFF
  static constexpr bool saturates = false;                               ///< overflow gives NaN
  static constexpr float max_finite = 0x1p127f;                          ///< code 0xFE
  static constexpr bool has_sign = false;                                ///< no sign bit
  static constexpr bool has_zero = false;                                ///< code 0 is 2^-127
  static constexpr std::string_view safetensors_dtype = "";              ///< none in checkpoints
  static constexpr std::string_view cuda_data_type = "CUDA_R_8F_UE8M0";  ///< cudaDataType_t
};

/// @brief A type is a precision tag when `numeric_traits` describes it, with every member.
template <class Tag>
concept NumericTag = requires {
  typename numeric_traits<Tag>::storage_type;
  typename numeric_traits<Tag>::accumulate_type;
  { numeric_traits<Tag>::name } -> std::convertible_to<std::string_view>;
  { numeric_traits<Tag>::exponent_bits } -> std::convertible_to<int>;
  { numeric_traits<Tag>::mantissa_bits } -> std::convertible_to<int>;
  { numeric_traits<Tag>::exponent_bias } -> std::convertible_to<int>;
  { numeric_traits<Tag>::has_subnormals } -> std::convertible_to<bool>;
  { numeric_traits<Tag>::non_finite } -> std::convertible_to<NonFinite>;
  { numeric_traits<Tag>::saturates } -> std::convertible_to<bool>;
  { numeric_traits<Tag>::max_finite } -> std::convertible_to<typename numeric_traits<Tag>::accumulate_type>;
  { numeric_traits<Tag>::safetensors_dtype } -> std::convertible_to<std::string_view>;
  { numeric_traits<Tag>::cuda_data_type } -> std::convertible_to<std::string_view>;
};

/// @brief Host element type of a tag (`Eigen::bfloat16` for `BFloat16`, `float` for `TF32`).
template <NumericTag Tag>
using storage_t = typename numeric_traits<Tag>::storage_type;

/// @brief Element type -> the tag that stores it: `float` maps to `Float` (a TF32 tensor is a float
/// tensor; TF32 is a property of the matmul, not of the storage), `Encoded<Tag>` to `Tag`. Has no
/// `type` for other types. Specialise it only for a storage type of your own other than `Encoded`.
template <class T>
struct tag_of {};
/// @brief `double` is fp64's storage.
template <>
struct tag_of<double> {
  using type = Double;  ///< the tag
};
/// @brief `float` is fp32's storage (and TF32's, which does not own it).
template <>
struct tag_of<float> {
  using type = Float;  ///< the tag
};
/// @brief `Eigen::half` is fp16's storage.
template <>
struct tag_of<Eigen::half> {
  using type = Half;  ///< the tag
};
/// @brief `Eigen::bfloat16` is bf16's storage.
template <>
struct tag_of<Eigen::bfloat16> {
  using type = BFloat16;  ///< the tag
};
/// @brief A format's bit patterns belong to that format.
template <class Tag>
struct tag_of<Encoded<Tag>> {
  using type = Tag;  ///< the tag
};

/// @brief Element types that have a precision tag (double, float, Eigen::half, Eigen::bfloat16, the
/// `Encoded` bit patterns of other formats): what layers, losses, conversions and the GEMM compute with.
template <class T>
concept FloatingElement = requires {
  typename tag_of<T>::type;
}
&&NumericTag<typename tag_of<T>::type>;

namespace detail {
template <class T>
struct checked_tag_of {
  static_assert(FloatingElement<T>,
                "mpx::tag_of<T>: T has no precision tag. Operations that round or compute (layers, losses, "
                "convert, round_into, the GEMM) take tensors of a number format's storage type (double, "
                "float, Eigen::half, Eigen::bfloat16, mpx::Encoded<Tag>); a Tensor<std::int32_t> holds "
                "class labels or token ids, which are moved and compared but never rounded");
  using type = void;
};
template <class T>
requires FloatingElement<T>
struct checked_tag_of<T> {
  using type = typename tag_of<T>::type;
};
}  // namespace detail

/// @brief The tag that stores `T` (a compile error, saying so, for a type that has none).
template <class T>
using tag_of_t = typename detail::checked_tag_of<T>::type;

/// @brief Element types mpx tensors hold: the floating ones, and `std::int32_t` for class labels and
/// token ids (moved between devices and compared, never rounded; it has no `tag_of`).
template <class T>
concept Element = FloatingElement<T> || std::is_same_v<T, std::int32_t>;

namespace detail {
// accumulate_t's argument: a tag, an element type (its tag's), or a precision (policy/precision.hpp
// specialises this for mpx::Precision).
template <class X>
struct accumulate_of {
  using type = typename numeric_traits<tag_of_t<X>>::accumulate_type;
};
template <NumericTag Tag>
struct accumulate_of<Tag> {
  using type = typename numeric_traits<Tag>::accumulate_type;
};
}  // namespace detail

/// @brief The accumulate type: what arithmetic on values of `X` happens in, and what products, sums,
/// losses and gradients accumulate in (`float`; `double` for fp64). `X` is a precision tag, an element
/// type (`accumulate_t<Eigen::half>` is `float`) or a precision policy (`accumulate_t<mpx::bf16_mixed>`,
/// its compute format's). mpx has no other name for it.
template <class X>
using accumulate_t = typename detail::accumulate_of<X>::type;

namespace detail {
template <Element T>
constexpr std::string_view element_name() noexcept {
  if constexpr (FloatingElement<T>) {
    return numeric_traits<typename tag_of<T>::type>::name;
  } else {
    return "int32";
  }
}

// 2^e in T, exactly (compile time; e within T's range, subnormals included).
template <class T>
consteval T power_of_two(int e) {
  T value = 1;
  for (; e > 0; --e) value *= 2;
  for (; e < 0; ++e) value /= 2;
  return value;
}

// Exponent of the largest finite value: the top exponent field is reserved under InfAndNan.
template <NumericTag Tag>
consteval int max_exponent() {
  using traits = numeric_traits<Tag>;
  const int top_field = (1 << traits::exponent_bits) - 1;
  return (traits::non_finite == NonFinite::InfAndNan ? top_field - 1 : top_field) - traits::exponent_bias;
}

// Exponent of the largest finite value: max_exponent, less one where NaN takes the top code of a
// format without mantissa bits (E8M0).
template <NumericTag Tag>
consteval int largest_exponent() {
  using traits = numeric_traits<Tag>;
  return max_exponent<Tag>() -
         (traits::mantissa_bits == 0 && traits::non_finite == NonFinite::NanOnly ? 1 : 0);
}

// The largest finite value the layout allows: 1.11..1 (1.11..0 under NanOnly, whose all-ones code is
// NaN) times 2^max_exponent.
template <NumericTag Tag>
consteval accumulate_t<Tag> derived_max_finite() {
  using traits = numeric_traits<Tag>;
  using A = accumulate_t<Tag>;
  const int unused_codes = traits::non_finite == NonFinite::NanOnly ? 1 : 0;
  const A significand = A(2) - power_of_two<A>(-traits::mantissa_bits) -
                        A(unused_codes) * power_of_two<A>(-traits::mantissa_bits);
  return traits::mantissa_bits == 0 && unused_codes == 1 ? power_of_two<A>(largest_exponent<Tag>())
                                                         : significand * power_of_two<A>(max_exponent<Tag>());
}
}  // namespace detail

/// @brief Name of an element type in messages: its tag's name ("fp32", "bf16", ...) or "int32".
template <Element T>
inline constexpr std::string_view element_name = detail::element_name<T>();

/// @brief The difference between 1 and the next value of `Tag`: 2^-mantissa_bits.
template <NumericTag Tag>
inline constexpr accumulate_t<Tag> epsilon_v =
    detail::power_of_two<accumulate_t<Tag>>(-numeric_traits<Tag>::mantissa_bits);

namespace detail {
// The optional members of numeric_traits, with their defaults.
template <NumericTag Tag>
consteval bool format_has_sign() {
  if constexpr (requires { numeric_traits<Tag>::has_sign; }) {
    return numeric_traits<Tag>::has_sign;
  } else {
    return true;
  }
}
template <NumericTag Tag>
consteval bool format_has_zero() {
  if constexpr (requires { numeric_traits<Tag>::has_zero; }) {
    return numeric_traits<Tag>::has_zero;
  } else {
    return true;
  }
}
}  // namespace detail

/// @brief Whether `Tag`'s codes have a sign bit (`numeric_traits<Tag>::has_sign`, true unless said).
template <NumericTag Tag>
inline constexpr bool has_sign_v = detail::format_has_sign<Tag>();

/// @brief Whether `Tag` has a zero (`numeric_traits<Tag>::has_zero`, true unless said; E8M0 has none).
template <NumericTag Tag>
inline constexpr bool has_zero_v = detail::format_has_zero<Tag>();

/// @brief The smallest positive normal value of `Tag`: 2^(1 - bias), or 2^-bias in a format without
/// zero, whose zero exponent field holds normal values.
template <NumericTag Tag>
inline constexpr accumulate_t<Tag> min_normal_v =
    detail::power_of_two<accumulate_t<Tag>>((has_zero_v<Tag> ? 1 : 0) - numeric_traits<Tag>::exponent_bias);

/// @brief The smallest positive value of `Tag`: 2^(1 - bias - mantissa_bits) with subnormals, else
/// `min_normal_v`.
template <NumericTag Tag>
inline constexpr accumulate_t<Tag> min_positive_v =
    numeric_traits<Tag>::has_subnormals
        ? detail::power_of_two<accumulate_t<Tag>>(1 - numeric_traits<Tag>::exponent_bias -
                                                  numeric_traits<Tag>::mantissa_bits)
        : min_normal_v<Tag>;

/// @brief True when `Tag`'s storage type holds exactly its values. False for TF32, whose storage is
/// fp32's (a TF32 tensor is a float tensor; its values are rounded only inside matmuls).
template <NumericTag Tag>
inline constexpr bool owns_storage_v = std::is_same_v<typename tag_of<storage_t<Tag>>::type, Tag>;

/// @brief True when `Tag` has fewer exponent bits than fp32, so that gradients below its smallest
/// value vanish in it: fp16 and the 8-bit and smaller formats. What loss scaling protects.
template <NumericTag Tag>
inline constexpr bool narrower_range_than_fp32_v =
    numeric_traits<Tag>::exponent_bits < numeric_traits<Float>::exponent_bits;

namespace detail {
// Whether an element type is a format's bit patterns (`Encoded<Tag>`).
template <class T>
inline constexpr bool is_encoded_v = false;
template <class Tag>
inline constexpr bool is_encoded_v<Encoded<Tag>> = true;
}  // namespace detail

/// @brief The formats stochastic rounding targets and bit patterns are taken of: a 16-bit C++ scalar
/// (not `Encoded`) that holds the format itself, all 16 bits of it, with IEEE infinities (fp16, bf16).
template <class Tag>
concept SixteenBitTag = NumericTag<Tag> && sizeof(storage_t<Tag>) == 2 &&
                        !detail::is_encoded_v<storage_t<Tag>> &&
                        1 + numeric_traits<Tag>::exponent_bits + numeric_traits<Tag>::mantissa_bits == 16 &&
                        owns_storage_v<Tag> && numeric_traits<Tag>::non_finite == NonFinite::InfAndNan &&
                        !numeric_traits<Tag>::saturates;

/// @brief Element types of the `SixteenBitTag` formats (`Eigen::half`, `Eigen::bfloat16`).
template <class T>
concept SixteenBitElement = FloatingElement<T> && SixteenBitTag<typename tag_of<T>::type>;

/// @brief True when every finite value of `Narrow` is exactly representable in `Wide`: no fewer
/// mantissa bits, a largest value at least as large and a smallest positive value at least as small
/// (then at every magnitude Wide's spacing is at most Narrow's). Used to reject master types narrower
/// than compute types.
template <NumericTag Wide, NumericTag Narrow>
inline constexpr bool represents_v =
    numeric_traits<Wide>::mantissa_bits >=
        numeric_traits<Narrow>::mantissa_bits&& static_cast<double>(numeric_traits<Wide>::max_finite) >=
        static_cast<double>(numeric_traits<Narrow>::max_finite) &&
    static_cast<double>(min_positive_v<Wide>) <= static_cast<double>(min_positive_v<Narrow>);

namespace detail {

// Whether `numeric_traits<Tag>` is specialised at all (complete), whatever its members.
template <class Tag>
concept has_numeric_traits = requires {
  sizeof(numeric_traits<Tag>);
};

// The values of a complete description, checked against its layout (only once every member exists).
template <class Tag, bool = NumericTag<Tag>>
struct checked_format_values {
  static constexpr bool value = true;  // a member is missing: checked_format said which
};
template <class Tag>
struct checked_format_values<Tag, true> {
  using traits = numeric_traits<Tag>;
  static_assert(traits::exponent_bits >= 1 && traits::mantissa_bits >= 0 && traits::exponent_bias >= 0,
                "mpx::numeric_traits<Tag>: exponent_bits must be at least 1, mantissa_bits and exponent_bias "
                "at least 0");
  static consteval bool storage_holds_codes() {
    if constexpr (std::is_same_v<typename traits::storage_type, Encoded<Tag>>) {
      return true;  // sized by the layout
    } else {
      return 8 * sizeof(typename traits::storage_type) >= 1u + traits::exponent_bits + traits::mantissa_bits;
    }
  }
  static_assert(storage_holds_codes(),
                "mpx::numeric_traits<Tag>: storage_type has fewer bits than sign + exponent_bits + "
                "mantissa_bits");
  static_assert(traits::non_finite != NonFinite::None || traits::saturates,
                "mpx::numeric_traits<Tag>: a format whose every code is a number (non_finite = "
                "mpx::NonFinite::None) has nothing to overflow to: it must saturate (saturates = true)");
  static_assert(traits::non_finite != NonFinite::InfAndNan || traits::mantissa_bits >= 1,
                "mpx::numeric_traits<Tag>: NonFinite::InfAndNan needs a mantissa bit to tell NaN from "
                "infinity; a format without one uses NonFinite::NanOnly or NonFinite::None");
  static_assert(format_has_sign<Tag>() || traits::non_finite != NonFinite::None,
                "mpx::numeric_traits<Tag>: an unsigned format (has_sign = false) encodes negative values as "
                "its NaN, so it needs one (non_finite = mpx::NonFinite::NanOnly or InfAndNan)");
  static_assert(format_has_zero<Tag>() || (!traits::has_subnormals && traits::non_finite != NonFinite::None),
                "mpx::numeric_traits<Tag>: a format without zero (has_zero = false) holds normal values in "
                "its zero exponent field, so has_subnormals is false, and it encodes zero as NaN, so it "
                "needs one");
  static_assert(traits::max_finite == derived_max_finite<Tag>(),
                "mpx::numeric_traits<Tag>: max_finite is not the largest finite value of the layout "
                "(exponent_bits, mantissa_bits, exponent_bias, non_finite); compare it with the format's "
                "specification");
  static constexpr bool value = true;
};

// Names each member a description lacks, then checks the values. True (with no checks) for a type
// that has no numeric_traits at all: that is the caller's "not a precision tag" message.
template <class Tag, bool = has_numeric_traits<Tag>>
struct checked_format {
  static constexpr bool value = true;
};
template <class Tag>
struct checked_format<Tag, true> {
  using traits = numeric_traits<Tag>;
  static_assert(
      requires { typename traits::storage_type; },
      "mpx::numeric_traits<Tag>: storage_type is missing: the host element type of a tensor in "
      "this format (float, Eigen::half, ..., or mpx::Encoded<Tag> to keep bit patterns)");
  static_assert(
      requires { typename traits::accumulate_type; },
      "mpx::numeric_traits<Tag>: accumulate_type is missing: the type its values are computed "
      "and summed in (float)");
  static_assert(
      requires { traits::name; },
      "mpx::numeric_traits<Tag>: name is missing: static constexpr std::string_view name, the "
      "format's name in messages and records");
  static_assert(
      requires { traits::exponent_bits; },
      "mpx::numeric_traits<Tag>: exponent_bits is missing: static constexpr int, the width of "
      "the exponent field");
  static_assert(
      requires { traits::mantissa_bits; },
      "mpx::numeric_traits<Tag>: mantissa_bits is missing: static constexpr int, the explicit "
      "fraction bits");
  static_assert(
      requires { traits::exponent_bias; },
      "mpx::numeric_traits<Tag>: exponent_bias is missing: static constexpr int, the exponent "
      "field's offset (2^(exponent_bits - 1) - 1 in IEEE-like formats)");
  static_assert(
      requires { traits::has_subnormals; },
      "mpx::numeric_traits<Tag>: has_subnormals is missing: static constexpr bool, whether the "
      "zero exponent field holds subnormal values");
  static_assert(
      requires { traits::non_finite; },
      "mpx::numeric_traits<Tag>: non_finite is missing: static constexpr mpx::NonFinite, how "
      "infinities and NaN are encoded (InfAndNan, NanOnly or None)");
  static_assert(
      requires { traits::saturates; },
      "mpx::numeric_traits<Tag>: saturates is missing: static constexpr bool, whether encoding "
      "an out-of-range value gives +-max_finite rather than infinity or NaN");
  static_assert(
      requires { traits::max_finite; },
      "mpx::numeric_traits<Tag>: max_finite is missing: static constexpr accumulate_type, the "
      "largest finite value");
  static_assert(
      requires { traits::safetensors_dtype; },
      "mpx::numeric_traits<Tag>: safetensors_dtype is missing: static constexpr "
      "std::string_view, the dtype in safetensors files (\"\" when there is none)");
  static_assert(
      requires { traits::cuda_data_type; },
      "mpx::numeric_traits<Tag>: cuda_data_type is missing: static constexpr std::string_view, "
      "the name of its cudaDataType_t (\"\" when CUDA has none: it then runs on the CPU only)");
  static constexpr bool value = checked_format_values<Tag>::value;
};
}  // namespace detail

}  // namespace mpx
