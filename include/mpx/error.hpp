// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `mpx::error`, the one exception type every mpx failure derives from, and
/// `detail::always_false`, for misuse that is a compile error instead.

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

/// False, but only once the template arguments are known: the condition of a `static_assert` that
/// must fire only when the template holding it (an overload that exists to reject a misuse with a
/// message naming the fix) is instantiated.
template <class...>
inline constexpr bool always_false = false;
}  // namespace detail

}  // namespace mpx
