// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `numeric_traits<Tag>`: the customisation point describing each precision tag (as Eigen's
/// `NumTraits`), plus the `NumericTag` concept and the element-type <-> tag mapping.

#include <cstdint>
#include <string_view>
#include <type_traits>

#include <Eigen/Core>

#include "mpx/config.hpp"
#include "mpx/numeric/tags.hpp"

namespace mpx {

/// @brief Facts about a precision tag. Specialised for every tag in tags.hpp; the primary template is
/// left undefined so that a non-tag is detected by `NumericTag`.
///
/// Members: `storage_type` (host element type; bit-compatible with the CUDA type of the same width),
/// `math_type` (the type arithmetic on this format happens in, and so what products, sums, losses and
/// gradients accumulate in: a `Precision`'s `accumulate_type` is its compute type's), `name`, `mantissa_bits`
/// (explicit fraction bits), `exponent_bits`, and `max_finite`, `epsilon` (2^-mantissa_bits), `min_normal`.
template <class Tag>
struct numeric_traits;

template <>
struct numeric_traits<Double> {
  using storage_type = double;
  using math_type = double;
  static constexpr std::string_view name = "fp64";
  static constexpr int mantissa_bits = 52;
  static constexpr int exponent_bits = 11;
  static constexpr double max_finite = 0x1.fffffffffffffp+1023;
  static constexpr double epsilon = 0x1p-52;
  static constexpr double min_normal = 0x1p-1022;
};

template <>
struct numeric_traits<Float> {
  using storage_type = float;
  using math_type = float;
  static constexpr std::string_view name = "fp32";
  static constexpr int mantissa_bits = 23;
  static constexpr int exponent_bits = 8;
  static constexpr float max_finite = 0x1.fffffep+127f;
  static constexpr float epsilon = 0x1p-23f;
  static constexpr float min_normal = 0x1p-126f;
};

// TF32 is stored as fp32; only Tensor Core operands are rounded to it, so its limits are those of a
// float whose 13 low mantissa bits are zero.
template <>
struct numeric_traits<TF32> {
  using storage_type = float;
  using math_type = float;
  static constexpr std::string_view name = "tf32";
  static constexpr int mantissa_bits = 10;
  static constexpr int exponent_bits = 8;
  static constexpr float max_finite = 0x1.ffcp+127f;
  static constexpr float epsilon = 0x1p-10f;
  static constexpr float min_normal = 0x1p-126f;
};

template <>
struct numeric_traits<Half> {
  using storage_type = Eigen::half;
  using math_type = float;
  static constexpr std::string_view name = "fp16";
  static constexpr int mantissa_bits = 10;
  static constexpr int exponent_bits = 5;
  static constexpr float max_finite = 65504.0f;
  static constexpr float epsilon = 0x1p-10f;
  static constexpr float min_normal = 0x1p-14f;
};

template <>
struct numeric_traits<BFloat16> {
  using storage_type = Eigen::bfloat16;
  using math_type = float;
  static constexpr std::string_view name = "bf16";
  static constexpr int mantissa_bits = 7;
  static constexpr int exponent_bits = 8;
  static constexpr float max_finite = 0x1.fep+127f;
  static constexpr float epsilon = 0x1p-7f;
  static constexpr float min_normal = 0x1p-126f;
};

/// @brief A type is a precision tag when `numeric_traits` describes it.
template <class Tag>
concept NumericTag = requires {
  typename numeric_traits<Tag>::storage_type;
  typename numeric_traits<Tag>::math_type;
  { numeric_traits<Tag>::name } -> std::convertible_to<std::string_view>;
  { numeric_traits<Tag>::mantissa_bits } -> std::convertible_to<int>;
  { numeric_traits<Tag>::exponent_bits } -> std::convertible_to<int>;
};

/// @brief Host element type of a tag (`Eigen::bfloat16` for `BFloat16`, `float` for `TF32`).
template <NumericTag Tag>
using storage_t = typename numeric_traits<Tag>::storage_type;

/// @brief Type arithmetic on a tag's values happens in (`float`, or `double` for `Double`).
template <NumericTag Tag>
using math_t = typename numeric_traits<Tag>::math_type;

/// @brief Element type -> the tag that stores it. `float` maps to `Float` (a TF32 tensor is a float
/// tensor; TF32 is a property of the matmul, not of the storage). Only floating-point elements have
/// a tag: naming `tag_of_t<std::int32_t>` (an operation that needs a precision, given a label
/// tensor) is a compile error that says so.
template <class T>
struct tag_of {
  static_assert(sizeof(T) == 0,
                "mpx::tag_of<T>: T has no precision tag. Operations that round or compute (layers, losses, "
                "convert, round_into, the GEMM) take tensors of double, float, Eigen::half or "
                "Eigen::bfloat16; a Tensor<std::int32_t> holds class labels or token ids, which are "
                "moved and compared but never rounded");
};
template <>
struct tag_of<double> {
  using type = Double;
};
template <>
struct tag_of<float> {
  using type = Float;
};
template <>
struct tag_of<Eigen::half> {
  using type = Half;
};
template <>
struct tag_of<Eigen::bfloat16> {
  using type = BFloat16;
};
/// @brief The tag that stores `T`.
template <class T>
using tag_of_t = typename tag_of<T>::type;

/// @brief Element types that have a precision tag (double, float, Eigen::half, Eigen::bfloat16): what
/// layers, losses, conversions and the GEMM compute with.
template <class T>
concept FloatingElement = std::is_same_v<T, double> || std::is_same_v<T, float> ||
    std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

/// @brief Element types mpx tensors hold: the floating ones, and `std::int32_t` for class labels and
/// token ids (moved between devices and compared, never rounded; it has no `tag_of`).
template <class T>
concept Element = FloatingElement<T> || std::is_same_v<T, std::int32_t>;

namespace detail {
template <Element T>
constexpr std::string_view element_name() noexcept {
  if constexpr (FloatingElement<T>) {
    return numeric_traits<typename tag_of<T>::type>::name;
  } else {
    return "int32";
  }
}
}  // namespace detail

/// @brief Name of an element type in messages: its tag's name ("fp32", "bf16", ...) or "int32".
template <Element T>
inline constexpr std::string_view element_name = detail::element_name<T>();

/// @brief The 16-bit formats: the ones stochastic rounding targets and bit patterns are taken of.
template <class Tag>
concept SixteenBitTag = std::is_same_v<Tag, Half> || std::is_same_v<Tag, BFloat16>;

/// @brief Element types of the 16-bit formats (`Eigen::half`, `Eigen::bfloat16`).
template <class T>
concept SixteenBitElement = std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

/// @brief True when every value of `Narrow` is exactly representable in `Wide` (no fewer mantissa
/// or exponent bits). Used to reject master types narrower than compute types.
template <NumericTag Wide, NumericTag Narrow>
inline constexpr bool represents_v =
    numeric_traits<Wide>::mantissa_bits >=
    numeric_traits<Narrow>::mantissa_bits&& numeric_traits<Wide>::exponent_bits >=
    numeric_traits<Narrow>::exponent_bits;

}  // namespace mpx
