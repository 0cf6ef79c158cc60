// expect: forward\(temporary\): the model keeps a pointer to its input for backward
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a temporary as a model's input. The first layer saves a pointer to its input for
// backward, so the tensor would be gone by then; the message says to keep it in a named variable.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>

using Model =
    mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>, mpx::nn::Linear<mpx::fp32>>;

mpx::Tensor<float> next_batch() {
  return mpx::Tensor<float>(mpx::Shape{8, 4});
}

void evaluate(Model& model) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const mpx::Tensor<float> batch = next_batch();
  model.forward(batch);
#else
  model.forward(next_batch());
#endif
}

int main() {
  return 0;
}
