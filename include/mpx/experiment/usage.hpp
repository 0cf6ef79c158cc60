// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
#pragma once
/// @file
/// @brief `experiment::Usage`: a training program's command-line usage (its name and the synopsis of
/// its options) and the errors its argument parser reports against it, as the examples parse
/// `--option value` pairs.

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "mpx/error.hpp"

namespace mpx::experiment {

/// @brief A program's name and option synopsis, and the checks of an argument parser that end the
/// program on a bad argument: each prints "<program>: <message>" and "usage: <program> <synopsis>"
/// on stderr and exits with code 2, as command-line tools do (the program has started nothing yet).
/// @code
/// const mpx::experiment::Usage usage("train", "[--epochs N] [--device cpu|cuda|auto]");
/// for (int i = 1; i < argc; ++i) {
///   const std::string option = argv[i];
///   const std::string value = usage.value_after(argc, argv, i);
///   if (option == "--epochs")
///     epochs = int(usage.number(option, value, 1, 1000));
///   else if (option == "--device")
///     device = value;
///   else
///     usage.fail("unknown option " + option);
/// }
/// usage.require_one_of("--device", device, {"cpu", "cuda", "auto"});
/// @endcode
class Usage {
 public:
  /// @brief The usage of `program`, whose options `synopsis` lists ("[--epochs N] ...").
  Usage(std::string program, std::string synopsis)
      : program_(std::move(program)), synopsis_(std::move(synopsis)) {}

  /// @brief The program's name, as messages name it.
  [[nodiscard]] const std::string& program() const noexcept { return program_; }

  /// @brief Prints "<program>: <message>" and the usage line on stderr and exits with code 2.
  [[noreturn]] void fail(const std::string& message) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_.c_str(), message.c_str(), program_.c_str(),
                 synopsis_.c_str());
    std::exit(2);
  }

  /// @brief The value of the option `argv[i]`, `argv[i + 1]`, with `i` advanced to it; fails with
  /// "option <option> needs a value" when the option is the last argument. `--help` or `-h` in its
  /// place prints the usage line on stdout and exits with code 0 (every option passes through here,
  /// so a program gets its help without a branch of its own).
  [[nodiscard]] std::string value_after(int argc, char** argv, int& i) const {
    const std::string_view option = argv[i];
    if (option == "--help" || option == "-h") {
      std::printf("usage: %s %s\n", program_.c_str(), synopsis_.c_str());
      std::exit(0);
    }
    if (i + 1 >= argc) fail("option " + std::string(option) + " needs a value");
    return argv[++i];
  }

  /// @brief `value` read as a number (`std::strtod`: decimal, exponent, hexadecimal); fails with
  /// "<option> <value>: expected a number in [low, high]" unless all of it is one in that range.
  [[nodiscard]] double number(const std::string& option, const std::string& value, double low,
                              double high) const {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str() || *end != '\0' || !(v >= low && v <= high)) {
      // The bounds as exact_text writes them ("1e-12", "60000"), not std::to_string's six decimals,
      // which would print a lower bound of 1e-12 as 0.000000.
      fail(option + " " + value + ": expected a number in [" + mpx::detail::exact_text(low) + ", " +
           mpx::detail::exact_text(high) + "]");
    }
    return v;
  }

  /// @brief Fails with "<option> <value>: expected a, b or c" unless `value` is one of `choices`.
  void require_one_of(std::string_view option, std::string_view value,
                      std::initializer_list<std::string_view> choices) const {
    std::string expected;
    std::size_t index = 0;
    for (const std::string_view choice : choices) {
      if (choice == value) return;
      if (index > 0) expected += index + 1 == choices.size() ? " or " : ", ";
      expected += choice;
      ++index;
    }
    fail(std::string(option) + " " + std::string(value) + ": expected " + expected);
  }

 private:
  std::string program_;
  std::string synopsis_;
};

}  // namespace mpx::experiment
