// expect: forward\(temporary\): the model keeps a pointer to its input for backward
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a temporary as a layer's input, outside a model. The layer saves a pointer to its input
// for backward, so the tensor would be gone by then.
#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/linear.hpp>

mpx::Tensor<float> next_batch() {
  return mpx::Tensor<float>(mpx::Shape{8, 4});
}

void evaluate(mpx::nn::Linear<mpx::fp32>& layer) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  const mpx::Tensor<float> batch = next_batch();
  layer.forward(batch);
#else
  layer.forward(next_batch());
#endif
}

int main() {
  return 0;
}
