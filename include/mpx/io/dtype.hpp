// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Which safetensors dtype a number format is saved as, and decoding a file's tensor into any
/// format: both derived from the formats' `numeric_traits` (`safetensors_dtype`, the storage type,
/// the accumulate type), so a format added to `mpx::BuiltinFormats` is read from files with no code
/// here.

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "mpx/io/safetensors.hpp"
#include "mpx/numeric/encoded.hpp"
#include "mpx/numeric/rounding.hpp"
#include "mpx/numeric/tags.hpp"
#include "mpx/numeric/traits.hpp"

namespace mpx::io::detail {

// The dtype called `name` ("BF16"); false when the format has no such dtype.
[[nodiscard]] constexpr bool dtype_named(std::string_view name, Dtype& dtype) noexcept {
  for (const DtypeInfo& info : dtype_table) {
    if (info.name == name) {
      dtype = info.dtype;
      return true;
    }
  }
  return false;
}

// Whether files' tensors of `Tag`'s dtype are decoded as `Tag`: the format owns its storage (TF32's
// values are fp32's), names a dtype the file format has, and its storage is that dtype's size.
template <NumericTag Tag>
consteval bool decodes_as() {
  Dtype dtype{};
  if constexpr (!owns_storage_v<Tag>) {
    return false;
  } else {
    return dtype_named(numeric_traits<Tag>::safetensors_dtype, dtype) &&
           dtype_size(dtype) == sizeof(storage_t<Tag>);
  }
}

/// The safetensors dtype a host element is saved as: its format's `safetensors_dtype`.
template <FloatingElement T>
inline constexpr Dtype saved_dtype = [] {
  Dtype dtype{};
  const bool named = dtype_named(numeric_traits<tag_of_t<T>>::safetensors_dtype, dtype);
  return named ? dtype : throw "the format of this element type has no safetensors dtype";
}();

// Decodes `count` elements of `Format` (whose dtype `dtype` is) into `out`, rounding to nearest
// into T's format; false, doing nothing, when `dtype` is not `Format`'s.
template <NumericTag Format, class T>
bool decode_as(Dtype dtype, std::span<const std::byte> bytes, T* out, std::size_t count) {
  if constexpr (!decodes_as<Format>()) {
    return false;
  } else {
    if (dtype_name(dtype) != numeric_traits<Format>::safetensors_dtype) return false;
    using S = storage_t<Format>;
    static_assert(std::is_trivially_copyable_v<S>);
    const std::byte* in = bytes.data();
    for (std::size_t i = 0; i < count; ++i) {
      S value;
      std::memcpy(&value, in + sizeof(S) * i, sizeof(S));
      out[i] = round_to<tag_of_t<T>>(static_cast<accumulate_t<Format>>(value));
    }
    return true;
  }
}
template <class T, class... Formats>
bool decode_as_one_of(Dtype dtype, std::span<const std::byte> bytes, T* out, std::size_t count,
                      FormatList<Formats...>) {
  return (decode_as<Formats>(dtype, bytes, out, count) || ...);
}

/// Converts `count` elements of a floating-point `dtype` (the dtype of a built-in format) into `out`,
/// rounding to nearest where the target is narrower. Other dtypes are rejected before (`is_floating`).
template <FloatingElement T>
void convert_into(Dtype dtype, std::span<const std::byte> bytes, T* out, std::size_t count) {
  decode_as_one_of(dtype, bytes, out, count, BuiltinFormats{});
}

template <class... Formats>
constexpr bool is_dtype_of_one_of(Dtype dtype, FormatList<Formats...>) noexcept {
  return ((decodes_as<Formats>() && dtype_name(dtype) == numeric_traits<Formats>::safetensors_dtype) || ...);
}

/// Whether tensors of `dtype` decode into floating tensors: it is the dtype of a built-in format.
[[nodiscard]] constexpr bool is_floating(Dtype dtype) noexcept {
  return is_dtype_of_one_of(dtype, BuiltinFormats{});
}

template <class... Formats>
std::string dtype_list(FormatList<Formats...>) {
  std::string names;
  std::size_t count = 0;
  const std::size_t total = (std::size_t{decodes_as<Formats>() ? 1u : 0u} + ...);
  const auto add = [&](std::string_view name) {
    if (count != 0) names.append(count + 1 == total ? " or " : ", ");
    names.append(name);
    ++count;
  };
  ((decodes_as<Formats>() ? add(numeric_traits<Formats>::safetensors_dtype) : void()), ...);
  return names;
}

/// The floating dtypes a file may hold, for messages: "F64, F32, F16, BF16, F8_E4M3 or F8_E5M2".
[[nodiscard]] inline std::string floating_dtypes() {
  return dtype_list(BuiltinFormats{});
}

}  // namespace mpx::io::detail
