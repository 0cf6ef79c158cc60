// expect: exponent_bias is missing
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a number format of one's own whose numeric_traits lack a member (here exponent_bias);
// the first use of the format names the member, its type and what it means.
#include <string_view>

#include <mpx/numeric/encoded.hpp>

struct MyE4M3 {};

template <>
struct mpx::numeric_traits<MyE4M3> {
  using storage_type = mpx::Encoded<MyE4M3>;
  using accumulate_type = float;
  static constexpr std::string_view name = "my_e4m3";
  static constexpr int exponent_bits = 4;
  static constexpr int mantissa_bits = 3;
#ifdef MPX_COMPILE_FAIL_CONTROL
  static constexpr int exponent_bias = 7;
#endif
  static constexpr bool has_subnormals = true;
  static constexpr mpx::NonFinite non_finite = mpx::NonFinite::NanOnly;
  static constexpr bool saturates = true;
  static constexpr float max_finite = 448.0f;
  static constexpr std::string_view safetensors_dtype = "";
  static constexpr std::string_view cuda_data_type = "";
};

int main() {
  const mpx::Encoded<MyE4M3> x(1.0f);
  return x.bits == 0x38 ? 0 : 1;
}
