// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief Counting mismatches over millions of inputs without one test-framework assertion each:
/// a test records every comparison here, then asserts once on `failures` and prints `summary()`,
/// which names the first few failing inputs. Plain code, no test framework.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

namespace mpx_test {

/// @brief `value` as 0x-prefixed hex with `digits` digits.
[[nodiscard]] inline std::string hex(std::uint64_t value, int digits) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "0x%0*llx", digits, static_cast<unsigned long long>(value));
  return buffer;
}

/// @brief A float as its bits and its exact value in hex-float notation, e.g. "0x3f801000 (0x1.002p+0)".
[[nodiscard]] inline std::string describe_float(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "0x%08x (%a)", static_cast<unsigned>(bits),
                static_cast<double>(value));
  return buffer;
}

class MismatchLog {
 public:
  explicit MismatchLog(std::string what) : what_(std::move(what)) {}

  /// @brief Records one comparison; `describe()` is called only for the first few failures.
  template <class Describe>
  void check(bool ok, Describe&& describe) {
    ++checked_;
    if (ok) return;
    if (failures_ < max_examples) examples_ += "  " + std::string(describe()) + "\n";
    ++failures_;
  }

  [[nodiscard]] std::uint64_t checked() const { return checked_; }
  [[nodiscard]] std::uint64_t failures() const { return failures_; }
  [[nodiscard]] std::string summary() const {
    return what_ + ": " + std::to_string(failures_) + " of " + std::to_string(checked_) + " failed" +
           (failures_ ? " (first ones below)\n" + examples_ : std::string());
  }

 private:
  static constexpr std::uint64_t max_examples = 8;
  std::string what_;
  std::string examples_;
  std::uint64_t checked_ = 0;
  std::uint64_t failures_ = 0;
};

}  // namespace mpx_test
