// expect: static assertion failed: mpx::Trainer: this model's FP8 precision scales every GEMM operand
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: dynamic loss scaling on a model whose FP8 recipe already scales each output gradient by its
// own amax (and whose activations are bf16).
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/loss.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/optim/sgd.hpp>
#include <mpx/policy/fp8_precision.hpp>
#include <mpx/policy/loss_scaling.hpp>
#include <mpx/train/trainer.hpp>

using P = mpx::fp8_hybrid<mpx::DelayedScaling<>>;
using Model = mpx::nn::Sequential<mpx::nn::Linear<P, mpx::nn::Activation::ReLU>, mpx::nn::Linear<P>>;
using Loss = mpx::nn::SoftmaxCrossEntropy<P>;
using Optimizer = mpx::optim::SGD<Model>;

#ifdef MPX_COMPILE_FAIL_CONTROL
using Scaling = mpx::NoLossScaling;
#else
using Scaling = mpx::DynamicLossScaling;
#endif

void train(Model& model, Loss& loss, Optimizer& optimizer) {
  mpx::Trainer<Model, Loss, Optimizer, Scaling> trainer(model, loss, optimizer);
  (void)trainer;
}

int main() {
  return 0;
}
