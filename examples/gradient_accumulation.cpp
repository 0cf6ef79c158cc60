// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Gradient accumulation: a batch of 128 trained as 4 micro-batches of 32, in fp32 inputs for a bf16
// model, twice: split by the trainer (MicroBatches), and as micro-batches of your own (row views of
// the batch, no copy). Both are the same step, bit for bit.
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include <mpx/mpx.hpp>

using P = mpx::bf16_mixed;

auto make_model() {
  using L = mpx::nn::layers<P>;
  mpx::nn::Sequential model{L::linear(16, 64, mpx::nn::relu), L::linear(64, 3)};
  model.initialize(/*seed=*/1);
  return model;
}

int main() {
  auto model = make_model();
  auto mine = make_model();
  mpx::nn::SoftmaxCrossEntropy<P> loss;
  mpx::optim::AdamW optimizer(model);  // the defaults: lr 1e-3, weight decay 0.01
  mpx::optim::AdamW my_optimizer(mine);
  mpx::Trainer trainer(model, loss, optimizer, {.max_grad_norm = 1.0});
  mpx::Trainer my_trainer(mine, loss, my_optimizer, {.max_grad_norm = 1.0});

  std::mt19937 rng(2);
  std::normal_distribution<float> normal;
  mpx::Tensor<float> x(mpx::Shape{128, 16});     // fp32: the trainer rounds it into bf16
  mpx::Tensor<std::int32_t> y(mpx::Shape{128});  // class labels
  bool same = true;
  for (int step = 1; step <= 20; ++step) {
    for (std::int64_t i = 0; i < 128; ++i) {
      for (std::int64_t j = 0; j < 16; ++j) x[i * 16 + j] = normal(rng);
      y[i] = x[i * 16] > 0 ? 0 : (x[i * 16 + 1] > 0 ? 1 : 2);
    }
    // [accumulate]
    // Split by the trainer: 4 equal row ranges of x and y (the count must divide the rows).
    const mpx::StepResult split = trainer.step(x, y, mpx::MicroBatches{4});

    // Micro-batches of your own: row views (no copy) that outlive the step. A Batch refers to its
    // tensors, so the vectors reserve first (growing would move the views it points at).
    using Batch = decltype(my_trainer)::Batch;
    std::vector<mpx::Tensor<float>> inputs;
    std::vector<mpx::Tensor<std::int32_t>> labels;
    std::vector<Batch> batches;
    inputs.reserve(4);
    labels.reserve(4);
    for (std::int64_t m = 0; m < 4; ++m) {
      inputs.push_back(x.rows(32 * m, 32));
      labels.push_back(y.rows(32 * m, 32));
      batches.emplace_back(inputs.back(), labels.back());
    }
    const mpx::StepResult own = my_trainer.step(batches);  // a span of Batch: any contiguous range
    // [accumulate]
    same = same && split.loss == own.loss && split.grad_norm == own.grad_norm;
    if (step % 5 == 0)
      std::printf("step %2d  loss %.4f  grad norm %.3f%s\n", step, split.loss, split.grad_norm,
                  split.clipped ? "  (clipped)" : "");
  }
  std::printf("MicroBatches{4} and micro-batches of your own: %s\n", same ? "the same steps" : "DIFFER");
  return same ? 0 : 1;
}
