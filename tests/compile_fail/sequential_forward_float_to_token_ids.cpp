// expect: Sequential::forward: this model starts with an Embedding and takes token ids
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: fp32 values given to a model whose first layer is an Embedding. fp32 input is rounded for
// models that take another floating type, never turned into token ids; the message says what the
// model takes.
#include <cstdint>

#include <mpx/backend/cpu/backend.hpp>
#include <mpx/nn/embedding.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>

using Model = mpx::nn::Sequential<mpx::nn::Embedding<mpx::fp32>, mpx::nn::Linear<mpx::fp32>>;

void evaluate(Model& model, const mpx::Tensor<float>& batch, const mpx::Tensor<std::int32_t>& ids) {
#ifdef MPX_COMPILE_FAIL_CONTROL
  (void)batch;
  model.forward(ids);
#else
  (void)ids;
  model.forward(batch);
#endif
}

int main() {
  return 0;
}
