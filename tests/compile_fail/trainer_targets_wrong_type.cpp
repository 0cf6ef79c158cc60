// expect: targets must be the loss's target type
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: labels in another type than the loss takes (a float tensor or a std::vector, as code
// written before labels became Tensor<std::int32_t> passes): one static_assert says what to pass,
// instead of a page of overload mismatches.
#include <cstdint>

#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/loss.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/optim/sgd.hpp>
#include <mpx/train/trainer.hpp>

int main() {
  mpx::nn::Sequential model{mpx::nn::Linear<mpx::fp32>(4, 3)};
  mpx::nn::SoftmaxCrossEntropy<mpx::fp32> loss;
  mpx::optim::SGD optimizer(model, {.lr = 0.1});
  mpx::Trainer trainer(model, loss, optimizer);
  mpx::Tensor<float> x(mpx::Shape{2, 4});
#ifdef MPX_COMPILE_FAIL_CONTROL
  mpx::Tensor<std::int32_t> labels(mpx::Shape{2});
#else
  mpx::Tensor<float> labels(mpx::Shape{2});
#endif
  return trainer.step(x, labels).stepped ? 0 : 1;
}
