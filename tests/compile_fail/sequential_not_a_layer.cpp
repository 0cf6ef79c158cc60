// expect: static assertion failed: mpx::nn::Sequential: the layer at this index.*is not a layer
// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Misuse: a Sequential element with a forward but no backward is not a layer.
#include <string_view>

#include <mpx/nn/activation.hpp>
#include <mpx/nn/linear.hpp>
#include <mpx/nn/sequential.hpp>

// Looks like a layer, but cannot be trained through: it has no backward(dy, input_grad).
struct ForwardOnly {
  using input_type = float;
  using output_type = float;
  using device_type = mpx::Host;
  static constexpr std::string_view kind = "ForwardOnly";
  const mpx::Tensor<float>& forward(const mpx::Tensor<float>& x) { return x; }
};

#ifdef MPX_COMPILE_FAIL_CONTROL
using Middle = mpx::nn::ReLU<mpx::fp32>;
#else
using Middle = ForwardOnly;
#endif

using Model = mpx::nn::Sequential<mpx::nn::Linear<mpx::fp32>, Middle, mpx::nn::Linear<mpx::fp32>>;
static_assert(sizeof(Model) > 0);  // instantiates the model, and with it its checks

int main() {
  return 0;
}
