// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// nn::Linear under the FP8 precisions: the casts and GEMMs against a transcription of what they must
// compute, the recipes' scale state through steps, and training.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <mpx/mpx.hpp>

#include "../support/temp_dir.hpp"

namespace {
namespace MPX_UNITY_ID {

using mpx::Shape;
using mpx::Tensor;
using mpx::nn::Fp8Tensor;
using E4M3 = mpx::Encoded<mpx::Float8E4M3>;
using E5M2 = mpx::Encoded<mpx::Float8E5M2>;
using Delayed = mpx::fp8_hybrid<mpx::DelayedScaling<4>>;
using Current = mpx::fp8_hybrid<mpx::CurrentScaling<>>;

Tensor<Eigen::bfloat16> random_bf16(const Shape& shape, float spread, std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, spread);
  Tensor<Eigen::bfloat16> t(shape);
  for (auto& v : t.values()) v = Eigen::bfloat16(normal(random));
  return t;
}

template <class T>
float largest_magnitude(const Tensor<T>& t) {
  float largest = 0.0f;
  for (const T& v : t.values()) largest = std::max(largest, std::fabs(static_cast<float>(v)));
  return largest;
}

// y = bf16(sum_k fp8(x * sx) fp8(w * sw) / (sx sw) + b): the codes cast here, the GEMM as
// cpu::gemm_scaled computes it under the forward GEMM's accumulator model, Hopper's fast accumulation
// (tested in gemm_cpu_test.cpp).
Tensor<Eigen::bfloat16> expected_forward(const Tensor<Eigen::bfloat16>& x, const Tensor<float>& w,
                                         const Tensor<Eigen::bfloat16>& bias, float sx, float sw) {
  Tensor<E4M3> x8(x.shape()), w8(w.shape());
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x8[i] = E4M3::rounded<mpx::Overflow::Saturate>(static_cast<float>(x[i]) * sx);
  for (std::int64_t i = 0; i < w.numel(); ++i) w8[i] = E4M3::rounded<mpx::Overflow::Saturate>(w[i] * sw);
  Tensor<Eigen::bfloat16> y(Shape{x.shape().rows(), w.shape().rows()});
  const float x_inverse = 1.0f / sx, w_inverse = 1.0f / sw;
  mpx::cpu::gemm_scaled<mpx::Float8E4M3, mpx::Float8E4M3, mpx::HopperFp8FastAccumulation>(
      x8, w8, y, {.transpose_b = mpx::Transpose::Yes, .epilogue = mpx::Epilogue::Bias}, {.bias = &bias},
      &x_inverse, &w_inverse);
  return y;
}

bool same_bits(const Tensor<Eigen::bfloat16>& a, const Tensor<Eigen::bfloat16>& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

TEST_CASE("FP8 precisions: names, formats and the compute type activations keep", "[fp8][policy]") {
  STATIC_REQUIRE(mpx::PrecisionPolicy<Delayed>);
  STATIC_REQUIRE(mpx::Fp8PrecisionPolicy<Delayed>);
  STATIC_REQUIRE(!mpx::Fp8PrecisionPolicy<mpx::bf16_mixed>);
  STATIC_REQUIRE(std::is_same_v<mpx::compute_t<Delayed>, Eigen::bfloat16>);
  STATIC_REQUIRE(std::is_same_v<mpx::accumulate_t<Delayed>, float>);
  STATIC_REQUIRE(std::is_same_v<Delayed::backward_format, mpx::Float8E5M2>);
  STATIC_REQUIRE(std::is_same_v<mpx::fp8_e4m3<>::backward_format, mpx::Float8E4M3>);
  CHECK(mpx::fp8_hybrid<mpx::DelayedScaling<>>::name == "fp8_hybrid_delayed");
  CHECK(mpx::fp8_e4m3<mpx::CurrentScaling<>>::name == "fp8_e4m3_current");
  CHECK(mpx::Fp8Precision<mpx::CurrentScaling<>, mpx::Fp8Hybrid, mpx::Half>::name ==
        "fp8_hybrid_current_fp16");
  // Each GEMM's accumulator model: Transformer Engine's choice on Hopper unless asked otherwise.
  STATIC_REQUIRE(std::is_same_v<Delayed::accumulation::fprop, mpx::HopperFp8FastAccumulation>);
  STATIC_REQUIRE(std::is_same_v<Delayed::accumulation::dgrad, mpx::PromotedAccumulation<>>);
  STATIC_REQUIRE(std::is_same_v<Delayed::accumulation::wgrad, mpx::PromotedAccumulation<>>);
  CHECK(mpx::fp8_hybrid<mpx::DelayedScaling<>, mpx::Fp32GemmAccumulation>::name ==
        "fp8_hybrid_delayed_fp32acc");
  using Mixed = mpx::GemmAccumulation<mpx::Fp32Accumulation, mpx::HopperFp8FastAccumulation,
                                      mpx::PromotedAccumulation<>>;
  CHECK(mpx::fp8_e4m3<mpx::CurrentScaling<>, Mixed>::name == "fp8_e4m3_current_fp32_truncated_promoted");
}

TEST_CASE("The casts' branch-free FP8 encoder gives the reference encoder's codes", "[fp8][numeric]") {
  // Every 256th fp32 bit pattern (2^24 inputs: every exponent, both signs, NaNs and infinities) plus
  // one step either side, against mpx::detail::encode_bits, saturating. (All 2^32 inputs agreed when
  // the encoder was written: 36 s, too long for CI.)
  const auto mismatches = []<class Format>(Format) {
    std::int64_t count = 0;
    for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += 256) {
      for (const std::uint64_t bits : {base, base + 1, base + 255}) {
        const float x = std::bit_cast<float>(static_cast<std::uint32_t>(bits));
        count += mpx::cpu::detail::encode_saturating<Format>(x) != mpx::detail::encode_bits<Format, true>(x);
      }
    }
    return count;
  };
  CHECK(mismatches(mpx::Float8E4M3{}) == 0);
  CHECK(mismatches(mpx::Float8E5M2{}) == 0);
}

TEST_CASE("An FP8 Linear under delayed scaling: casts, GEMMs and the scales' history through steps",
          "[fp8][nn]") {
  std::mt19937 random(17);
  mpx::nn::Linear<Delayed> layer(48, 40);
  layer.initialize(3, 0);
  const auto x = random_bf16(Shape{32, 48}, 2.0f, random);
  const auto& bias = layer.bias()->compute();

  // Step 1: every scale is 1.
  const Tensor<Eigen::bfloat16> y1 = layer.forward(x).clone();
  CHECK(same_bits(y1, expected_forward(x, layer.weight().master(), bias, 1.0f, 1.0f)));
  const auto dy = random_bf16(Shape{32, 40}, 1e-3f, random);
  const Tensor<Eigen::bfloat16> dx = layer.backward(dy)->clone();

  // The amaxes went into row 0 of the history: |x|, |W| and |dY| as they were, not scaled.
  const float amax_x = largest_magnitude(x), amax_w = largest_magnitude(layer.weight().master());
  const float amax_g = largest_magnitude(dy);
  auto& scales = layer.fp8_scales();
  CHECK(scales.amaxes()[0] == amax_x);
  CHECK(scales.amaxes()[1] == amax_w);
  CHECK(scales.amaxes()[2] == amax_g);

  // dx = dY W from the E5M2 codes of dY and the E4M3 codes of W (scales 1), promoted every 128
  // products as Transformer Engine's dgrad is: transcribed.
  Tensor<E5M2> g8(dy.shape());
  for (std::int64_t i = 0; i < dy.numel(); ++i)
    g8[i] = E5M2::rounded<mpx::Overflow::Saturate>(static_cast<float>(dy[i]));
  Tensor<E4M3> w8(layer.weight().shape());
  for (std::int64_t i = 0; i < w8.numel(); ++i)
    w8[i] = E4M3::rounded<mpx::Overflow::Saturate>(layer.weight().master()[i]);
  Tensor<Eigen::bfloat16> expected_dx(x.shape());
  const float one = 1.0f;
  mpx::cpu::gemm_scaled<mpx::Float8E5M2, mpx::Float8E4M3, mpx::PromotedAccumulation<>>(g8, w8, expected_dx,
                                                                                       {}, {}, &one, &one);
  CHECK(same_bits(dx, expected_dx));
  // The bias gradient sums dY itself (bf16), as TE's cast kernels do, not its E5M2 codes.
  double column0 = 0;
  for (std::int64_t r = 0; r < 32; ++r) column0 += static_cast<double>(static_cast<float>(dy[r * 40]));
  CHECK(layer.bias()->grad()[0] == Approx(column0).epsilon(1e-6));

  // The update after backward: histories roll (row 0 cleared, the amax now last), and each scale is
  // (largest finite value / amax) in one fp32 division: 448 for E4M3, 57344 for E5M2.
  layer.update_fp8_scales();
  CHECK(scales.amaxes()[0] == 0.0f);
  CHECK(scales.amaxes()[3 * 3 + 0] == amax_x);
  CHECK(scales.scales()[0] == 448.0f / amax_x);
  CHECK(scales.scales()[1] == 448.0f / amax_w);
  CHECK(scales.scales()[2] == 57344.0f / amax_g);

  // Step 2 casts with those scales.
  const Tensor<Eigen::bfloat16> y2 = layer.forward(x).clone();
  CHECK(same_bits(y2, expected_forward(x, layer.weight().master(), bias, 448.0f / amax_x, 448.0f / amax_w)));
  CHECK(scales.amaxes()[0] == amax_x);  // recorded again

  // An evaluation forward casts with the same scales and records nothing: evaluating between steps
  // leaves the history as training left it.
  mpx::nn::set_training(layer, false);
  const auto larger = random_bf16(Shape{32, 48}, 50.0f, random);
  (void)layer.forward(larger);
  CHECK(scales.amaxes()[0] == amax_x);
  CHECK(scales.scales()[0] == 448.0f / amax_x);
}

TEST_CASE("An FP8 Linear under current scaling scales each tensor by its own amax before the cast",
          "[fp8][nn]") {
  std::mt19937 random(23);
  mpx::nn::Linear<Current> layer(24, 16);
  layer.initialize(4, 0);
  const auto x = random_bf16(Shape{8, 24}, 30.0f, random);
  const float amax_x = largest_magnitude(x), amax_w = largest_magnitude(layer.weight().master());
  const Tensor<Eigen::bfloat16> y = layer.forward(x).clone();
  CHECK(layer.fp8_scales().scales()[0] == mpx::current_scale(amax_x, 448.0f, false, 0.0f));
  CHECK(layer.fp8_scales().scales()[1] == mpx::current_scale(amax_w, 448.0f, false, 0.0f));
  CHECK(same_bits(y, expected_forward(x, layer.weight().master(), layer.bias()->compute(), 448.0f / amax_x,
                                      448.0f / amax_w)));
}

TEST_CASE("FP8 MLPs train with delayed and current scaling; their scale state checkpoints bit for bit",
          "[fp8][train]") {
  // Four Gaussian blobs in 16 dimensions; 16 -> 64 (ReLU) -> 4, both Linear layers in FP8.
  constexpr std::int64_t features = 16, classes = 4, batch = 128;
  std::mt19937 random(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<std::int32_t> label(0, classes - 1);
  std::vector<float> centres(static_cast<std::size_t>(classes * features));
  for (float& c : centres) c = normal(random);
  Tensor<float> x(Shape{batch, features});
  Tensor<std::int32_t> y(Shape{batch});
  for (std::int64_t row = 0; row < batch; ++row) {
    y[row] = label(random);
    for (std::int64_t f = 0; f < features; ++f)
      x[row * features + f] =
          centres[static_cast<std::size_t>(y[row] * features + f)] + 2.5f * normal(random);
  }
  const auto train = [&]<class P>(P) {
    // [fp8-mlp]
    // P is mpx::fp8_hybrid<mpx::DelayedScaling<4>>, mpx::fp8_hybrid<mpx::CurrentScaling<>> or bf16_mixed
    mpx::nn::Sequential model{mpx::nn::Linear<P, mpx::nn::Activation::ReLU>(features, 64),
                              mpx::nn::Linear<P>(64, classes)};
    model.initialize(9);
    mpx::nn::SoftmaxCrossEntropy<P> loss;
    mpx::optim::AdamW optimizer(model, {.lr = 0.01f});
    STATIC_REQUIRE(std::is_same_v<mpx::model_default_scaler_t<decltype(model)>, mpx::NoLossScaling>);
    mpx::Trainer trainer(model, loss, optimizer);  // no loss scaling: each gradient has its scale
    std::vector<double> losses;
    for (int step = 0; step < 60; ++step) losses.push_back(trainer.step(x, y).loss);
    // [fp8-mlp]
    return losses;
  };
  // The mean loss over the run follows the whole curve (the last losses are small and noisy).
  const auto mean = [](const std::vector<double>& v) {
    return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  };
  const std::vector<double> bf16 = train(mpx::bf16_mixed{});
  for (const auto& [name, losses] :
       {std::pair{"delayed", train(Delayed{})}, std::pair{"current", train(Current{})},
        std::pair{"delayed, fp32 sums",
                  train(mpx::fp8_hybrid<mpx::DelayedScaling<4>, mpx::Fp32GemmAccumulation>{})}}) {
    INFO(name << ": first loss " << losses.front() << ", last " << losses.back() << ", mean " << mean(losses)
              << "; bf16 mean " << mean(bf16));
    CHECK(std::isfinite(losses.back()));
    CHECK(losses.back() < 0.05 * losses.front());
    CHECK(std::fabs(mean(losses) - mean(bf16)) < 0.03 * mean(bf16));
  }

  // The scales and histories are the layers' buffers: a fresh model loading the file has the same
  // state, and its next forward the same bits.
  mpx::nn::Sequential model{mpx::nn::Linear<Delayed, mpx::nn::Activation::ReLU>(features, 64),
                            mpx::nn::Linear<Delayed>(64, classes)};
  model.initialize(9);
  mpx::nn::SoftmaxCrossEntropy<Delayed> loss;
  mpx::optim::AdamW optimizer(model, {.lr = 0.01f});
  mpx::Trainer trainer(model, loss, optimizer);
  for (int step = 0; step < 6; ++step) (void)trainer.step(x, y);
  // The weights' FP8 codes, made in the first forward and kept, are counted with the weights, not as
  // activations: fp32 masters (4 bytes per parameter), a byte per weight, and the biases' bf16 copies.
  const std::int64_t weight_count = features * 64 + 64 * classes, bias_count = 64 + classes;
  CHECK(trainer.first_step_memory().weights ==
        4 * (weight_count + bias_count) + weight_count + 2 * bias_count);
  CHECK(model.layer<0>().weight_copy_bytes() == features * 64);
  const mpx::test::TempDir dir("mpx_fp8_linear");
  mpx::io::save_weights(model, dir / "fp8.safetensors");
  mpx::nn::Sequential restored{mpx::nn::Linear<Delayed, mpx::nn::Activation::ReLU>(features, 64),
                               mpx::nn::Linear<Delayed>(64, classes)};
  mpx::io::load_weights(restored, dir / "fp8.safetensors");
  std::vector<float> saved_state, loaded_state;
  mpx::nn::for_each_buffer(model, [&](std::string_view, auto& t) {
    for (const float v : t.values()) saved_state.push_back(v);
  });
  mpx::nn::for_each_buffer(restored, [&](std::string_view, auto& t) {
    for (const float v : t.values()) loaded_state.push_back(v);
  });
  REQUIRE(saved_state.size() == 2 * (3 + 3 + 4 * 3));
  CHECK(std::memcmp(saved_state.data(), loaded_state.data(), saved_state.size() * sizeof(float)) == 0);
  const Tensor<Eigen::bfloat16> inputs = mpx::convert<mpx::BFloat16>(x);
  const Tensor<Eigen::bfloat16> a = model.forward(inputs).clone();
  CHECK(same_bits(a, restored.forward(inputs)));

  // Weights move across precisions: the FP8 file into a bf16 model (its scaling state ignored), and a
  // bf16 model's file into a fresh FP8 model (its scales start at 1).
  mpx::nn::Sequential bf16_model{mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>(features, 64),
                                 mpx::nn::Linear<mpx::bf16_mixed>(64, classes)};
  mpx::io::load_weights(bf16_model, dir / "fp8.safetensors");
  CHECK(std::memcmp(bf16_model.layer<1>().weight().master().data(), model.layer<1>().weight().master().data(),
                    model.layer<1>().weight().master().size_bytes()) == 0);
  mpx::io::save_weights(bf16_model, dir / "bf16.safetensors");
  mpx::nn::Sequential fresh{mpx::nn::Linear<Delayed, mpx::nn::Activation::ReLU>(features, 64),
                            mpx::nn::Linear<Delayed>(64, classes)};
  mpx::io::load_weights(fresh, dir / "bf16.safetensors");
  CHECK(fresh.layer<1>().fp8_scales().scales()[0] == 1.0f);
  CHECK(std::memcmp(fresh.layer<1>().weight().master().data(), model.layer<1>().weight().master().data(),
                    model.layer<1>().weight().master().size_bytes()) == 0);
}

}  // namespace MPX_UNITY_ID
}  // namespace
