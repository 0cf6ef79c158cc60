// expect: static assertion failed: mpx: the scaler is mpx::NoLossScaling, which has no options
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: loss-scaler options given to a bf16 model's trainer, whose default scaler (NoLossScaling)
// has none. The message names the fix: say which scaler the options are for.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/loss.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/optim/sgd.hpp>
#include <mpx/policy/loss_scaling.hpp>
#include <mpx/train/trainer.hpp>

using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>,
                                  mpx::nn::Linear<mpx::fp32>>;
using Loss = mpx::nn::SoftmaxCrossEntropy<mpx::fp32>;
using Optimizer = mpx::optim::SGD<Model>;

void train(Model& model, Loss& loss, Optimizer& optimizer) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  mpx::Trainer<Model, Loss, Optimizer, mpx::DynamicLossScaling> trainer(model, loss, optimizer,
                                                                        {.scaler = {.init_scale = 1024}});
#else
  mpx::Trainer trainer(model, loss, optimizer, {.scaler = {.init_scale = 1024}});
#endif
  (void)trainer;
}

int main() {
  return 0;
}
