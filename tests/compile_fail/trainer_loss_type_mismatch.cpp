// expect: static assertion failed: mpx::Trainer: the loss must take the model's output type
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a bf16 model with an fp32 classifier, and the loss declared with the model's nominal
// precision (bf16) instead of the classifier's (fp32): the loss would read fp32 logits as bf16.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/loss.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/optim/sgd.hpp>
#include <mpx/train/trainer.hpp>

using P = mpx::bf16_mixed;
using Model = mpx::nn::Sequential<mpx::nn::Linear<P, mpx::nn::Activation::ReLU>, mpx::nn::Linear<mpx::fp32>>;
#ifdef MPX_COMPILE_FAIL_CONTROL
using Loss = mpx::nn::SoftmaxCrossEntropy<mpx::fp32>;
#else
using Loss = mpx::nn::SoftmaxCrossEntropy<P>;
#endif
using Optimizer = mpx::optim::SGD<Model>;

void train(Model& model, Loss& loss, Optimizer& optimizer) {
  mpx::Trainer trainer(model, loss, optimizer);  // the scaler defaults to the model's (none for bf16)
  (void)trainer;
}

int main() {
  return 0;
}
