// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// The mixed-precision training step on a small synthetic problem: change `P` to switch the whole
// model between fp32, tf32, fp16 and bf16; the classifier stays in fp32 either way.
#include <cstdint>
#include <cstdio>
#include <random>

#include <mpx/mpx.hpp>

using P = mpx::fp16_mixed;  // or mpx::fp32, mpx::tf32, mpx::bf16_mixed

int main() {
  using L = mpx::nn::layers<P>;             // the body: precision P, on the CPU (the default device)
  using Head = mpx::nn::layers<mpx::fp32>;  // the classifier stays in fp32
  // Sequential inserts the cast between the P body and the fp32 head.
  mpx::nn::Sequential model{L::linear(16, 64, mpx::nn::gelu), L::layer_norm(64),
                            L::linear(64, 64, mpx::nn::relu), Head::linear(64, 3)};
  model.initialize(/*seed=*/1);
  auto loss = Head::softmax_cross_entropy({.label_smoothing = 0.05f});
  mpx::optim::AdamW optimizer(model, {.lr = 3e-3});
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 1.0});  // dynamic loss scaling for fp16

  // Three classes by the sign pattern of two features.
  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  mpx::Tensor<float> x(mpx::Shape{256, 16});
  mpx::Tensor<std::int32_t> y(mpx::Shape{256});  // class labels
  for (int step = 1; step <= 300; ++step) {
    for (int i = 0; i < 256; ++i) {
      for (int j = 0; j < 16; ++j) x[i * 16 + j] = normal(rng);
      y[i] = x[i * 16] > 0 ? 0 : (x[i * 16 + 1] > 0 ? 1 : 2);
    }
    const mpx::StepResult r = trainer.step(x, y);
    if (step % 50 == 0) {
      std::printf("step %3d  loss %.4f  grad norm %.3f  loss scale %g  %s\n", step, r.loss, r.grad_norm,
                  double(r.loss_scale), r.stepped ? "stepped" : "skipped (overflow)");
    }
  }
  const auto& s = trainer.scaler().state();
  std::printf("%s: %lld steps taken, %lld skipped\n", P::name.data(), static_cast<long long>(s.steps_taken),
              static_cast<long long>(s.steps_skipped));
  return 0;
}
