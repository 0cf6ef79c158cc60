// expect: static assertion failed: mpx::Trainer: this model has fp16 layers but no loss scaling
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: training a model with an fp16 layer without loss scaling and without the explicit opt-in.
// The model's nominal precision (its first layer's) is fp32: the check must see the later fp16 layer.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/loss.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/optim/sgd.hpp>
#include <mpx/policy/loss_scaling.hpp>
#include <mpx/train/trainer.hpp>

using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>,
                                  mpx::nn::Linear<mpx::fp16_mixed, mpx::nn::Activation::ReLU>,
                                  mpx::nn::Linear<mpx::fp32>>;
using Loss = mpx::nn::SoftmaxCrossEntropy<mpx::fp32>;
using Optimizer = mpx::optim::SGD<Model>;

#ifdef MPX_COMPILE_FAIL_CONTROL
using Scaling = mpx::AllowFp16Underflow<mpx::NoLossScaling>;
#else
using Scaling = mpx::NoLossScaling;
#endif

void train(Model& model, Loss& loss, Optimizer& optimizer) {
  mpx::Trainer<Model, Loss, Optimizer, Scaling> trainer(model, loss, optimizer);
  (void)trainer;
}

int main() {
  return 0;
}
