// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The CUDA umbrella under the same user macros as user_macros.cpp (see tests/CMakeLists.txt).
#include <mpx/cuda.hpp>

int main() {
  return 0;
}
