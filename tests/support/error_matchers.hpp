// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Checking what an error says: every mpx error must name the place and the values.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <exception>
#include <initializer_list>
#include <string>
#include <vector>

#include "mpx/error.hpp"

namespace mpx::test {

/// Matches an exception whose what() contains every given fragment.
class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  MessageContains(std::initializer_list<std::string> fragments) : fragments_(fragments) {}

  bool match(const std::exception& exception) const override {
    const std::string message = exception.what();
    return std::all_of(fragments_.begin(), fragments_.end(), [&](const std::string& fragment) {
      return message.find(fragment) != std::string::npos;
    });
  }

  std::string describe() const override {
    std::string text = "has a message containing";
    for (const std::string& fragment : fragments_) text += " \"" + fragment + "\"";
    return text;
  }

 private:
  std::vector<std::string> fragments_;
};

/// The message of the mpx::invalid_argument that f() throws, or "<nothing thrown>".
template <class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const mpx::invalid_argument& e) {
    return e.what();
  }
  return "<nothing thrown>";
}

}  // namespace mpx::test
