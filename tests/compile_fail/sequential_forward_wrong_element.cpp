// expect: Sequential::forward: this model takes fp32 input, Tensor<float>, and this
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: an fp16 tensor given to an fp32 model. The message names the type the model takes and the
// conversion to write; the instantiation note above it names the type received.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/tensor/convert.hpp>

using Model =
    mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32, mpx::nn::Activation::ReLU>, mpx::nn::Linear<mpx::fp32>>;

void evaluate(Model& model, const mpx::Tensor<Eigen::half>& batch) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const mpx::Tensor<float> widened = mpx::convert<mpx::Float>(batch);
  model.forward(widened);
#else
  model.forward(batch);
#endif
}

int main() {
  return 0;
}
