// expect: Sequential::forward: this model takes input in its first layer.s compute format
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: an fp64 tensor given to a bf16 model. fp32 input would be rounded by forward; fp64 is not.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>
#include <mpx/tensor/convert.hpp>

using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::bf16_mixed, mpx::nn::Activation::ReLU>,
                                  mpx::nn::Linear<mpx::fp32>>;

void evaluate(Model& model, const mpx::Tensor<double>& batch) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  model.forward(mpx::convert<mpx::Float>(batch));  // fp32, even a temporary: forward rounds it to bf16
#else
  model.forward(batch);
#endif
}

int main() {
  return 0;
}
