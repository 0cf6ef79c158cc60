// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Links through mpx::onednn: the CPU GEMM must name oneDNN as its kernel, and fp32 and bf16 GEMMs
// must agree with an fp64 product of the same (bf16-representable) values.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include <mpx/mpx.hpp>

int main() {
  if (std::string_view(mpx::cpu::gemm_kernel_library) != "oneDNN") {
    std::printf("FAIL: mpx::cpu::gemm runs on %s, not oneDNN\n", mpx::cpu::gemm_kernel_library);
    return 1;
  }
  constexpr std::int64_t m = 33, n = 70, k = 129;
  mpx::Tensor<float> a(mpx::Shape{m, k}), b(mpx::Shape{k, n}), d(mpx::Shape{m, n}), d16(mpx::Shape{m, n});
  mpx::Tensor<Eigen::bfloat16> a16(mpx::Shape{m, k}), b16(mpx::Shape{k, n});
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    a16[i] = Eigen::bfloat16(static_cast<float>((i * 37) % 17) / 8.0f - 1.0f);
    a[i] = static_cast<float>(a16[i]);
  }
  for (std::int64_t i = 0; i < b.numel(); ++i) {
    b16[i] = Eigen::bfloat16(static_cast<float>((i * 11) % 13) / 4.0f - 1.5f);
    b[i] = static_cast<float>(b16[i]);
  }
  mpx::cpu::gemm<mpx::Float>(a, b, d, {});
  mpx::cpu::gemm<mpx::BFloat16>(a16, b16, d16, {});
  double worst = 0;
  for (std::int64_t row = 0; row < m; ++row) {
    for (std::int64_t col = 0; col < n; ++col) {
      double exact = 0;
      for (std::int64_t l = 0; l < k; ++l) exact += double(a[row * k + l]) * double(b[l * n + col]);
      worst = std::max({worst, std::abs(d[row * n + col] - exact), std::abs(d16[row * n + col] - exact)});
    }
  }
  std::printf("mpx::cpu::gemm on %s: largest difference from the fp64 product %.3g\n",
              mpx::cpu::gemm_kernel_library, worst);
  return worst <= 1e-3 ? 0 : 1;
}
