// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A sliding window as one line of text, so that a failed comparison prints every field.
#pragma once

#include <string>

#include "mpx/backend/window2d_spec.hpp"

namespace mpx::test {

/// "kernel KH x KW, stride SH x SW, padding PH x PW, dilation DH x DW".
inline std::string window_text(const mpx::Window2d& w) {
  const auto pair = [](mpx::Size2d s) { return std::to_string(s.h) + " x " + std::to_string(s.w); };
  return "kernel " + pair(w.kernel) + ", stride " + pair(w.stride) + ", padding " + pair(w.padding) +
         ", dilation " + pair(w.dilation);
}

}  // namespace mpx::test
