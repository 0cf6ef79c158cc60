// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A Linear layer's forward pass, Y = GELU(X W^T + b), as one GEMM with a fused epilogue, in bf16
// with fp32 accumulation, compared with the same GEMM in fp32.
#include <cstdio>
#include <random>

#include <mpx/mpx.hpp>

int main() {
  constexpr std::int64_t batch = 64, in_features = 256, out_features = 128;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);

  mpx::Tensor<float> x(mpx::Shape{batch, in_features}), w(mpx::Shape{out_features, in_features}),
      b(mpx::Shape{out_features});
  for (float& v : x.values()) v = normal(rng);
  for (float& v : w.values()) v = normal(rng) / 16.0f;
  for (float& v : b.values()) v = normal(rng) / 4.0f;

  // Reference: everything in fp32.
  mpx::Tensor<float> y32(mpx::Shape{batch, out_features}), pre32(mpx::Shape{batch, out_features});
  mpx::cpu::gemm<mpx::Float>(x, w, y32,
                             {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::GeluAuxBias},
                             {.bias = &b, .aux = &pre32});

  // bf16 compute: operands and output in bf16, products and sums in fp32; the epilogue keeps the
  // pre-activation (aux) for the backward pass, as cuBLASLt's GELU_AUX_BIAS does.
  const auto x16 = mpx::convert<mpx::BFloat16>(x);
  const auto w16 = mpx::convert<mpx::BFloat16>(w);
  const auto b16 = mpx::convert<mpx::BFloat16>(b);
  mpx::Tensor<Eigen::bfloat16> y16(mpx::Shape{batch, out_features}), pre16(mpx::Shape{batch, out_features});
  mpx::cpu::gemm<mpx::BFloat16>(x16, w16, y16,
                                {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::GeluAuxBias},
                                {.bias = &b16, .aux = &pre16});

  const auto y16_as_fp32 = mpx::convert<mpx::Float>(y16);
  const float max_error = (y16_as_fp32.matrix() - y32.matrix()).cwiseAbs().maxCoeff();
  const float max_value = y32.matrix().cwiseAbs().maxCoeff();
  std::printf(
      "Y = GELU(X W^T + b), %ldx%ld by %ldx%ld: bf16 vs fp32 max |error| %.4g (max |Y| %.4g, bf16 eps "
      "%.4g)\n",
      long(batch), long(in_features), long(out_features), long(in_features), double(max_error),
      double(max_value), double(mpx::epsilon_v<mpx::BFloat16>));
  std::printf("host memory: %lld bytes live, %lld bytes peak\n",
              static_cast<long long>(mpx::memory_stats<mpx::Host>().live_bytes()),
              static_cast<long long>(mpx::memory_stats<mpx::Host>().peak_bytes()));
  return 0;
}
