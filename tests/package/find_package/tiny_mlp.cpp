// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// A user's first mpx program: a small MLP with a bf16 body and an fp32 classifier learns three
// classes of synthetic points with AdamW. Exits 1 unless the loss has fallen to a third.
#include <cstdint>
#include <cstdio>
#include <random>

#include <mpx/mpx.hpp>

int main() {
  using P = mpx::bf16_mixed;     // bf16 compute and activations, fp32 master weights; or mpx::fp32, ...
  using L = mpx::nn::layers<P>;  // layers in P on the CPU; mpx::nn::layers<P, mpx::Cuda> on a GPU
  using Head = mpx::nn::layers<mpx::fp32>;  // the classifier is kept in fp32
  // Two hidden layers with ReLU fused into their matmuls, then the classifier.
  mpx::nn::Sequential model{L::linear(8, 32, mpx::nn::relu), L::linear(32, 32, mpx::nn::relu),
                            Head::linear(32, 3)};
  model.initialize(/*seed=*/1);
  auto loss = Head::softmax_cross_entropy();
  mpx::optim::AdamW optimizer(model, {.lr = 1e-2});
  mpx::Trainer trainer(model, loss, optimizer);

  // 128 points; the class is given by the signs of the first two features.
  constexpr int batch = 128, features = 8;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  mpx::Tensor<float> x(mpx::Shape{batch, features});
  mpx::Tensor<std::int32_t> y(mpx::Shape{batch});  // class labels
  for (int i = 0; i < batch; ++i) {
    for (int j = 0; j < features; ++j) x[i * features + j] = normal(rng);
    y[i] = x[i * features] > 0 ? 0 : (x[i * features + 1] > 0 ? 1 : 2);
  }

  double first = 0, last = 0;
  for (int step = 1; step <= 60; ++step) {
    const mpx::StepResult r = trainer.step(x, y);
    if (step == 1) first = r.loss;
    last = r.loss;
    if (step % 20 == 0) std::printf("step %2d  loss %.4f\n", step, r.loss);
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  return last < first / 3 ? 0 : 1;
}
