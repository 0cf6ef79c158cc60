// expect: T has no precision tag
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: asking for the precision tag of an int32 (label) element, as code written for floating
// tensors does through tag_of_t or accumulate_t<T>; the static_assert names what to use instead.
#include <cstdint>

#include <mpx/numeric/traits.hpp>

#ifdef MPX_COMPILE_FAIL_CONTROL
using Value = float;
#else
using Value = std::int32_t;
#endif

using Acc = mpx::accumulate_t<Value>;

int main() {
  return sizeof(Acc) > 0 ? 0 : 1;
}
