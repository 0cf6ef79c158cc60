// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// mpx::cuda::gemm called from a translation unit the host compiler builds, in the same program as the
// .cu tests that instantiate the same templates (gemm_cuda_test.cu: gemm<BFloat16> into bf16): one
// definition for both, whose unfused path reaches the kernels the nvcc units registered (K = 0 always
// takes it). main() is in numeric_cuda_test.cu and skips (exit 77) without a device.
#include <catch2/catch.hpp>

#include <cstdint>

#include <mpx/backend/cuda/gemm.hpp>
#include <mpx/backend/cuda/memory.hpp>
#include <mpx/mpx.hpp>

#include "../support/relu_mask.hpp"
#include "support.hpp"

namespace {

// Small integers: every product, sum and rounding into bf16 below is exact, so CPU and GPU agree bit
// for bit.
template <mpx::Element T>
mpx::Tensor<T> small_integers(const mpx::Shape& shape, int seed) {
  mpx::Tensor<T> t(shape);
  std::int64_t i = 0;
  for (T& x : t.values()) x = static_cast<T>(static_cast<float>((i++ * 7 + seed) % 5 - 2));
  return t;
}

template <mpx::NumericTag... Computes>
bool every_unfused_launcher_registered() {
  using namespace mpx::cuda::detail;
  return ((UnfusedEpilogueFor<Computes, mpx::storage_t<Computes>>::launch != nullptr &&
           UnfusedEpilogueFor<Computes, mpx::accumulate_t<Computes>>::launch != nullptr &&
           UnfusedOperandReductionFor<Computes>::launch != nullptr) &&
          ...);
}

}  // namespace

TEST_CASE("host-compiled code sees the unfused gemm kernels the nvcc units registered", "[cuda][gemm]") {
  CHECK(every_unfused_launcher_registered<mpx::Double, mpx::Float, mpx::TF32, mpx::Half, mpx::BFloat16>());
}

TEST_CASE("host-compiled code runs cuda::gemm's unfused path", "[cuda][gemm]") {
  using S = Eigen::bfloat16;
  const std::int64_t m = 5, n = 7, k = 8;
  const auto a = small_integers<S>(mpx::Shape{m, k}, 1);
  const auto b = small_integers<S>(mpx::Shape{k, n}, 2);
  // Both signs and zeros: the pre-activation whose signs DReluBGrad's mask holds, and K = 0's C.
  const auto pre = small_integers<S>(mpx::Shape{m, n}, 3);

  SECTION("DReluBGrad reading a ReLU mask, fused or unfused as cuBLASLt decides, exact either way") {
    // An fp32 bias gradient beside a bf16 D: cuBLASLt may fuse DRELU_BGRAD, offer nothing or refuse
    // it (cublasLt.h documents bias gradients in D's type only); the K = 0 section below is the one
    // sure to take the unfused path.
    const mpx::GemmConfig config{.epilogue = mpx::Epilogue::DReluBGrad};
    mpx::Tensor<S> d_cpu(mpx::Shape{m, n});
    auto mask_cpu = mpx::test::relu_mask_of(pre);
    mpx::Tensor<float> bias_grad_cpu(mpx::Shape{n});
    mpx::cpu::gemm<mpx::BFloat16>(a, b, d_cpu, config, {.relu_mask = &mask_cpu, .bias_grad = &bias_grad_cpu});

    const auto a_gpu = mpx::to_device(a);
    const auto b_gpu = mpx::to_device(b);
    auto d_gpu = mpx::Tensor<S, mpx::Cuda>(mpx::Shape{m, n});
    auto mask_gpu = mpx::to_device(mask_cpu);
    mpx::Tensor<float, mpx::Cuda> bias_grad_gpu(mpx::Shape{n});
    mpx::cuda::reset_gemm_path_counts();
    mpx::cuda::gemm<mpx::BFloat16>(a_gpu, b_gpu, d_gpu, config,
                                   {.relu_mask = &mask_gpu, .bias_grad = &bias_grad_gpu});
    const auto counts = mpx::cuda::gemm_path_counts();
    CHECK(counts.fused + counts.unfused == 1);
    const auto d_back = mpx::to_host(d_gpu);
    const auto bias_grad_back = mpx::to_host(bias_grad_gpu);
    for (std::int64_t i = 0; i < m * n; ++i) {
      CHECK(static_cast<float>(d_back[i]) == static_cast<float>(d_cpu[i]));
    }
    for (std::int64_t j = 0; j < n; ++j) CHECK(bias_grad_back[j] == bias_grad_cpu[j]);
  }

  SECTION("K = 0 with BGradB: D = beta C and a zero bias gradient, through both unfused kernels") {
    const auto a0 = mpx::to_device(mpx::Tensor<S>(mpx::Shape{m, 0}));
    const auto b0 = mpx::to_device(mpx::Tensor<S>(mpx::Shape{0, n}));
    auto d_gpu = mpx::to_device(pre);
    mpx::Tensor<float, mpx::Cuda> bias_grad_gpu(mpx::Shape{n});
    mpx::cuda::reset_gemm_path_counts();
    mpx::cuda::gemm<mpx::BFloat16>(a0, b0, d_gpu, {.beta = 2.0F, .epilogue = mpx::Epilogue::BGradB},
                                   {.bias_grad = &bias_grad_gpu});
    CHECK(mpx::cuda::gemm_path_counts().unfused == 1);
    const auto d_back = mpx::to_host(d_gpu);
    const auto bias_grad_back = mpx::to_host(bias_grad_gpu);
    for (std::int64_t i = 0; i < m * n; ++i) {
      CHECK(static_cast<float>(d_back[i]) == 2.0F * static_cast<float>(pre[i]));
    }
    for (std::int64_t j = 0; j < n; ++j) CHECK(bias_grad_back[j] == 0.0F);
  }
}
