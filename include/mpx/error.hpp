// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::error`, the one exception type every mpx failure derives from, and
/// `detail::always_false`, for misuse that is a compile error instead.

#include <array>
#include <charconv>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace mpx {

/// @brief Base of every exception mpx throws; the message names the place and the offending values.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// @brief A shape that does not fit an operation (GEMM operands, layer inputs, tensor views).
class shape_error : public error {
 public:
  using error::error;
};

/// @brief A setting outside its valid range (scaler options, rounding seeds, CLI values).
class invalid_argument : public error {
 public:
  using error::error;
};

/// @brief An allocation that could not be satisfied; the message gives requested and available bytes.
class out_of_memory : public error {
 public:
  using error::error;
};

/// @brief A file that is missing, unreadable or corrupt (dataset files, checkpoints); the message names
/// the path, the byte offset and the values found against those expected.
class io_error : public error {
 public:
  using error::error;
};

namespace detail {
/// Streams all arguments into one string: the building block of every mpx error message.
template <class... Parts>
[[nodiscard]] std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}

/// The shortest decimal that reads back to exactly `value` (an integer or floating-point number), so
/// that a message or a file names the very value: a double `1.0000000001` is not shown as `1`, and
/// `0.3f` shows as `0.3` while the double nearest it shows as `0.30000001192092896`.
template <class T>
[[nodiscard]] std::string exact_text(T value) {
  std::array<char, 64> buffer{};
  const auto [end, status] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  (void)status;  // 64 characters hold any int64 or double
  return std::string(buffer.data(), end);
}

/// False, but only once the template arguments are known: the condition of a `static_assert` that
/// must fire only when the template holding it (an overload that exists to reject a misuse with a
/// message naming the fix) is instantiated.
template <class...>
inline constexpr bool always_false = false;
}  // namespace detail

}  // namespace mpx
